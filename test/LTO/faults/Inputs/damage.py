"""Damages ThinLTO cache entries for cache-integrity.test.

  damage.py flip|truncate|swap CACHE_DIR

flip: changes one byte in the middle of the largest entry; truncate: cuts the
largest entry to half; swap: copies the smallest entry over the largest (a
well-formed entry, for the wrong module). Prints nothing.
"""
import os
import sys

how, cache = sys.argv[1], sys.argv[2]
entries = sorted((os.path.join(cache, e) for e in os.listdir(cache)
                  if e.startswith("llvmcache-")), key=os.path.getsize)
largest, smallest = entries[-1], entries[0]
if how == "flip":
    with open(largest, "r+b") as f:
        f.seek(os.path.getsize(largest) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
elif how == "truncate":
    os.truncate(largest, os.path.getsize(largest) // 2)
elif how == "swap":
    with open(smallest, "rb") as f:
        data = f.read()
    with open(largest, "wb") as f:
        f.write(data)
else:
    sys.exit(f"damage.py: unknown damage '{how}'")
