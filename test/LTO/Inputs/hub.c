// The hub of a three-module program: small itself, it imports the tiny
// accessors of m1.c and m2.c, so its job reads all three modules.
int m1_get(void);
int m2_get(void);

int main(void) { return m1_get() + m2_get() == 3 ? 0 : 1; }
