// wordstat: the most frequent words of some files, with a checksum of the
// whole word stream. The example program of dtlto: C and C++ translation
// units, a regular archive (libhash.a) and a thin archive (libfmt.a).
#include "counter.h"
#include "fmt.h"
#include "tokenize.h"
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

static void emitWord(const char *word, size_t len, void *ctx) {
  static_cast<WordCounter *>(ctx)->add(word, len);
}

static bool countFile(const char *path, WordCounter &counter) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "wordstat: cannot read %s\n", path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  ws_tokenize(text.data(), text.size(), emitWord, &counter);
  return true;
}

int main(int argc, char **argv) {
  size_t top = 10;
  int first = 1;
  if (argc > 2 && std::strcmp(argv[1], "-n") == 0) {
    top = std::strtoul(argv[2], nullptr, 10);
    first = 3;
  }
  if (first >= argc) {
    std::fprintf(stderr, "usage: wordstat [-n N] FILE...\n");
    return 2;
  }
  WordCounter counter;
  for (int i = first; i < argc; ++i)
    if (!countFile(argv[i], counter))
      return 1;

  auto rows = counter.top(top);
  unsigned long max = rows.empty() ? 0 : rows.front().second;
  int rank = 1;
  for (const auto &[word, count] : rows)
    ws_print_row(rank++, word.c_str(), count, max);
  char total[32], distinct[32];
  std::printf("%s words, %s distinct, checksum %016" PRIx64 "\n",
              ws_group_digits(counter.total(), total, sizeof total),
              ws_group_digits(counter.distinct(), distinct, sizeof distinct),
              counter.checksum());
  return 0;
}
