/* Code the optimiser's pipeline settings change: adjacent stores the SLP
   vectorizer merges, and a loop the loop vectorizer widens. Linkers tune
   these differently (ld64.lld leaves the vectorizers off). */
struct quad { long a, b, c, d; };
struct quad q;
int table[64];

__attribute__((noinline)) void fill(struct quad *p, long x) {
  p->a = x; p->b = x + 1; p->c = x + 2; p->d = x + 3;
}

__attribute__((noinline)) void widen(int *t, int n, int x) {
  for (int i = 0; i < n; i++)
    t[i] = t[i] * 2 + x;
}

int scale(int x) {
  fill(&q, x);
  widen(table, 64, x);
  return (int)(q.a + q.b + q.c + q.d) - x - 6 + table[x & 63] - table[x & 63];
}
