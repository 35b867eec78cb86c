/* The program of linker_matrix.py: compute() calls into two archive members
   (one inlined across modules, one not, and a global read through its
   address), and one member is never pulled in. */
int scale(int);
int offset(int);
extern int bias;
static int *volatile where = &bias;

#ifdef __wasm__
__attribute__((export_name("compute")))
#endif
int compute(void) {
  int total = 0;
  for (int i = 1; i <= 10; i++)
    total += scale(i) + offset(i);
  return total + *where;
}
