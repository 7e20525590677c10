"""CPU quotas for benchmark processes, from Linux cgroups: a Spark worker confined to a fixed share of a core
stands for a machine of its own.

On a small machine every executor added competes with the others, the driver and the Python workers for the same
cores, so adding one measures contention, not scale-out. Giving each worker (and everything it launches) its own
CPU quota, smaller than the machine divided among them, makes each executor bring a fixed capacity, as a node of a
cluster does; whether throughput then grows with executors is a property of the job (does the driver, outside the
quotas, keep up?), which is what a scale-out benchmark is after.

Both cgroup layouts are handled: v1 (a ``cpu`` hierarchy with ``cpu.cfs_quota_us``) and v2 (``cpu.max``). Creating
cgroups needs root, or a delegated subtree; :func:`quota_groups` raises :class:`QuotaUnavailable` with the reason
otherwise, so the benchmark can say why it runs without quotas.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

PERIOD_US = 100_000  # the kernel's default CFS period
V1_CPU = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")


class QuotaUnavailable(RuntimeError):
    """No writable cgroup CPU controller on this machine (the message says why)."""


def _controller_root() -> tuple[Path, str]:
    """(directory new cgroups go under, layout) for the CPU controller."""
    if (V1_CPU / "cpu.cfs_quota_us").exists():
        return V1_CPU, "v1"
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return V2_ROOT, "v2"
    raise QuotaUnavailable("no cgroup CPU controller (neither /sys/fs/cgroup/cpu nor cpu in cgroup v2's controllers)")


def _set_quota(group: Path, layout: str, cores: float) -> None:
    quota = int(cores * PERIOD_US)
    if layout == "v1":
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")


def _remove(group: Path) -> None:
    """Remove a cgroup once its processes are gone (the kernel refuses while any is left; they may take a moment
    to be reaped after a kill)."""
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


@contextmanager
def quota_groups(count: int, cores: float, prefix: str = "groupscope-bench") -> Iterator[list[Path]]:
    """``count`` fresh cgroups, each limited to ``cores`` cores; yields their ``cgroup.procs`` files (write a pid
    there to move that process in; its children inherit the cgroup). Removed on exit."""
    root, layout = _controller_root()
    groups: list[Path] = []
    try:
        for i in range(count):
            group = root / f"{prefix}-{os.getpid()}-{i}"
            try:
                group.mkdir()
                _set_quota(group, layout, cores)
            except OSError as exc:
                raise QuotaUnavailable(f"cannot create a cgroup under {root}: {exc.strerror} (needs root)") from exc
            groups.append(group)
        yield [g / "cgroup.procs" for g in groups]
    finally:
        for group in groups:
            _remove(group)


def throttled_share(procs_file: Path) -> float:
    """The share of scheduler periods in which the cgroup used up its quota and was held back (``cpu.stat``'s
    ``nr_throttled`` / ``nr_periods``, same names in v1 and v2): near 0, the quota did not bind."""
    stat = dict(line.split(" ", 1) for line in (procs_file.parent / "cpu.stat").read_text().splitlines())
    periods = int(stat.get("nr_periods", 0))
    return int(stat.get("nr_throttled", 0)) / periods if periods else 0.0
