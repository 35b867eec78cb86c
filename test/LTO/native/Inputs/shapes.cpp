// Virtual and indirect calls across modules, for whole-program
// devirtualization and CFI (split LTO units: vtables and jump tables live in
// the regular LTO half).
#include "shapes.h"
#include <cstdio>
int main(int argc, char **) {
  Shape *s[3] = {makeSquare(argc + 2), makeRect(argc, 5), new Circle(argc)};
  int total = 0;
  for (Shape *p : s) {
    total += p->area();
    delete p;
  }
  int (*scale)(int) = argc > 1 ? twice : thrice;
  std::printf("%d\n", scale(total));
  return 0;
}
