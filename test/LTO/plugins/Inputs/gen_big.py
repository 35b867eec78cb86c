"""Writes big.c: a module of about 4 MB of bitcode (a table of numbers that
do not compress), for frames much larger than a socket's buffer."""
import sys

N = 1 << 20
x = 12345
vals = []
for _ in range(N):
    x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    vals.append(x)
with open(sys.argv[1], "w") as f:
    f.write("static const unsigned table[%d] = {\n" % N)
    for i in range(0, N, 16):
        f.write(",".join("%uu" % v for v in vals[i:i + 16]) + ",\n")
    f.write("};\n")
    f.write("unsigned big_get(unsigned i) { return table[i %% %d]; }\n" % N)
    # The sum the program checks, so a frame cut or shifted anywhere in the
    # table shows as a wrong exit code as well as a different output.
    f.write("unsigned big_sum(void) { unsigned s = 0; for (unsigned i = 0; "
            "i < %d; ++i) s += table[i]; return s; }\n" % N)
    f.write("unsigned big_expected(void) { return %uu; }\n" % (sum(vals) & 0xFFFFFFFF))
