"""What one shard's step is told: the root of the ``model:`` section's knobs.

``StepConfig`` wraps the model's own configuration (:class:`~streaming.model.shard.ModelConfig`) with the knobs of
the step that runs it (:mod:`streaming.job.step`). It lives beside the model rather than beside the step because the
configuration loader (``streaming/config.py``) derives the ``model:`` section from it, and the Kafka clients and
sinks read that loader: declared in ``job``, it would make ``job`` a dependency of the parts ``job`` itself uses.
It is plain data (knob declarations and their bounds), so nothing of the step comes with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streaming.model.knobs import MS, check_bounds, internal, knob
from streaming.model.shard import ModelConfig

__all__ = ["OFFSETS_TOPIC", "StepConfig"]

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class StepConfig:
    """What one shard's step is told: the model's configuration, and the step's own knobs of the ``model:``
    section (:mod:`streaming.model.knobs`)."""

    heartbeat_topic: str = internal("groupscope-heartbeat", "the heartbeat section's topic")
    offsets_topic: str = internal(OFFSETS_TOPIC, "the source section's offsets_topic")
    snapshot_interval_ms: int = knob(10_000, MS, "every group of the shard re-evaluated at least this often", gt=0)
    lag_interval_ms: int = knob(60_000, MS, "partition rows written to the lag table this often", gt=0)
    # partition-level metrics: the partitions of every re-evaluated group go to the partitions output
    partition_rows_every_snapshot: bool = internal(False, "follows from metrics.partition_metrics and api.enabled: "
                                                   "whoever reads partition rows on the driver")
    caught_up_slack: int = knob(0, "records", "records behind the offsets topic's last stable offset still counted "
                                "as caught up", ge=0)
    # A batch whose heartbeats were read after its records were planned looks behind for a moment on a busy or
    # loaded job, and statuses gated on being caught up must not flap with it. A job that really falls behind for
    # longer is reported behind.
    caught_up_grace_ms: int = knob(30_000, MS, "once caught up, a shard stays so while it was caught up within "
                                   "this long", ge=0)
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        check_bounds(self)
