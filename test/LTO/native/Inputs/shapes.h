struct Shape {
  virtual int area() const = 0;
  virtual ~Shape() {}
};
// Circle's key function, and so its vtable, is in rect.cpp; shapes.cpp
// constructs one, so it refers to a vtable that only rect.cpp's regular LTO
// half defines (with CFI or whole-program vtables).
struct Circle : Shape {
  int r;
  Circle(int r) : r(r) {}
  int area() const override;
};
Shape *makeSquare(int side);
Shape *makeRect(int w, int h);
// Called through a function pointer: with -fsanitize=cfi each becomes a
// jump-table entry, and its own module's object defines it as <name>.cfi.
int twice(int);
int thrice(int);
