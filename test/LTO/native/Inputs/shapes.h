struct Shape {
  virtual int area() const = 0;
  virtual ~Shape() {}
};
Shape *makeSquare(int side);
Shape *makeRect(int w, int h);
