"""Splitting a link into phases from its --time-trace.

Phases are cut at scope boundaries on the linker's main thread, so they add
up to the link and mean the same for stock LLVM 22 and for us:

  inputs        ExecuteLinker start -> LTO start: LLD loads and parses inputs
  thin link     LTO start -> first backend scope: LTO's own work, including
                input preparation (archive members written out) and the thin
                link (imports, exports, internalization)
  shards        first backend scope -> distributor start: index shards, cache
                look-ups and the manifest
  distributor   the distributor scope
  after         distributor end -> LTO end: objects checked and added to the
                link, temporary files removed
  backends      (in-process) first backend scope -> LTO end
  final link    LTO end -> ExecuteLinker end: LLD links the native objects
                and writes the output

"engine" is the DTLTO engine's own time: shards + after + input preparation
(serialize inputs / add input scopes, which fall inside "thin link").

Our links are traced one-shot (DTLTO_STREAM=0, bench.py): streaming, the
farm runs while shards are still written, and the main thread enters the
distributor scope only once every job is handed over.

Our engine starts writing shards on worker threads while LTO is still
issuing jobs, and scopes only the wait for them, so part of our shard work
is counted in "thin link"; stock LLVM scopes each shard on its worker.
"""

import json

# First scope of the backend phase, ours / stock / in-process. Our engine
# records LLVM's own DTLTO scope names (plus finer ones of its own, such as
# "DTLTO write index shards").
BACKEND_SCOPES = {
    "DTLTO write index shards",
    "Emit individual index for DTLTO", "Emit individual index and check cache for DTLTO",
    "Check cache for DTLTO", "Emit DTLTO JSON", "Execute DTLTO distributor",
    "Run ThinLTO backend thread (in-process)", "Thin backend",
}
DISTRIBUTOR_SCOPES = {"Execute DTLTO distributor"}
INPUT_PREP_SCOPES = {"Serialize bitcode input for DTLTO", "Add input for DTLTO"}

PHASES = ["inputs", "thin_link", "shards", "distributor", "after", "backends",
          "final_link", "total", "input_prep", "engine"]


def phases(path):
    """Seconds per phase of the trace at path (see the module docstring)."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and not e["name"].startswith("Total ")]
    link = next(e for e in events if e["name"] == "ExecuteLinker")
    main = link["tid"]
    lto = next((e for e in events if e["name"] == "LTO" and e["tid"] == main), None)
    if lto is None:
        return {"total": link["dur"] / 1e6}
    starts = [e["ts"] for e in events if e["name"] in BACKEND_SCOPES]
    backend = min(starts) if starts else lto["ts"] + lto["dur"]
    lto_end = lto["ts"] + lto["dur"]
    dist = next((e for e in events if e["name"] in DISTRIBUTOR_SCOPES
                 and e["tid"] == main), None)
    out = {p: 0.0 for p in PHASES}
    out["inputs"] = lto["ts"] - link["ts"]
    out["thin_link"] = backend - lto["ts"]
    if dist:
        out["shards"] = dist["ts"] - backend
        out["distributor"] = dist["dur"]
        out["after"] = lto_end - (dist["ts"] + dist["dur"])
    elif any(e["name"].startswith(("Run ThinLTO backend", "Thin backend"))
             for e in events):
        out["backends"] = lto_end - backend
    else:  # every module from the cache
        out["shards"] = lto_end - backend
    out["final_link"] = link["ts"] + link["dur"] - lto_end
    out["total"] = link["dur"]
    out["input_prep"] = sum(e["dur"] for e in events
                            if e["name"] in INPUT_PREP_SCOPES and e["tid"] == main)
    if dist or out["shards"]:
        out["engine"] = out["shards"] + out["after"] + out["input_prep"]
    return {k: v / 1e6 for k, v in out.items()}


def dtlto_scopes(path):
    """Total seconds of each DTLTO scope (any thread), for a finer look at
    where the engine's own time goes than the phases give."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and "DTLTO" in e["name"]
                  and not e["name"].startswith("Total ")]
    out = {}
    for e in events:
        entry = out.setdefault(e["name"], {"seconds": 0.0, "count": 0})
        entry["seconds"] += e["dur"] / 1e6
        entry["count"] += 1
    return out
