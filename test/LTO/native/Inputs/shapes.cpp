// Virtual calls across modules, for whole-program devirtualization and CFI
// (split LTO units: vtables live in the regular LTO half).
#include "shapes.h"
#include <cstdio>
int main(int argc, char **) {
  Shape *s[2] = {makeSquare(argc + 2), makeRect(argc, 5)};
  int total = 0;
  for (Shape *p : s) {
    total += p->area();
    delete p;
  }
  std::printf("%d\n", total);
  return 0;
}
