"""Interrupt a command once a marker file appears, and report what is left.

  interrupt.py --signal INT|TERM|HUP --marker PATH [--ignore SIG]
               [--touch-after FILE] -- COMMAND [ARGS...]

Starts COMMAND as a shell starts a foreground job: SIGINT, SIGTERM and
SIGHUP at their default actions (lit's workers ignore SIGINT, and ignored
signals are inherited), except those named by --ignore (as `nohup` ignores
SIGHUP). Waits until PATH exists (it holds the pids of the processes the
command started, space-separated), sends the signal to COMMAND's process
only (as `kill` would), touches FILE if given, and waits for COMMAND to
end. Prints COMMAND's stderr, then "status: signal SIG<NAME>" or
"status: exit <code>", then one line "pid <i>: gone|alive" per pid in the
marker (procs.py). Every wait is bounded (--timeout): a hang is reported,
never waited out.
"""
import argparse
import os
import signal
import subprocess
import sys

from procs import report

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Inputs"))
import procfs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signal", required=True, choices=["INT", "TERM", "HUP"])
    parser.add_argument("--marker", required=True)
    parser.add_argument("--ignore", action="append", default=[],
                        choices=["INT", "TERM", "HUP"])
    parser.add_argument("--touch-after", metavar="FILE")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    def dispositions():
        for name in ("INT", "TERM", "HUP"):
            signal.signal(getattr(signal, "SIG" + name),
                          signal.SIG_IGN if name in args.ignore else signal.SIG_DFL)

    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=dispositions)
    if not procfs.wait_until(lambda: os.path.exists(args.marker) or proc.poll() is not None,
                              args.timeout):
        proc.kill()
        sys.exit(f"interrupt.py: {args.marker} did not appear in {args.timeout} s")
    if proc.poll() is not None:
        sys.stderr.buffer.write(proc.stderr.read())
        sys.exit(f"interrupt.py: the command ended (status {proc.returncode}) "
                 f"before {args.marker} appeared")
    proc.send_signal(getattr(signal, "SIG" + args.signal))
    if args.touch_after:
        open(args.touch_after, "w").close()
    try:
        _, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit(f"interrupt.py: the command did not end within {args.timeout} s "
                 f"of SIG{args.signal}")
    sys.stdout.write(err.decode(errors="replace"))
    if proc.returncode < 0:
        print(f"status: signal {signal.Signals(-proc.returncode).name}")
    else:
        print(f"status: exit {proc.returncode}")
    sys.stdout.flush()
    report(args.marker)


if __name__ == "__main__":
    main()
