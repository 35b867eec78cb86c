"""Print the words /bin/sh makes of the /command= value in a printed
ib_console command (the line incredibuild.py --emit-only prints), one per
line as [word]: what a shell running that command would pass on.

  shell_words.py CMD_FILE
"""

import shlex
import subprocess
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    argv = shlex.split(f.read())
value = next(a for a in argv if a.startswith("/command="))[len("/command="):]
script = 'eval "set -- $1"; for a; do printf "[%s]\\n" "$a"; done'
sys.stdout.write(subprocess.run(["/bin/sh", "-c", script, "sh", value],
                                capture_output=True, text=True, check=True).stdout)
