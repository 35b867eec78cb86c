"""Run a command, check its exit code, and show everything it printed.

  run_expect.py [options] CODE -- COMMAND [ARGS...] [::: LAST...]

Prints the command's stdout, then its stderr, on our stdout (for FileCheck),
and exits 0 only if the command exited with CODE. With `::: A B ...` the
command runs once per word after ":::", that word appended as its last
argument, and every run must meet the expectations.
  --signal INT --after PATH   send SIGINT to the command's process (not its
                              group: a terminal's Ctrl-C cannot reach jobs in
                              their own sessions either) once PATH exists
  --jobserver pipe:TOKENS     be a make jobserver holding the bytes of TOKENS
  --jobserver fifo:TOKENS     (make 4.3 pipe fds, or make 4.4 named FIFO), and
                              print the tokens left afterwards, sorted, so a
                              test sees lost or foreign bytes
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def drain(fd):
    os.set_blocking(fd, False)
    got = b""
    while True:
        try:
            byte = os.read(fd, 1)
        except BlockingIOError:
            return got
        if not byte:
            return got
        got += byte


def start_jobserver(spec, tmpdir):
    """(environment, fds to pass, fd to read the tokens back from)."""
    kind, tokens = spec.split(":", 1)
    jobs = f" -j{len(tokens) + 1}"
    if kind == "fifo":
        path = os.path.join(tmpdir, "jobserver.fifo")
        os.mkfifo(path)
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        os.write(fd, tokens.encode())
        return dict(os.environ, MAKEFLAGS=f"{jobs} --jobserver-auth=fifo:{path}"), (), fd
    r, w = os.pipe()
    os.write(w, tokens.encode())
    return dict(os.environ, MAKEFLAGS=f"{jobs} --jobserver-auth={r},{w}"), (r, w), r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("code", type=int)
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.add_argument("--signal", help="signal name, e.g. INT")
    p.add_argument("--after", metavar="PATH", help="send the signal once PATH exists")
    p.add_argument("--stderr-lines", type=int, help="require exactly this many stderr lines")
    p.add_argument("--jobserver", metavar="KIND:TOKENS")
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if ":::" not in command:
        return 0 if run(a, command) else 1
    i = command.index(":::")
    results = [run(a, command[:i] + [last]) for last in command[i + 1:]]
    return 0 if all(results) else 1


def run(a, command):
    env, fds, token_fd = None, (), None
    with tempfile.TemporaryDirectory() as tmpdir:
        if a.jobserver:
            env, fds, token_fd = start_jobserver(a.jobserver, tmpdir)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env, pass_fds=fds)
        if a.signal:
            deadline = time.monotonic() + 600  # a hang guard only
            while a.after and not os.path.exists(a.after) and proc.poll() is None:
                if time.monotonic() > deadline:
                    print(f"run_expect: {a.after} never appeared", file=sys.stderr)
                    break
                time.sleep(0.01)
            proc.send_signal(getattr(signal, "SIG" + a.signal))
        out, err = proc.communicate()
        sys.stdout.buffer.write(out + err)
        if token_fd is not None:
            print(f"tokens after: {''.join(sorted(drain(token_fd).decode()))}")
        sys.stdout.flush()
    ok = True
    name = command[-1]
    if proc.returncode != a.code:
        print(f"run_expect: {name}: expected exit code {a.code}, got {proc.returncode}",
              file=sys.stderr)
        ok = False
    lines = err.count(b"\n") + (1 if err and not err.endswith(b"\n") else 0)
    if a.stderr_lines is not None and lines != a.stderr_lines:
        print(f"run_expect: {name}: expected {a.stderr_lines} stderr lines, got {lines}",
              file=sys.stderr)
        ok = False
    return ok


if __name__ == "__main__":
    sys.exit(main())
