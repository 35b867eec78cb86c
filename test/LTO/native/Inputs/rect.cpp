#include "shapes.h"
struct Rect : Shape {
  int w, h;
  Rect(int w, int h) : w(w), h(h) {}
  int area() const override { return w * h; }
};
Shape *makeRect(int w, int h) { return new Rect(w, h); }
int thrice(int x) { return 3 * x; }
int Circle::area() const { return 3 * r * r; }
