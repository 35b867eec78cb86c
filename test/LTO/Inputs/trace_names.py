"""Print the distinct names of the events of a --time-trace JSON file whose
name contains a given word, sorted, one per line (with the event's detail,
if any, after a tab)."""
import argparse
import json

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("trace", help="the .time-trace file")
parser.add_argument("word", help="keep events whose name contains this")
args = parser.parse_args()
with open(args.trace, encoding="utf-8") as f:
    events = json.load(f)["traceEvents"]
seen = set()
for e in events:
    name = e.get("name", "")
    if args.word in name:
        detail = e.get("args", {}).get("detail", "")
        seen.add(f"{name}\t{detail}" if detail else name)
print("\n".join(sorted(seen)))
