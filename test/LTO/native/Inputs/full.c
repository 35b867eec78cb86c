// Compiled with -flto=full: the link gets a regular LTO module, so
// --lto-partitions moves the ThinLTO task numbers.
int full_helper(int x) { return x ^ 0x55; }
