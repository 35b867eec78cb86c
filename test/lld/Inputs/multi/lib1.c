int scale(int x) { return x * 3; }
