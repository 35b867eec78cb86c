/* Hash functions, built into the regular archive libhash.a. */
#ifndef WORDSTAT_HASH_H
#define WORDSTAT_HASH_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
uint64_t ws_fnv1a(const char *data, size_t len);
uint32_t ws_crc32(const char *data, size_t len);
#ifdef __cplusplus
}
#endif
#endif
