"""A recording stand-in for SN-DBS's dbsbuild (SN-DBS is Windows-only and
proprietary, so it cannot run here).

  dbsbuild.py -q -p PROJECT -s SCRIPT -templates DIR -k

It records its arguments and copies of the build script and the tool
templates (sn-dbs.py removes them when dbsbuild ends), checks the script's
shape, and runs every job on this machine the way a helper would: the
"command" split by the Windows rules (winargv.py, written apart from
sn-dbs.py's quoting), in "working_directory", after checking that every
explicit input file exists and that a template for the program exists.
With -k it goes on after a failing job; it exits 1 if any job failed.

Environment:
  STUB_RECORD      directory for args.txt (one argument per line), script.json
                   and templates/
  STUB_FAIL_TITLE  a job whose title contains this fails without running, as
                   on a helper that died ("helper lost")
  STUB_HANG        write this file, then sleep until killed (signal tests)
  STUB_EXIT        exit with this code after running every job
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from winargv import split  # noqa: E402

JOB_KEYS = ["id", "title", "command", "working_directory", "dependencies", "run_locally",
            "explicit_input_files", "tool_template_directories", "echo"]


def die(message):
    print(f"dbsbuild stub: {message}", file=sys.stderr)
    sys.exit(2)


def parse(argv):
    opts, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-q", "-k"):
            opts[a] = True
        elif a in ("-p", "-s", "-templates") and i + 1 < len(argv):
            opts[a] = argv[i + 1]
            i += 1
        else:
            die(f"unexpected argument {a!r}")
        i += 1
    for need in ("-p", "-s", "-templates"):
        if need not in opts:
            die(f"{need} is missing")
    return opts


def main():
    opts = parse(sys.argv[1:])
    record = os.environ.get("STUB_RECORD")
    if record:
        os.makedirs(record, exist_ok=True)
        with open(os.path.join(record, "args.txt"), "w", encoding="utf-8") as f:
            f.write("".join(a + "\n" for a in sys.argv[1:]))
        shutil.copyfile(opts["-s"], os.path.join(record, "script.json"))
        shutil.copytree(opts["-templates"], os.path.join(record, "templates"),
                        dirs_exist_ok=True)
    if os.environ.get("STUB_HANG"):
        with open(os.environ["STUB_HANG"], "w") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(60)
    with open(opts["-s"], encoding="ascii") as f:  # ensure_ascii: plain ASCII
        script = json.load(f)
    failed = 0
    for job in script["jobs"]:
        if list(job) != JOB_KEYS:
            die(f"job keys {list(job)}, expected {JOB_KEYS}")
        argv = split(job["command"])
        template = os.path.basename(argv[0]) + ".sn-dbs-tool.ini"
        if not any(os.path.isfile(os.path.join(d, template))
                   for d in job["tool_template_directories"]):
            die(f"no tool template {template} for job {job['id']}")
        for entry in job["explicit_input_files"]:
            name = entry["filename"]
            if not os.path.isabs(name) or not os.path.isfile(name):
                die(f"job {job['id']}: explicit input {name!r} is not an existing absolute file")
        if os.environ.get("STUB_FAIL_TITLE", "\0") in job["title"]:
            print(f"dbsbuild stub: job {job['id']} ({job['title']}): helper lost", flush=True)
            failed += 1
            continue
        code = subprocess.run(argv, cwd=job["working_directory"]).returncode
        if code:
            print(f"dbsbuild stub: job {job['id']} ({job['title']}) failed with exit code {code}",
                  flush=True)
            failed += 1
            if "-k" not in opts:
                break
    if os.environ.get("STUB_EXIT"):
        return int(os.environ["STUB_EXIT"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
