"""Compares the -mllvm options dtlto-backend knows with libLLVM.so's.

  llvm_options.py DTLTO_BACKEND LIBLLVM_SO

dtlto-backend is linked with LLVM's static libraries, and the link's -mllvm
options, which the linker parsed against libLLVM.so, are parsed again in
each worker: an option libLLVM.so has and dtlto-backend lacks would fail
every job of a link that uses it. Both lists come from LLVM's own hidden
help: `dtlto-backend --llvm-options`, and LLVMParseCommandLineOptions of
libLLVM.so's C API called through ctypes with --help-list-hidden.

Prints how many options both have; exits 1 naming each one dtlto-backend
lacks. Options only dtlto-backend has (its code-generation flags) are fine.
"""
import re
import subprocess
import sys

# "  --name=<value> - ...", "  -W - ..."; the lines of an option's values
# ("    =none - ...") start with '='.
OPTION = re.compile(r"^\s+--?([A-Za-z0-9_.][A-Za-z0-9_.-]*)")

LIST_LIBLLVM = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
argv = (ctypes.c_char_p * 2)(b"libLLVM", b"--help-list-hidden")
lib.LLVMParseCommandLineOptions(2, argv, b"")
"""


def names(text):
    return {m.group(1) for m in map(OPTION.match, text.splitlines()) if m}


def listing(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llvm_options.py: {cmd} exited {p.returncode}: {p.stderr}")
    found = names(p.stdout)
    if len(found) < 1000:  # LLVM has thousands; a few means a broken listing
        sys.exit(f"llvm_options.py: only {len(found)} options from {cmd}")
    return found


def main():
    backend, libllvm = sys.argv[1:3]
    ours = listing([backend, "--llvm-options"])
    theirs = listing([sys.executable, "-c", LIST_LIBLLVM, libllvm])
    missing = sorted(theirs - ours)
    if missing:
        print(f"dtlto-backend lacks {len(missing)} of libLLVM.so's "
              f"{len(theirs)} options: {' '.join(missing)}")
        return 1
    print(f"dtlto-backend has all {len(theirs)} options of libLLVM.so")
    return 0


if __name__ == "__main__":
    sys.exit(main())
