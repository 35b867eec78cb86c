"""The compiler named by fuzzed manifests (fuzz_manifests.py): it writes the
file after -o and nothing else.

  fuzz_cc.py ARGS...           one job: writes "object" to the path after -o
  fuzz_cc.py ARGS... --batch   a batch worker (dtlto-backend --batch's
                               protocol: a JSON array of job arguments per
                               stdin line, {"ok": ...} per reply line)

Each start is recorded in $FUZZ_CONTACT (a distributor that refuses a
manifest must start nothing), and it never writes outside $FUZZ_SANDBOX:
a path that would land elsewhere makes the job fail instead (a safety net;
the fuzzer only generates paths inside the sandbox or below a directory
that does not exist).
"""

import json
import os
import sys


def record(what: str) -> None:
    log = os.environ.get("FUZZ_CONTACT")
    if log:
        with open(log, "a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(f"fuzz_cc.py {what}\n")


def inside_sandbox(path: str) -> bool:
    box = os.environ.get("FUZZ_SANDBOX")
    if not box:
        return False
    real = os.path.realpath(os.path.dirname(os.path.abspath(path)) or ".")
    return real == box or real.startswith(box + os.sep)


def compile_job(args: list[str]) -> str:
    """'' on success, else why not."""
    if "-o" not in args[:-1]:
        return "no -o OUTPUT"
    out = args[args.index("-o") + 1]
    if not inside_sandbox(out):
        return f"not writing {out!r}: outside the sandbox"
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write("object\n")
    except (OSError, ValueError) as e:
        return f"cannot write {out!r}: {e}"
    return ""


def main() -> int:
    args = sys.argv[1:]
    if args[-1:] == ["--batch"]:
        record("--batch")
        for line in sys.stdin:
            try:
                job = json.loads(line)
                problem = compile_job([str(a) for a in job]) if isinstance(job, list) \
                    else "not a JSON array"
            except ValueError as e:
                problem = f"bad job line: {e}"
            reply = {"ok": True} if not problem else {"ok": False, "error": problem}
            print(json.dumps(reply), flush=True)
        return 0
    record("job")
    problem = compile_job(args)
    if problem:
        print(f"fuzz_cc.py: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
