// Plain C string work.
#include "api.h"
#include <ctype.h>

unsigned count_words(const char *text) {
  unsigned words = 0;
  int in_word = 0;
  for (; *text; ++text) {
    if (isspace((unsigned char)*text))
      in_word = 0;
    else if (!in_word) {
      in_word = 1;
      ++words;
    }
  }
  return words;
}

unsigned checksum(const char *text) {
  unsigned sum = 2166136261u;
  for (; *text; ++text)
    sum = (sum ^ (unsigned char)*text) * 16777619u;
  return sum % 100000;
}
