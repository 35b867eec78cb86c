"""tokens.py: run as a make recipe with '+', print how many jobserver tokens
are free right now (it takes them all, counts, and gives them back)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "utils", "dtlto"))
from dtltodist import jobserver  # noqa: E402

server, note = jobserver.from_environment()
if server is None:
    sys.exit(f"no jobserver: {note}")
while server.try_acquire() is not None:
    pass
print(f"free tokens: {len(server.held)}")
server.close()
