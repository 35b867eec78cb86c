"""A recording stand-in for FASTBuild's fbuild (FASTBuild is not in Debian).

  fbuild.py -config FILE.bff [-dist] [-noprogress] [-nostoponerror] [-quiet]
            [-distverbose] [-forceremote] TARGET

It records its arguments, its working directory and FASTBUILD_TEMP_PATH,
and a copy of the .bff; reads the .bff with a parser of its own for the
part of the language fastbuild.py writes (Settings, Compiler, ObjectList;
'...' strings with '^' escapes and $Var$ substitutions, which must not
occur; { } arrays with optional commas; comments), checks it the way
fbuild would need it for .SimpleDistributionMode, and then builds the
ObjectList as FASTBuild does: each input file compiled to
<.CompilerOutputPath><name without extension><.CompilerOutputExtension> by
the compiler's executable with .CompilerOptions, %1 and %2 replaced and
the line split as FASTBuild does on Linux (at spaces outside "...",
quotes removed, \\" for a quote). Even-numbered inputs run here with their
own paths; the others (all of them with -forceremote) as on a worker: the
executable and .ExtraFiles copied into a toolchain directory, the one
input file copied alone into a scratch directory under its own name, run
there with an empty environment, and the output copied back.

Environment:
  STUB_RECORD   directory for args.txt, cwd.txt, temp.txt, fbuild.bff and
                jobs.txt (one line per compile: here/worker, the argv)
  STUB_HANG     write this file (our pid), then sleep until killed
  STUB_DROP     inputs whose name contains this exit 0 without an output
  STUB_GARBAGE  inputs whose name contains this get a non-object output
  STUB_EXIT     exit with this code after building everything
Exit codes: 0 built, 255 a compile failed (FASTBuild's -1), 254 the .bff
did not load (-2), 253 bad arguments (-3).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FLAGS = {"-dist", "-noprogress", "-nostoponerror", "-quiet", "-distverbose", "-forceremote",
         "-nolocalrace", "-summary", "-verbose"}


def die(code, message):
    print(f"fbuild stub: {message}", file=sys.stderr)
    sys.exit(code)


def parse_args(argv):
    config, target, flags = None, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-config" and i + 1 < len(argv):
            config = argv[i + 1]
            i += 1
        elif a in FLAGS:
            flags.append(a)
        elif a.startswith("-"):
            die(253, f"unknown option {a!r}")
        elif target is None:
            target = a
        else:
            die(253, f"a second target {a!r}")
        i += 1
    if not config or not target:
        die(253, "-config and a target are required")
    return config, target, flags


def tokens(text):
    """The .bff as tokens: ('str', value), ('name', .X), ('word', x), or a
    punctuation character."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c.isspace() or c == ",":
            i += 1
        elif text.startswith("//", i) or c == ";":
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif c in "'\"":
            j, value = i + 1, ""
            while True:
                if j >= len(text) or text[j] == "\n":
                    die(254, f"a string is not closed on its line: {text[i:j]!r}")
                if text[j] == "^":
                    if j + 1 >= len(text):
                        die(254, "'^' at the end of the file")
                    value += text[j + 1]
                    j += 2
                    continue
                if text[j] == "$":
                    die(254, f"a $variable$ substitution in {text[i:j + 1]!r}")
                if text[j] == c:
                    break
                value += text[j]
                j += 1
            out.append(("str", value))
            i = j + 1
        elif c in "{}()=":
            out.append(c)
            i += 1
        else:
            m = re.match(r"\.?[A-Za-z_][A-Za-z0-9_]*", text[i:])
            if not m:
                die(254, f"unexpected {text[i:i + 20]!r}")
            out.append(("name" if m[0].startswith(".") else "word", m[0]))
            i += len(m[0])
    return out


def parse_bff(text):
    """{(function, alias): {property: value}}; values are str, bool or list."""
    toks, i, found = tokens(text), 0, {}

    def expect(what):
        nonlocal i
        if i >= len(toks) or toks[i] != what:
            die(254, f"expected {what!r} at token {i}: {toks[i:i + 3]}")
        i += 1

    while i < len(toks):
        kind = toks[i]
        if not isinstance(kind, tuple) or kind[0] != "word":
            die(254, f"expected a function at token {i}: {kind}")
        function, alias = kind[1], None
        i += 1
        if toks[i] == "(":
            i += 1
            if toks[i][0] != "str":
                die(254, f"{function}() needs a string alias")
            alias = toks[i][1]
            i += 1
            expect(")")
        expect("{")
        props = {}
        while toks[i] != "}":
            if toks[i][0] != "name":
                die(254, f"expected a .Property in {function}: {toks[i]}")
            name = toks[i][1]
            i += 1
            expect("=")
            if toks[i] == "{":
                i += 1
                items = []
                while toks[i] != "}":
                    if toks[i][0] != "str":
                        die(254, f"arrays here hold strings: {toks[i]}")
                    items.append(toks[i][1])
                    i += 1
                i += 1
                value = items
            elif toks[i][0] == "str":
                value = toks[i][1]
                i += 1
            elif toks[i] in (("word", "true"), ("word", "false")):
                value = toks[i][1] == "true"
                i += 1
            else:
                die(254, f"unexpected value for {name}: {toks[i]}")
            if name in props:
                die(254, f"{name} set twice in {function}")
            props[name] = value
        i += 1
        if (function, alias) in found:
            die(254, f"{function}({alias!r}) defined twice")
        found[(function, alias)] = props
    return found


def split_command(line):
    """A command line split as FASTBuild splits it on Linux."""
    args, current, quoted, i, started = [], "", False, 0, False
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] == '"':
            current += '"'
            i += 2
            started = True
            continue
        if c == '"':
            quoted = not quoted
            started = True
        elif c == " " and not quoted:
            if started:
                args.append(current)
            current, started = "", False
        else:
            current += c
            started = True
        i += 1
    if started:
        args.append(current)
    return args


def main():
    config, target, flags = parse_args(sys.argv[1:])
    record = os.environ.get("STUB_RECORD")
    if record:
        os.makedirs(record, exist_ok=True)
        with open(os.path.join(record, "args.txt"), "w", encoding="utf-8") as f:
            f.write("".join(a + "\n" for a in sys.argv[1:]))
        with open(os.path.join(record, "cwd.txt"), "w", encoding="utf-8") as f:
            f.write(os.getcwd() + "\n")
        with open(os.path.join(record, "temp.txt"), "w", encoding="utf-8") as f:
            f.write(os.environ.get("FASTBUILD_TEMP_PATH", "<unset>") + "\n")
        shutil.copyfile(config, os.path.join(record, "fbuild.bff"))
    if os.environ.get("STUB_HANG"):
        with open(os.environ["STUB_HANG"] + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(os.environ["STUB_HANG"] + ".tmp", os.environ["STUB_HANG"])
        time.sleep(600)
    with open(config, encoding="utf-8") as f:
        bff = parse_bff(f.read())
    lists = {alias: props for (function, alias), props in bff.items() if function == "ObjectList"}
    if target not in lists:
        die(254, f"no ObjectList {target!r}")
    objects = lists[target]
    compiler = bff.get(("Compiler", objects.get(".Compiler")))
    if compiler is None:
        die(254, f"no Compiler {objects.get('.Compiler')!r}")
    if compiler.get(".CompilerFamily") != "custom" or compiler.get(".SimpleDistributionMode") \
            is not True:
        die(254, "the compiler is not a 'custom' one with .SimpleDistributionMode = true")
    exe = compiler[".Executable"]
    extra = compiler.get(".ExtraFiles", [])
    for path in [exe] + extra:
        if not os.path.isabs(path) or not os.path.isfile(path):
            die(254, f"{path!r} is not an existing absolute file")
    options = objects[".CompilerOptions"]
    if "%1" not in options or "%2" not in options:
        die(254, ".CompilerOptions needs %1 and %2")
    out_dir, ext = objects[".CompilerOutputPath"], objects.get(".CompilerOutputExtension", ".o")
    if not out_dir.endswith("/") or not os.path.isdir(out_dir):
        die(254, f".CompilerOutputPath {out_dir!r} is not an existing directory ending in '/'")
    failed = 0
    log = []
    for n, source in enumerate(objects[".CompilerInputFiles"]):
        if not os.path.isfile(source):
            die(254, f"input {source!r} does not exist")
        base = os.path.basename(source)
        obj = out_dir + os.path.splitext(base)[0] + ext
        remote = "-forceremote" in flags or n % 2 == 1
        if os.environ.get("STUB_DROP", "\0") in base:
            log.append(f"{base}: dropped")
            continue
        if os.environ.get("STUB_GARBAGE", "\0") in base:
            with open(obj, "w") as f:
                f.write("not an object\n")
            log.append(f"{base}: garbage")
            continue
        if not remote:
            argv = [exe] + split_command(options.replace("%1", source).replace("%2", obj))
            log.append(f"{base}: here: " + " ".join(argv))
            code = subprocess.run(argv).returncode
        else:
            with tempfile.TemporaryDirectory(prefix="fbuild-worker-") as worker:
                tools = os.path.join(worker, "toolchain")
                root = os.path.dirname(exe) + "/"
                for path in [exe] + extra:
                    rel = path[len(root):] if path.startswith(root) else os.path.basename(path)
                    os.makedirs(os.path.dirname(os.path.join(tools, rel)), exist_ok=True)
                    shutil.copy2(path, os.path.join(tools, rel))
                scratch = os.path.join(worker, "job")
                os.mkdir(scratch)
                shutil.copyfile(source, os.path.join(scratch, base))
                remote_obj = os.path.join(scratch, "out" + ext)
                argv = [os.path.join(tools, os.path.basename(exe))] + split_command(
                    options.replace("%1", os.path.join(scratch, base)).replace("%2", remote_obj))
                log.append(f"{base}: worker: " + " ".join(
                    a.replace(worker, "<worker>") for a in argv))
                code = subprocess.run(argv, cwd=scratch, env={}).returncode
                if code == 0 and os.path.isfile(remote_obj):
                    shutil.copyfile(remote_obj, obj)
        if code:
            print(f"fbuild stub: FAILED: {obj} (exit code {code})", file=sys.stderr)
            failed += 1
            if "-nostoponerror" not in flags:
                break
    if record:
        with open(os.path.join(record, "jobs.txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in log))
    if os.environ.get("STUB_EXIT"):
        return int(os.environ["STUB_EXIT"])
    return 255 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
