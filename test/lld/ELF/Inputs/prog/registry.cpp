// C++ with a global constructor and virtual dispatch.
#include "api.h"
#include <memory>
#include <string>
#include <vector>

namespace {
struct Entry {
  virtual ~Entry() = default;
  virtual int key() const = 0;
  virtual const char *name() const = 0;
};
struct Named : Entry {
  int k;
  std::string n;
  Named(int k, std::string n) : k(k), n(std::move(n)) {}
  int key() const override { return k; }
  const char *name() const override { return n.c_str(); }
};
struct Registry {
  std::vector<std::unique_ptr<Entry>> entries;
  Registry() {
    const char *names[] = {"alpha", "beta", "gamma", "delta"};
    for (int i = 0; i < 4; ++i)
      entries.push_back(std::make_unique<Named>(i + 1, names[i]));
  }
};
Registry TheRegistry; // constructed before main
} // namespace

const char *registry_lookup(int key) {
  for (const auto &e : TheRegistry.entries)
    if (e->key() == key)
      return e->name();
  return "missing";
}

unsigned registry_size(void) { return TheRegistry.entries.size(); }
