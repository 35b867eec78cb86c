/* A small program for the farm tests: four modules, two of them in an
   archive, with small functions that ThinLTO imports across modules. */
#include <stdio.h>

unsigned checksum(const char *text);
int triangle(int n);
int lookup(int key);
void shout(char *text);

int main(void) {
  char word[] = "distributed";
  printf("triangle(12) = %d\n", triangle(12));
  printf("lookup(7) = %d\n", lookup(7));
  printf("checksum = %u\n", checksum(word));
  shout(word);
  printf("shout: %s\n", word);
  return 0;
}
