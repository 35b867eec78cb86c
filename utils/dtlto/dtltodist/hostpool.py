"""Slots spread over a list of hosts: what ssh.py and distcc.py share.

A host is anything with a .name (as the user wrote it) and .slots (how
many jobs it runs at once). HostPool is the Runner's Slots: a job may start
while some usable host has a free slot; take() gives it the least loaded
one, not one where the job was lost before, and the number of the slot
there (0 to slots - 1, for "host/slot" in events and messages); a host
marked down (its name in .down, with why) gets no more jobs in this link.
"""

from collections import Counter

from .runner import Slots


class HostPool(Slots):
    def __init__(self, hosts: list):
        super().__init__(sum(h.slots for h in hosts))
        self.hosts = hosts
        self.busy: Counter = Counter()
        self._taken: dict[str, set[int]] = {}  # host name -> slots in use
        self.down: dict[str, str] = {}  # host name -> why

    def usable(self) -> list:
        return [h for h in self.hosts if h.name not in self.down]

    def try_grow(self, running: int) -> bool:
        return any(self.busy[h.name] < h.slots for h in self.usable())

    def take(self, avoid) -> tuple:
        """(host, slot) for a job to start."""
        free = [h for h in self.usable() if self.busy[h.name] < h.slots]
        # Not where this job failed before, then the least loaded host.
        best = min(free, key=lambda h: (h.name in avoid, self.busy[h.name] / h.slots))
        self.busy[best.name] += 1
        taken = self._taken.setdefault(best.name, set())
        slot = min(set(range(len(taken) + 1)) - taken)
        taken.add(slot)
        return best, slot

    def release(self, host, slot: int) -> None:
        self.busy[host.name] -= 1
        self._taken[host.name].discard(slot)
