// A mid-sized module: smaller than m1.c, larger than hub.c on its own.
#define FILL(n)                                                                \
  int m2_fill_##n(const int *p, int k) {                                       \
    int s = n;                                                                 \
    for (int i = 0; i < k; ++i)                                                \
      s = s * 17 + (p[i] | (s >> 2)) - n;                                      \
    return s;                                                                  \
  }
FILL(0) FILL(1) FILL(2) FILL(3)

int m2_get(void) { return 2; }
