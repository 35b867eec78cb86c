"""A recording stand-in for reclient's rewrapper (reclient cannot be installed here).

  rewrapper.py -name=value ... -- COMMAND [ARGS...]

It records its arguments, checks them the way rewrapper and reproxy would
need them, and then plays the remote machine: it copies every declared input
(relative to -exec_root) into an empty scratch exec root, runs the command in
the same relative working directory there, and copies the declared outputs
back. A missing input, an output outside the exec root, or an absolute path
into the exec root left in the command therefore fails the job as it would
on a real farm.

Environment:
  STUB_RECORD  append what each call got to this file: "call" and one
               argument per line (indented), each list file's lines, and
               the working directory relative to the exec root
  STUB_FAIL    CODE:N[:TEXT]  the first N calls whose outputs contain TEXT
               exit CODE at once, printing a gRPC "Unavailable" error
Exit codes: the command's; 35 (rewrapper's local error) for bad arguments.
"""

import os
import shutil
import subprocess
import sys
import tempfile

KNOWN = {"server_address", "exec_root", "labels", "platform", "exec_strategy",
         "exec_timeout", "inputs", "input_list_paths", "toolchain_inputs",
         "output_files", "output_list_paths", "canonicalize_working_dir"}


def die(message):
    print(f"rewrapper stub: {message}", file=sys.stderr)
    sys.exit(35)


def parse(argv):
    if "--" not in argv:
        die("no '--' before the command")
    split = argv.index("--")
    flags = {}
    for arg in argv[:split]:
        if not arg.startswith("-") or "=" not in arg:
            die(f"not a -name=value flag: {arg!r}")
        name, value = arg.lstrip("-").split("=", 1)
        if name not in KNOWN:
            die(f"unknown flag -{name}")
        if name in flags:
            die(f"-{name} given twice")
        flags[name] = value
    return flags, argv[split + 1:]


def relative(root, rel, what):
    if not rel or os.path.isabs(rel) or ".." in rel.split("/"):
        die(f"{what} {rel!r} is not relative to the exec root")
    return os.path.join(root, rel)


def listed(root, flags, name, list_name, record):
    items = flags[name].split(",") if flags.get(name) else []
    for lst in flags.get(list_name, "").split(",") if flags.get(list_name) else []:
        with open(relative(root, lst, f"-{list_name} file"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        record.append(f"  list {lst}:")
        record += [f"    {line}" for line in lines]
        items += lines
    return items


def main():
    flags, command = parse(sys.argv[1:])
    record = ["call"] + [f"  {a}" for a in sys.argv[1:]]
    for need in ("server_address", "exec_root", "exec_strategy", "exec_timeout"):
        if need not in flags:
            die(f"-{need} is missing")
    if flags.get("labels") != "type=tool":
        die(f"-labels={flags.get('labels')}: a DTLTO job needs type=tool")
    root = flags["exec_root"]
    if not os.path.isabs(root) or not os.path.isdir(root):
        die(f"-exec_root {root!r} is not an absolute directory")
    cwd = os.getcwd()
    wd = os.path.relpath(cwd, os.path.realpath(root))
    if wd.split(os.sep)[0] == "..":
        die(f"the working directory {cwd} is outside the exec root")
    inputs = listed(root, flags, "inputs", "input_list_paths", record)
    outputs = listed(root, flags, "output_files", "output_list_paths", record)
    tools = flags["toolchain_inputs"].split(",") if flags.get("toolchain_inputs") else []
    record.append(f"  cwd: {wd}")
    if os.environ.get("STUB_RECORD"):
        with open(os.environ["STUB_RECORD"], "a", encoding="utf-8") as f:
            f.write("\n".join(record) + "\n")
    if not inputs or not outputs:
        die("a job needs inputs and outputs")
    for p in inputs + tools:
        if not os.path.lexists(relative(root, p, "input")):
            die(f"input {p!r} does not exist under the exec root")
    for p in outputs:
        relative(root, p, "output")
    prefix = os.path.realpath(root).rstrip("/") + "/"
    for arg in command:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if os.path.isabs(value) and (value + "/").startswith(prefix):
            die(f"the command names {value!r}, which would not exist on the remote machine")

    fail = os.environ.get("STUB_FAIL")
    if fail:
        code, count, *text = fail.split(":", 2)
        if not text or any(text[0] in o for o in outputs):
            counter = os.environ["STUB_RECORD"] + ".failed"
            done = os.path.getsize(counter) if os.path.exists(counter) else 0
            if done < int(count):
                with open(counter, "a") as f:
                    f.write("x")
                print("rpc error: code = Unavailable desc = connection reset by peer",
                      file=sys.stderr)
                sys.exit(int(code))

    with tempfile.TemporaryDirectory(prefix="remote-") as remote:
        for p in inputs + tools:
            dest = os.path.join(remote, p)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(os.path.join(root, p), dest, follow_symlinks=False)
        for p in outputs:
            os.makedirs(os.path.dirname(os.path.join(remote, p)), exist_ok=True)
        remote_wd = os.path.join(remote, wd)
        os.makedirs(remote_wd, exist_ok=True)
        try:
            code = subprocess.run(command, cwd=remote_wd).returncode
        except OSError as e:
            die(f"cannot run {command[0]!r}: {e.strerror}")
        if code == 0:
            for p in outputs:
                src = os.path.join(remote, p)
                if os.path.isfile(src):
                    shutil.copyfile(src, os.path.join(root, p))
    return code


if __name__ == "__main__":
    sys.exit(main())
