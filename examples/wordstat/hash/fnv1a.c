/* 64-bit FNV-1a. */
#include "hash.h"

uint64_t ws_fnv1a(const char *data, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)data[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
