"""stream-records.test's linker: streams job records to a distributor.

  stream_records.py DISTRIBUTOR [ARGS...]

Run in an empty directory. Makes the files below, a manifest without jobs
and a side file that says "stream": 1, writes the job records (then the
end record) to the job channel (DTLTO_JOBS_FD), runs the distributor on
the manifest and prints, one line each and in id order, how each job
ended on the event channel (DTLTO_EVENTS_FD): "<id> done" or "<id> failed:
<reason>"; then whether each file a refused job would have written through
or over is as it was. The distributor's stderr goes to ours.
"""

import hashlib
import json
import os
import subprocess
import sys

FILES = {"a.bc": "payload a\n", "a.idx": "index a\n", "b.bc": "payload b\n",
         "b.idx": "index b\n", "victim.txt": "not to be written\n"}


def job(module, shard, output, *more_inputs):
    # The compiler is cp: it writes through whatever is at the output.
    return {"args": [module, output], "inputs": [module, shard, *more_inputs],
            "outputs": [output]}


RECORDS = [
    dict(job("a.bc", "a.idx", "a.o"), id=0, input_bytes=10),
    dict(job("a.bc", "a.idx", "link.o"), id=1),  # a symlink to victim.txt
    dict(job("a.bc", "a.idx", "dir.o"), id=2),  # a directory
    dict(job("a.bc", "a.idx", "fifo.o"), id=3),  # a FIFO
    dict(job("a.bc", "a.idx", "./m.json"), id=4),  # the manifest
    dict(job("a.bc", "a.idx", "sub/../m.dtlto.json"), id=5),  # its side file
    dict(job("b.bc", "b.idx", "./a.o"), id=6),  # job 0's output
    dict(job("b.bc", "b.idx", os.getcwd() + "/a.bc"), id=7),  # job 0's input
    dict(job("a.o", "b.idx", "c.o"), id=8),  # reads job 0's output
    dict(job("b.bc", "b.idx", "hard.o"), id=9),  # a hard link to b.bc
    dict(job("b.bc", "b.idx", "b.o"), id=10, input_bytes=10),
]


def digest_of(path):
    if os.path.islink(path):
        return "link to " + os.readlink(path)
    if os.path.isdir(path):
        return "directory"
    if not os.path.isfile(path):
        return "other"
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    for name, text in FILES.items():
        with open(name, "w") as f:
            f.write(text)
    os.symlink("victim.txt", "link.o")
    os.mkdir("dir.o")
    os.mkdir("sub")
    os.mkfifo("fifo.o")
    os.link("b.bc", "hard.o")
    with open("m.json", "w") as f:
        json.dump({"common": {"linker_output": "prog", "args": ["/bin/cp"], "inputs": []},
                   "jobs": []}, f)
    with open("m.dtlto.json", "w") as f:
        json.dump({"engine": "dtlto", "version": "test", "jobs": 0, "input_bytes": [],
                   "stream": 1}, f)
    watched = ["victim.txt", "dir.o", "m.json", "m.dtlto.json", "a.bc", "b.bc"]
    before = {p: digest_of(p) for p in watched}

    jobs_r, jobs_w = os.pipe()
    events_r, events_w = os.pipe()
    data = "".join(json.dumps(r) + "\n" for r in RECORDS) + '{"end": true}\n'
    os.write(jobs_w, data.encode())  # well under a pipe's capacity
    os.close(jobs_w)
    env = dict(os.environ, DTLTO_JOBS_FD=str(jobs_r), DTLTO_EVENTS_FD=str(events_w))
    proc = subprocess.Popen(sys.argv[1:] + ["m.json"], env=env, pass_fds=(jobs_r, events_w),
                            stdin=subprocess.DEVNULL)
    os.close(jobs_r)
    os.close(events_w)
    with os.fdopen(events_r, "rb") as f:
        events = [json.loads(line) for line in f]
    code = proc.wait()

    last = {}
    for e in events:
        if e["event"] in ("done", "failed"):
            last[e["id"]] = e
    for job_id in sorted(last):
        e = last[job_id]
        print(f"{job_id} {e['event']}" + (f": {e['reason']}" if e["event"] == "failed" else ""))
    for p in watched:
        print(f"{p}: {'as before' if digest_of(p) == before[p] else 'CHANGED'}")
    print(f"fifo.o: {'still a FIFO' if digest_of('fifo.o') == 'other' else 'CHANGED'}")
    print(f"exit code {code}")


main()
