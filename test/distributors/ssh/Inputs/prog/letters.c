unsigned checksum(const char *text) {
  unsigned sum = 5381;
  while (*text)
    sum = sum * 33 + (unsigned char)*text++;
  return sum;
}

void shout(char *text) {
  for (; *text; ++text)
    if (*text >= 'a' && *text <= 'z')
      *text -= 'a' - 'A';
}
