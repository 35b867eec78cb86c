int from_thin(int x) { return x * 13 + 2; }
