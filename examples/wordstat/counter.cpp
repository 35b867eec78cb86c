// Word counting.
#include "counter.h"
#include "hash.h"
#include <algorithm>

void WordCounter::add(const char *word, size_t len) {
  ++counts[std::string(word, len)];
  ++totalWords;
  // Order-dependent mix, so that a miscompiled tokenizer shows up.
  digest = (digest * 31) ^ ws_fnv1a(word, len) ^ ws_crc32(word, len);
}

std::vector<std::pair<std::string, unsigned long>>
WordCounter::top(size_t n) const {
  std::vector<std::pair<std::string, unsigned long>> v(counts.begin(),
                                                       counts.end());
  auto byCountThenWord = [](const auto &a, const auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  n = std::min(n, v.size());
  std::partial_sort(v.begin(), v.begin() + n, v.end(), byCountThenWord);
  v.resize(n);
  return v;
}
