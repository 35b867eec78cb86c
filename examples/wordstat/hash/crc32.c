/* CRC-32 (IEEE 802.3), table-driven; the table is built on first use. */
#include "hash.h"

static uint32_t table[256];
static int table_ready;

static void build_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  table_ready = 1;
}

uint32_t ws_crc32(const char *data, size_t len) {
  if (!table_ready)
    build_table();
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < len; i++)
    c = table[(c ^ (unsigned char)data[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}
