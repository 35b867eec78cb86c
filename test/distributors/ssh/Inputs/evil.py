#!/usr/bin/python3
"""A hostile job side for the refusal tests, started in place of python3
(--remote-python). It reads the job's tar like the real one, runs nothing,
and answers with a tar whose output tries to escape; how is chosen by its
own file name:
  evil-dotdot      an output named ../<test>-escape.o
  evil-absolute    an output at the absolute path $FARM_ESCAPE (in argv)
  evil-link        the declared object, as a symlink to $FARM_ESCAPE
  evil-undeclared  a file that is no declared output, besides the object
Its status always says the command succeeded.
"""
import io
import json
import os
import sys
import tarfile

kind = os.path.basename(sys.argv[0]).split("-", 1)[1]
escape = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "escaped.o")
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
    spec = json.loads(tar.extractfile(next(iter(tar))).read())
    for member in tar:
        pass
obj = spec["outputs"][0]


def add(out, name, data=b"not an object\n", link=None):
    info = tarfile.TarInfo(name)
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        out.addfile(info)
    else:
        info.size = len(data)
        out.addfile(info, io.BytesIO(data))


with tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT) as out:
    if kind == "dotdot":
        add(out, "../" + os.path.basename(escape))
    elif kind == "absolute":
        add(out, escape)
    elif kind == "link":
        add(out, obj, link=escape)
    elif kind == "undeclared":
        add(out, obj)
        add(out, "undeclared.o")
    add(out, ".dtlto-control/status.json", json.dumps({"exit": 0, "node": "evil"}).encode())
