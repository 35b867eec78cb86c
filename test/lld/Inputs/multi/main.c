#include <stdio.h>
int compute(void);
int main(void) {
  printf("compute=%d\n", compute());
  return 0;
}
