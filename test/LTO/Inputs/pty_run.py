#!/usr/bin/env python3
"""pty_run.py COMMAND...: run COMMAND with a pseudo-terminal as its stdin,
stdout and stderr (as on a developer's terminal), and print what it wrote
with the terminal controls made visible: carriage return as <CR>, erase to
the end of the line as <EL>, other escapes as <ESC>; line feeds stay. Exits
with COMMAND's status."""
import argparse
import os
import pty
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    master, slave = pty.openpty()
    proc = subprocess.Popen(a.command, stdin=slave, stdout=slave, stderr=slave,
                            close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        out += data
    status = proc.wait()
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")
    text = text.replace("\r", "<CR>").replace("\x1b[K", "<EL>").replace("\x1b", "<ESC>")
    sys.stdout.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
