// C++ with the standard library: containers, algorithms, exceptions.
#include "api.h"
#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

static std::vector<int> sorted(const int *values, unsigned n) {
  if (n == 0)
    throw std::invalid_argument("no values");
  std::vector<int> v(values, values + n);
  std::sort(v.begin(), v.end());
  return v;
}

int stats_median(const int *values, unsigned n) {
  try {
    std::vector<int> v = sorted(values, n);
    return v[v.size() / 2];
  } catch (const std::invalid_argument &) {
    return -1;
  }
}

const char *stats_mode_name(const int *values, unsigned n) {
  std::map<int, unsigned> counts;
  for (unsigned i = 0; i < n; ++i)
    ++counts[values[i]];
  auto best = std::max_element(
      counts.begin(), counts.end(),
      [](const auto &a, const auto &b) { return a.second < b.second; });
  static const char *const names[] = {"zero", "one", "two", "three", "four",
                                      "five", "six", "seven", "eight", "nine"};
  return best == counts.end() ? "none" : names[best->first % 10];
}
