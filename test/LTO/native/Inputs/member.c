static int scale = 11;
int from_archive(int x) { return x * scale + 1; }
