// The C interface between the C and C++ translation units of the test
// program.
#ifdef __cplusplus
extern "C" {
#endif
unsigned count_words(const char *text);
unsigned checksum(const char *text);
int stats_median(const int *values, unsigned n);
const char *stats_mode_name(const int *values, unsigned n);
const char *registry_lookup(int key);
unsigned registry_size(void);
#ifdef __cplusplus
}
#endif
