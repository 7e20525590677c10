"""The plain-Python group model: replays decoded ``__consumer_offsets`` records of one partition in offset order
and rebuilds what Kafka's group coordinator knows (groups, offsets), plus lag, status and rebalances.

Public face only (re-exports); see ``shard.py`` for the entry point.
"""

from .describe import describe, render_text
from .events import GroupSnapshot, PartitionLag, RebalanceCause, ShardSnapshot
from .lag import EndOffsetSample
from .verdicts import RebalanceConfig
from .rules import Status, Thresholds
from .shard import CoordinatorModel, GroupCoordinatorShard, ModelConfig
from .states import GroupType, InconsistentRecord, InvalidTransition, ModelError

__all__ = [
    "CoordinatorModel",
    "EndOffsetSample",
    "GroupCoordinatorShard",
    "GroupSnapshot",
    "GroupType",
    "InconsistentRecord",
    "InvalidTransition",
    "ModelConfig",
    "ModelError",
    "PartitionLag",
    "RebalanceCause",
    "RebalanceConfig",
    "ShardSnapshot",
    "Status",
    "Thresholds",
    "describe",
    "render_text",
]
