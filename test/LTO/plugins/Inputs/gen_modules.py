"""Writes N small modules k1.c ... kN.c and kmain.c, whose main calls each:
a link of N + 1 ThinLTO jobs. usage: gen_modules.py N"""
import sys

n = int(sys.argv[1])
for i in range(1, n + 1):
    with open(f"k{i}.c", "w") as f:
        f.write(f"int k{i}(int x) {{ return x * {i} + {i * i}; }}\n")
with open("kmain.c", "w") as f:
    f.write("".join(f"int k{i}(int);\n" for i in range(1, n + 1)))
    f.write("int main(int argc, char **argv) {\n  int s = argc;\n")
    f.write("".join(f"  s = k{i}(s);\n" for i in range(1, n + 1)))
    f.write("  return s & 0x7f;\n}\n")
