int bias = 1000;
__attribute__((noinline)) int offset(int x) { return x + bias / 100; }
