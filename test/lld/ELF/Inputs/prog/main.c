// The test program: C and C++ translation units, each with work the others
// call (and can import), printing results a test can check.
#include "api.h"
#include <stdio.h>

static const char Text[] = "the quick brown fox jumps over the lazy dog";

int main(void) {
  int values[] = {7, 3, 9, 3, 5, 3, 8};
  unsigned n = sizeof(values) / sizeof(values[0]);
  printf("words: %u\n", count_words(Text));
  printf("checksum: %u\n", checksum(Text));
  printf("median: %d\n", stats_median(values, n));
  printf("mode: %s\n", stats_mode_name(values, n));
  printf("registry: %u entries, 2 is %s\n", registry_size(), registry_lookup(2));
  return 0;
}
