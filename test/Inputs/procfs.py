"""What the test helpers read from /proc about processes, in one place.

Helpers in every suite directory ask whether a process they started (or a
test left behind) still runs, when it started, which session it is in, what
it runs with, and wait, bounded, for such things to change. They import
this module by path (it is not a package):

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "Inputs"))  # test/Inputs
    import procfs

A process can end between any two reads, or in the middle of one: every
reader here returns None once the process is gone, never raises for that.
A zombie (killed, waiting for a reaper we may not control) is not alive.
Standard library only; Linux only.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple


def _read(pid, name: str) -> bytes | None:
    """The bytes of /proc/PID/NAME; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:  # FileNotFoundError, ProcessLookupError (ESRCH) and others
        return None


def stat_fields(pid) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: state first,
    then ppid, pgrp, session, ... (proc(5) numbers them from 3). The name
    is skipped by the last ")", since it may hold spaces and parentheses
    itself. None once the process is gone."""
    data = _read(pid, "stat")
    if not data or b")" not in data:  # an empty read: it went while we read
        return None
    return data.rsplit(b")", 1)[1].decode("ascii", "replace").split()


def _field(pid, index: int) -> str | None:
    fields = stat_fields(pid)
    return fields[index] if fields and len(fields) > index else None


def state(pid) -> str | None:
    """The process's state letter (R, S, D, Z, ...); None once it is gone."""
    return _field(pid, 0)


def exists(pid) -> bool:
    """Whether /proc has an entry for pid: a zombie too, until it is reaped."""
    return os.path.exists(f"/proc/{pid}")


def alive(pid) -> bool:
    """Whether the process exists and is neither a zombie nor dead."""
    return state(pid) not in (None, "Z", "X")


def session(pid) -> int | None:
    """The process's session id; None once it is gone."""
    sid = _field(pid, 3)
    return int(sid) if sid is not None and sid.isdigit() else None


def start_time(pid) -> int | None:
    """The process's start time in clock ticks after boot: with the pid, it
    tells a process from a later one that reuses the pid. None once gone."""
    ticks = _field(pid, 19)
    return int(ticks) if ticks is not None and ticks.isdigit() else None


def pids() -> list[int]:
    """The pids of every process /proc lists now."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


class Process(NamedTuple):
    ppid: int
    pgrp: int
    session: int
    seconds: float  # how long it has run
    args: str       # its command line, space-separated ("" for a zombie)


def snapshot() -> dict[int, Process]:
    """Every process /proc lists now, by pid (what `ps -e` prints). One
    that ends while this reads is left out."""
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for pid in pids():
        fields = stat_fields(pid)
        args = cmdline(pid)
        if not fields or len(fields) < 20 or args is None:
            continue
        table[pid] = Process(int(fields[1]), int(fields[2]), int(fields[3]),
                             uptime - int(fields[19]) / ticks, " ".join(args))
    return table


def cmdline(pid) -> list[str] | None:
    """The process's arguments, decoded for printing (bytes that are not
    UTF-8 replaced); [] for a zombie or kernel thread, None once gone."""
    data = _read(pid, "cmdline")
    if data is None:
        return None
    data = data.rstrip(b"\0")
    return [w.decode(errors="replace") for w in data.split(b"\0")] if data else []


def environ(pid) -> list[bytes] | None:
    """The process's environment as it started, one b"NAME=value" entry
    each; None once it is gone."""
    data = _read(pid, "environ")
    return None if data is None else [e for e in data.split(b"\0") if e]


def children(pid) -> list[int] | None:
    """The pids of the children of pid's main thread; None once it is gone."""
    data = _read(pid, f"task/{pid}/children")
    return None if data is None else [int(c) for c in data.split()]


def _task_files(pid, name: str) -> list[tuple[int, bytes]] | None:
    """(tid, bytes of /proc/PID/task/TID/NAME) for each of the process's
    threads; None once it is gone. A thread that ends meanwhile is left out."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    read = ((int(tid), _read(pid, f"task/{tid}/{name}")) for tid in tasks)
    return [(tid, data) for tid, data in read if data is not None]


def thread_names(pid) -> list[str] | None:
    """The name (comm) of each of the process's threads, in no set order;
    None once it is gone. A thread that ends meanwhile is left out."""
    files = _task_files(pid, "comm")
    return None if files is None else [
        data.decode(errors="replace").strip() for _, data in files]


def threads_in_syscall(pid, number: int) -> list[int] | None:
    """The ids of the process's threads blocked in system call `number`
    now (x86-64 numbers: 0 is read), from /proc/PID/task/TID/syscall; the
    main thread's id is pid. None once the process is gone."""
    files = _task_files(pid, "syscall")
    return None if files is None else [
        tid for tid, data in files if data.split()[:1] == [str(number).encode()]]


def reading_thread(pid, timeout: float = 30) -> str:
    """Which of the process's threads is blocked in read(2), once one is
    (waiting up to timeout seconds): "the main thread", "another thread"
    (a worker's job thread), or "none"."""
    found: list[int] = []

    def someone_reads():
        found[:] = threads_in_syscall(pid, 0) or []
        return bool(found)

    if not wait_until(someone_reads, timeout):
        return "none"
    return "the main thread" if found == [pid] else "another thread"


def mapped_paths(pid) -> list[str] | None:
    """The path of every file mapping in /proc/PID/maps, one per mapping;
    None once the process is gone."""
    data = _read(pid, "maps")
    if data is None:
        return None
    rows = (line.split(None, 5) for line in data.decode(errors="replace").splitlines())
    return [row[5] for row in rows if len(row) == 6]


def peak_rss_kib(pid) -> int | None:
    """The process's peak resident memory (VmHWM in /proc/PID/status), in
    KiB; None once it is gone, or for a process without memory of its own."""
    for line in (_read(pid, "status") or b"").splitlines():
        if line.startswith(b"VmHWM:"):
            return int(line.split()[1])
    return None


def net_namespace(pid="self") -> str | None:
    """The process's network namespace, as "net:[INODE]"; None once gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def mountinfo() -> str:
    """This process's mount table, /proc/self/mountinfo, as text."""
    with open("/proc/self/mountinfo", errors="replace") as f:
        return f.read()


def wait_until(predicate, timeout: float, step: float = 0.01) -> bool:
    """Calls predicate every step seconds until it returns true (True) or
    timeout seconds have passed (False). It is called at least once."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
