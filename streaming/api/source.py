"""What the API reads for one cluster: its name, how it is reached, and a function returning its latest state.

A :class:`ClusterSource` takes a fresh :class:`~streaming.sinks.state_store.StateView` per request, so every
response is built from one consistent copy (a batch applied mid-request changes the next response, never half of
this one). The view holds the driver's typed read model (``streaming.schema.read_model``): the API reads its
attributes and converts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from streaming.sinks.state_store import MetricsState, StateView

__all__ = ["ClusterInfo", "ClusterSource", "seconds_ms"]


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """How groupscope reaches a cluster, for Burrow's cluster detail (no secrets: names and intervals only)."""

    servers: tuple[str, ...] = ()
    client_id: str = "groupscope"
    # How often end offsets are listed (the heartbeat interval): Burrow's topic-refresh and offset-refresh.
    refresh_seconds: float = 0.0
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    sasl_username: str = ""


@dataclass(frozen=True)
class ClusterSource:
    """One cluster the API serves: ``view()`` returns its latest state (called once per request)."""

    name: str
    view: Callable[[], StateView]
    info: ClusterInfo = field(default_factory=ClusterInfo)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"a cluster name must be non-empty and without '/', got {self.name!r}")

    @classmethod
    def of_state(cls, name: str, state: MetricsState, info: ClusterInfo | None = None) -> ClusterSource:
        return cls(name, state.view, info or ClusterInfo())


def seconds_ms(seconds: float | None) -> int | None:
    """Unix seconds (the monitor's health) as the API's epoch milliseconds."""
    return None if seconds is None else round(seconds * 1000)
