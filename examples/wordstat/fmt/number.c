/* Human-friendly numbers. */
#include "fmt.h"
#include <stdio.h>
#include <string.h>

const char *ws_group_digits(unsigned long long n, char *buf, size_t size) {
  char digits[32];
  int len = snprintf(digits, sizeof digits, "%llu", n);
  size_t out = 0;
  for (int i = 0; i < len && out + 1 < size; i++) {
    if (i > 0 && (len - i) % 3 == 0 && out + 2 < size)
      buf[out++] = ',';
    buf[out++] = digits[i];
  }
  buf[out] = '\0';
  return buf;
}
