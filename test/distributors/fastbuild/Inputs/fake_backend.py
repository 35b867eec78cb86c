"""A stand-in for dtlto-backend in the FASTBuild golden test: appends
"call" and each of its arguments, one a line, to LOG; with -o OUT it
writes OUT (a few bytes, not an object).

  fake_backend.py LOG ARGS...
"""

import sys


def main():
    log, args = sys.argv[1], sys.argv[2:]
    with open(log, "a", encoding="utf-8") as f:
        f.write("call\n" + "".join(f"  {a}\n" for a in args))
    if "-o" in args[:-1]:
        with open(args[args.index("-o") + 1], "w") as f:
            f.write("fake object\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
