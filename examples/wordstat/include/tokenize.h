#ifndef WORDSTAT_TOKENIZE_H
#define WORDSTAT_TOKENIZE_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Calls emit(word, len, ctx) for every word of text, lower-cased in place.
   A word is a run of letters, digits, '_' or an inner apostrophe. Returns the
   number of words. */
size_t ws_tokenize(char *text, size_t len,
                   void (*emit)(const char *word, size_t len, void *ctx),
                   void *ctx);
#ifdef __cplusplus
}
#endif
#endif
