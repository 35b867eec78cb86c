"""kill_at.py PIDFILE -- COMMAND...: run COMMAND; once PIDFILE exists, SIGKILL
the process it names; then print what COMMAND printed (stdout, then stderr)
and its exit code, and exit 0."""
import os
import signal
import subprocess
import sys
import time

path, command = sys.argv[1], sys.argv[3:]
proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
deadline = time.monotonic() + 300  # a hang guard, not a timing
while not os.path.exists(path) or not open(path).read().endswith("\n"):
    if proc.poll() is not None or time.monotonic() > deadline:
        break
    time.sleep(0.01)
else:
    os.kill(int(open(path).read()), signal.SIGKILL)
out, err = proc.communicate()
sys.stdout.write(out.decode() + err.decode())
print(f"exit code {proc.returncode}")
