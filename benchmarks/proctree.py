"""Memory of a process tree (the job, its JVM, Spark's Python workers), read from /proc (Linux).

Two measures, because they answer different questions:

- RSS, each process's resident pages. Summed over a tree it counts a page once per process that maps it, so
  workers forked from one daemon (which share the daemon's imported libraries copy-on-write) are counted as if
  each had its own copy.
- PSS, proportional set size: each shared page divided among the processes sharing it. Summed over a tree it is
  the physical memory the tree holds, which is what a container's memory limit charges and what the memory
  targets are about.

Also the CPU time of named threads of this process (``ThreadCpuSampler``): the benchmarks run librdkafka's mock
broker in their own process, on one thread, and how busy that thread is says whether the broker or the job sets
the pace.

Read directly from /proc: a handful of fields from a few files, not worth a dependency for the benchmarks.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

__all__ = ["children", "tree", "kind", "rss_bytes", "pss_bytes", "thread_cpu_seconds", "process_cpu_seconds",
           "MemorySampler", "ThreadCpuSampler", "ProcessCpuSampler", "TreeCpuSampler"]

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def children() -> dict[int, list[int]]:
    """Every process's children, by parent pid."""
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    kids = children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def kind(pid: int, root: int) -> str:
    """What a process of the job's tree is: the driver, the JVM, a Spark Python worker (or daemon), other."""
    if pid == root:
        return "driver (Python)"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "java" in cmd.split(" ", 1)[0] or " org.apache.spark" in cmd:
        return "JVM"
    if "daemon" in cmd or "pyspark" in cmd:
        return "Python workers"
    return "other"


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class _Periodic:
    """Calls ``sample()`` every ``every_s`` seconds on a thread of its own, from :meth:`start` to :meth:`stop`."""

    every_s: float
    _stop: threading.Event

    def sample(self) -> None:
        raise NotImplementedError

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every_s)


@dataclass
class MemorySampler(_Periodic):
    """Peak RSS and peak PSS of a process tree, per kind of process and summed within one sample."""

    root: int
    every_s: float = 0.25
    peak_total: int = 0  # RSS
    peak_sample: dict[str, int] = field(default_factory=dict)
    peak_by_kind: dict[str, int] = field(default_factory=dict)
    peak_pss_total: int = 0
    peak_pss_sample: dict[str, int] = field(default_factory=dict)
    peak_workers: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        rss: dict[str, int] = {}
        pss: dict[str, int] = {}
        workers = 0
        for pid in tree(self.root):
            k = kind(pid, self.root)
            rss[k] = rss.get(k, 0) + rss_bytes(pid)
            pss[k] = pss.get(k, 0) + pss_bytes(pid)
            workers += k == "Python workers"
        self.samples += 1
        if sum(rss.values()) > self.peak_total:
            self.peak_total, self.peak_sample = sum(rss.values()), rss
        if sum(pss.values()) > self.peak_pss_total:
            self.peak_pss_total, self.peak_pss_sample = sum(pss.values()), pss
        for k, value in rss.items():
            self.peak_by_kind[k] = max(self.peak_by_kind.get(k, 0), value)
        self.peak_workers = max(self.peak_workers, workers)




def thread_cpu_seconds(name_prefix: str) -> float:
    """CPU seconds (user and system) used so far by the threads of this process whose name starts with
    ``name_prefix`` (librdkafka names its mock broker's thread ``rdk:mock``)."""
    total = 0
    for entry in os.scandir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")].startswith(name_prefix):
            fields = stat[stat.rindex(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICK


@dataclass
class ThreadCpuSampler(_Periodic):
    """Samples :func:`thread_cpu_seconds` every ``every_s`` with the wall clock, so the CPU the named threads used
    between two moments (:meth:`between`) can be read afterwards."""

    name_prefix: str
    every_s: float = 0.25
    samples: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def between(self, start_wall: float, end_wall: float) -> float:
        """CPU seconds used from the sample nearest ``start_wall`` to the one nearest ``end_wall``."""
        def nearest(t: float) -> float:
            return min(self.samples, key=lambda s: abs(s[0] - t))[1]

        return nearest(end_wall) - nearest(start_wall) if self.samples else 0.0

    def sample(self) -> None:
        self.samples.append((time.time(), thread_cpu_seconds(self.name_prefix)))


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy since boot, summed over its cores (``/proc/stat``: user, nice,
    system, irq and softirq time; idle, iowait and steal left out)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / TICK


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system, all threads) used so far by process ``pid`` (0.0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@dataclass
class ProcessCpuSampler(ThreadCpuSampler):
    """:class:`ThreadCpuSampler` for a whole other process (a Kafka broker's JVM), by pid."""

    name_prefix: str = ""
    pid: int = 0

    def sample(self) -> None:
        self.samples.append((time.time(), process_cpu_seconds(self.pid)))


@dataclass
class TreeCpuSampler(_Periodic):
    """CPU seconds used by a process tree, per kind of process: each process's CPU time as last seen, summed. A
    process's last ``every_s`` before it exits, and a process shorter than that, are not seen: a lower bound."""

    root: int
    every_s: float = 0.25
    last: dict[int, tuple[str, float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        for pid in tree(self.root):
            seconds = process_cpu_seconds(pid)
            if seconds:
                self.last[pid] = (kind(pid, self.root), seconds)

    def by_kind(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for k, seconds in self.last.values():
            out[k] = out.get(k, 0.0) + seconds
        return out
