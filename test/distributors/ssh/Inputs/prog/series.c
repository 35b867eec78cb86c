int lookup(int key);

int triangle(int n) {
  int total = 0;
  for (int i = 1; i <= n; ++i)
    total += i;
  return total + lookup(0);
}
