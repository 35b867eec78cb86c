"""Prints the batch lines of backend.test: jobs for m1 and m2 (writing
out/m1.batch.o and out/m2.batch.o) with two bad lines between them, then
hub's job twice (out/hub.batch.o, out/hub.batch2.o). hub imports from m1
and m2, whose files the worker has opened for their own jobs already.

  batch_lines.py DIR     (the directory holding the kept shards)
"""
import glob
import json
import os
import sys

out = sys.argv[1]


def job(module, object_name=None):
    shard = glob.glob(os.path.join(out, module + ".*.native.o.thinlto.bc"))[0]
    return [module + ".o", "-fthinlto-index=" + shard, "-o",
            os.path.join(out, (object_name or module + ".batch") + ".o")]


print(json.dumps(job("m1")))
print(json.dumps(["no-such.o", "-fthinlto-index=x", "-o", "y.o"]))
print(json.dumps({"not": "a list"}))
print(json.dumps(job("m2")))
print(json.dumps(job("hub")))
print(json.dumps(job("hub", "hub.batch2")))
