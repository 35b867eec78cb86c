"""Running one link and measuring it.

What is measured, and how:
- wall: monotonic clock from just before the fork to the reaping of the linker.
- CPU: user + system time from wait4() on the linker. The kernel adds to a
  process's figures those of every descendant it waited for, so this covers
  the linker's threads, the distributor and every compiler job (a distributor
  that left orphans behind would be under-counted).
- linker peak RSS: the linker's own VmHWM (high-water mark of resident
  memory), read from /proc/<pid>/status while the linker is stopped at its
  exit under ptrace (PTRACE_O_TRACEEXIT), when its memory is still mapped.
  Exact, and free of sampling error. Only the linker's main thread is traced;
  signals it receives are passed on unchanged. Where ptrace is not allowed
  the harness falls back to the highest VmHWM seen by the sampler below.
- tree peak RSS: a sampler thread walks /proc every --sample-ms (20 ms by
  default), finds the linker's descendants by parent pid, and sums their
  resident set sizes (statm); the peak is the largest sum seen, at least the
  linker's own peak. Pages shared between processes (libLLVM mapped by the
  linker and every clang) count once per process, as `ps` and `top` do.
  A process shorter than the interval may be missed; clang jobs live 90 ms or
  more. The sampler reads /proc/<pid>/stat only of pids it has not seen, so
  it costs well under 1% of a core.
"""

import ctypes
import os
import signal
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")

_PTRACE_TRACEME = 0
_PTRACE_CONT = 7
_PTRACE_SETOPTIONS = 0x4200
_PTRACE_O_TRACEEXIT = 0x40
_PTRACE_O_EXITKILL = 0x100000
_PTRACE_EVENT_EXIT = 6

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                         ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long


def _ptrace(request, pid, data=0):
    return _libc.ptrace(request, pid, None, ctypes.c_void_p(data))


def _status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process and its descendants."""

    def __init__(self, root, interval, on_sample=None):
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        self.on_sample = on_sample
        self.stop_event = threading.Event()
        self.peak_bytes = 0
        self.root_hwm_kib = 0
        self.processes_seen = 0
        self._known = {}  # pid -> is in the tree

    def _ppid(self, pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
            return int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def sample(self):
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return
        alive = set(pids)
        for pid in list(self._known):
            if pid not in alive:
                del self._known[pid]
        self._known[self.root] = True
        # Parents have lower pids unless pids wrapped; loop until stable.
        new = sorted(p for p in pids if p not in self._known)
        ppids = {p: self._ppid(p) for p in new}
        changed = True
        while changed:
            changed = False
            for p in new:
                if p not in self._known and self._known.get(ppids[p]):
                    self._known[p] = True
                    self.processes_seen += 1
                    changed = True
        for p in new:
            self._known.setdefault(p, False)
        total = 0
        for pid, inside in self._known.items():
            if not inside:
                continue
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * PAGE
            except (OSError, ValueError, IndexError):
                pass
        self.peak_bytes = max(self.peak_bytes, total)
        self.root_hwm_kib = max(self.root_hwm_kib, _status_kib(self.root, "VmHWM"))

    def run(self):
        while not self.stop_event.is_set():
            self.sample()
            if self.on_sample:
                self.on_sample(self)
            self.stop_event.wait(self.interval)


_PTRACE_OK = None


def ptrace_works():
    """Whether this process may trace its children (seccomp or a security
    module can forbid it); checked once on a short process."""
    global _PTRACE_OK
    if _PTRACE_OK is None:
        import subprocess

        def setup():
            if _libc.ptrace(_PTRACE_TRACEME, 0, None, None) != 0:
                os._exit(126)
        try:
            proc = subprocess.Popen(["true"], preexec_fn=setup)
            _, status, _ = os.wait4(proc.pid, 0)
            if os.WIFSTOPPED(status):
                _ptrace(_PTRACE_CONT, proc.pid, 0)
                _, status, _ = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            _PTRACE_OK = proc.returncode == 0
        except OSError:
            _PTRACE_OK = False
    return _PTRACE_OK


def run_link(argv, cwd, env, stdout_path, stderr_path, sample_ms=20.0,
             use_ptrace=None, on_sample=None):
    """Run one link; return its measurements (see the module docstring).

    use_ptrace: None picks ptrace when the system allows it. on_sample, if
    given, is called with the sampler after each sample, on its thread (the
    self-test uses it to end its process tree once it has been seen)."""
    traced = ptrace_works() if use_ptrace is None else use_ptrace

    def child_setup():
        if traced and _libc.ptrace(_PTRACE_TRACEME, 0, None, None) != 0:
            os._exit(126)

    import subprocess
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, preexec_fn=child_setup)
    pid = proc.pid
    sampler = TreeSampler(pid, sample_ms / 1000.0, on_sample)
    linker_hwm_kib = None
    method = "ptrace exit stop"
    try:
        if traced:
            # The child stops with SIGTRAP at exec.
            _, status, _ = os.wait4(pid, 0)
            if os.WIFSTOPPED(status):
                _ptrace(_PTRACE_SETOPTIONS, pid,
                        _PTRACE_O_TRACEEXIT | _PTRACE_O_EXITKILL)
                _ptrace(_PTRACE_CONT, pid, 0)
        sampler.start()

        def wait_exit():
            nonlocal linker_hwm_kib
            while True:
                _, status, usage = os.wait4(pid, 0)
                if not os.WIFSTOPPED(status):
                    return status, usage
                sig = os.WSTOPSIG(status)
                if status >> 16 == _PTRACE_EVENT_EXIT:
                    linker_hwm_kib = _status_kib(pid, "VmHWM")
                    sig = 0
                elif sig == signal.SIGTRAP:
                    # A traced process stops so after each execve (a
                    # wrapper script exec-ing the linker): not a signal
                    # to hand on, which would kill it.
                    sig = 0
                _ptrace(_PTRACE_CONT, pid, sig)

        try:
            status, usage = wait_exit()
        except KeyboardInterrupt:
            # Interrupted: let the linker stop its distributor and remove its
            # temporary files before we go. SIGTERM, not SIGINT: a job started
            # in the background by a shell ignores SIGINT, and so does the
            # linker it starts.
            os.kill(pid, signal.SIGTERM)
            wait_exit()
            raise
        wall = time.monotonic() - start
    finally:
        sampler.stop_event.set()
        if proc.returncode is None and proc.poll() is None:
            proc.kill()
    proc.returncode = os.waitstatus_to_exitcode(status)
    sampler.join()
    if linker_hwm_kib is None:
        linker_hwm_kib = sampler.root_hwm_kib
        method = "sampled VmHWM"
    linker_peak = linker_hwm_kib * 1024
    return {
        "returncode": proc.returncode,
        "wall": wall,
        "user": usage.ru_utime,
        "sys": usage.ru_stime,
        "cpu": usage.ru_utime + usage.ru_stime,
        "linker_peak_rss": linker_peak,
        "tree_peak_rss": max(sampler.peak_bytes, linker_peak),
        "largest_process_rss": usage.ru_maxrss * 1024,
        "processes": sampler.processes_seen + 1,
        "rss_method": method,
    }
