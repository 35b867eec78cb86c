__attribute__((weak)) int hook(void) { return 3; }
int shared_counter = 5;
const int table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
int work(int n) {
  int s = 0;
  for (int i = 0; i < n * 1000; i++) {
    s += (i * 7) ^ (s >> 3);
    if (s & 64)
      s -= n;
  }
  shared_counter += s & 1;
  return s & 0xff;
}
