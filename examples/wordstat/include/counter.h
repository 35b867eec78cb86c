#ifndef WORDSTAT_COUNTER_H
#define WORDSTAT_COUNTER_H
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// Counts words; keyed by the word, with a checksum over all words seen so
// that two builds of the program can be compared by their output alone.
class WordCounter {
public:
  void add(const char *word, size_t len);
  std::vector<std::pair<std::string, unsigned long>> top(size_t n) const;
  size_t distinct() const { return counts.size(); }
  unsigned long total() const { return totalWords; }
  uint64_t checksum() const { return digest; }

private:
  std::unordered_map<std::string, unsigned long> counts;
  unsigned long totalWords = 0;
  uint64_t digest = 0;
};
#endif
