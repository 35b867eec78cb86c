/* The frequency table. */
#include "fmt.h"
#include <stdio.h>

void ws_print_row(int rank, const char *word, unsigned long count,
                  unsigned long max) {
  char num[32];
  int bar = max ? (int)((count * 30 + max - 1) / max) : 0;
  printf("%3d. %-16s %10s  ", rank, word, ws_group_digits(count, num, sizeof num));
  for (int i = 0; i < bar; i++)
    putchar('#');
  putchar('\n');
}
