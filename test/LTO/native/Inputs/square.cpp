#include "shapes.h"
struct Square : Shape {
  int side;
  Square(int s) : side(s) {}
  int area() const override { return side * side; }
};
Shape *makeSquare(int side) { return new Square(side); }
int twice(int x) { return 2 * x; }
