// Refers to a weak hook defined in another module, a global defined in
// another module, and functions from a regular and a thin archive.
__attribute__((weak)) int hook(void);
extern int shared_counter;
extern const int table[16];
int work(int);
int from_archive(int);
int from_thin(int);
int main(int argc, char **argv) {
  int r = work(argc) + from_archive(argc) + from_thin(argc) + table[argc & 15];
  if (hook)
    r += hook();
  return (r + shared_counter) & 0x7f;
}
