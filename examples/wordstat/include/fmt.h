/* Output formatting, built into the thin archive libfmt.a. */
#ifndef WORDSTAT_FMT_H
#define WORDSTAT_FMT_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Writes n with thousands separators ("1,234,567") into buf. */
const char *ws_group_digits(unsigned long long n, char *buf, size_t size);
/* Prints one row of the frequency table with a bar scaled to max. */
void ws_print_row(int rank, const char *word, unsigned long count,
                  unsigned long max);
#ifdef __cplusplus
}
#endif
#endif
