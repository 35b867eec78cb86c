/* Splitting text into words. */
#include "tokenize.h"
#include <ctype.h>

static int is_word_char(unsigned char c) { return isalnum(c) || c == '_'; }

size_t ws_tokenize(char *text, size_t len,
                   void (*emit)(const char *word, size_t len, void *ctx),
                   void *ctx) {
  size_t words = 0, i = 0;
  while (i < len) {
    while (i < len && !is_word_char((unsigned char)text[i]))
      i++;
    size_t start = i;
    while (i < len && (is_word_char((unsigned char)text[i]) ||
                       (text[i] == '\'' && i + 1 < len &&
                        is_word_char((unsigned char)text[i + 1]) &&
                        i > start))) {
      text[i] = (char)tolower((unsigned char)text[i]);
      i++;
    }
    if (i > start) {
      emit(text + start, i - start, ctx);
      words++;
    }
  }
  return words;
}
