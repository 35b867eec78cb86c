"""A recording stand-in for Incredibuild's ib_console (Incredibuild is
proprietary and cannot run here).

  ib_console.py /command=COMMAND_LINE /profile=FILE [/other=...]

It records its arguments and a copy of the profile (incredibuild.py removes
it when ib_console ends), checks that the profile is well-formed XML, and
runs COMMAND_LINE through /bin/sh, as a build console on Linux runs a
build command: a quoting mistake in the command line shows up as a
different command. It does not farm anything out; processes run here.

Environment:
  STUB_RECORD  directory for args.txt (one argument per line), profile.xml
               and env.txt (whether MAKEFLAGS reached ib_console)
Exit code: the command's; 2 for bad arguments.
"""

import os
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET


def die(message):
    print(f"ib_console stub: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    switches = {}
    for arg in sys.argv[1:]:
        if not arg.startswith("/") or "=" not in arg:
            die(f"not a /name=value switch: {arg!r}")
        name, value = arg[1:].split("=", 1)
        switches[name.lower()] = value
    for need in ("command", "profile"):
        if need not in switches:
            die(f"/{need}= is missing")
    try:
        ET.parse(switches["profile"])
    except (OSError, ET.ParseError) as e:
        die(f"bad profile {switches['profile']}: {e}")
    record = os.environ.get("STUB_RECORD")
    if record:
        os.makedirs(record, exist_ok=True)
        with open(os.path.join(record, "args.txt"), "w", encoding="utf-8") as f:
            f.write("".join(a + "\n" for a in sys.argv[1:]))
        shutil.copyfile(switches["profile"], os.path.join(record, "profile.xml"))
        with open(os.path.join(record, "env.txt"), "w", encoding="utf-8") as f:
            f.write(f"MAKEFLAGS={os.environ.get('MAKEFLAGS', '<unset>')}\n")
    # Like a console, leave Ctrl-C to the build (in our process group, it
    # gets the SIGINT too) and wait for it to stop, however long that takes.
    # Ignored before the build starts, so that no SIGINT can come between;
    # the build gets the default back.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    build = subprocess.Popen(["/bin/sh", "-c", switches["command"]],
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return build.wait()


if __name__ == "__main__":
    sys.exit(main())
