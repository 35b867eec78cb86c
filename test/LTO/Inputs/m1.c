// A large module: one tiny accessor that hub.c imports, and filler
// functions too big to be imported, so that its bitcode is clearly larger
// than m2.c's.
#define FILL(n)                                                                \
  int m1_fill_##n(const int *p, int k) {                                       \
    int s = n;                                                                 \
    for (int i = 0; i < k; ++i)                                                \
      s = s * 31 + (p[i] ^ (s >> 3)) + n;                                      \
    return s;                                                                  \
  }
FILL(0) FILL(1) FILL(2) FILL(3) FILL(4) FILL(5) FILL(6) FILL(7)
FILL(8) FILL(9) FILL(10) FILL(11) FILL(12) FILL(13) FILL(14) FILL(15)

int m1_get(void) { return 1; }
