"""The model's typed output: events (what happened, for Delta ``group_events`` and alerts) and snapshots (what is,
for Delta ``lag``/``groups``, metrics and the CLI).

Burrow's ``core/protocol`` is the pattern: a small documented vocabulary between the model and its sinks. All are
frozen slotted dataclasses; ``offset``/``timestamp`` are the ``__consumer_offsets`` position and the record's time
(ms), so sinks can order and dedupe (Burrow's ``Order``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .catch_up import UNKNOWN, CatchUp
from .rules import Status
from .states import GroupType

__all__ = [
    "RebalanceCause",
    "Event",
    "GroupCreated",
    "GroupDeleted",
    "GroupStateChanged",
    "GroupTypeChanged",
    "MemberJoined",
    "MemberLeft",
    "StaticMemberReplaced",
    "Rebalance",
    "RebalanceStorm",
    "RollingRestart",
    "StormEnded",
    "GroupFormed",
    "ScaleOut",
    "ScaleIn",
    "VERDICT_EVENTS",
    "VERDICT_OF_KIND",
    "OffsetDeleted",
    "TransactionEnded",
    "StatusChanged",
    "Anomaly",
    "KafkaUnavailable",
    "PartitionLag",
    "TopicLag",
    "MemberSnapshot",
    "GroupSnapshot",
    "GroupVerdicts",
    "ShardSnapshot",
]


class RebalanceCause(enum.Enum):
    """Why a generation or epoch changed, as far as the records show it."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"  # left or expired: the log does not tell LeaveGroup from session expiry
    STATIC_MEMBER_REJOINED = "static_member_rejoined"  # same group.instance.id, new member id
    SUBSCRIPTION_CHANGED = "subscription_changed"
    PARTITIONS_ADDED = "partitions_added"
    METADATA_CHANGED = "metadata_changed"  # topic metadata/regex resolution changed without a partition count rise
    LEADER_CHANGED = "leader_changed"
    GROUP_EMPTIED = "group_emptied"
    PROTOCOL_MIGRATION = "protocol_migration"  # classic <-> consumer conversion
    # Cooperative (incremental) protocol: the second rebalance that hands out the partitions the first one revoked.
    # Same members, same subscriptions, more partitions assigned. Not counted towards storms.
    COOPERATIVE_FOLLOW_UP = "cooperative_follow_up"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Event:
    group_id: str
    offset: int
    timestamp: int

    @property
    def kind(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, slots=True)
class GroupCreated(Event):
    group_type: GroupType


@dataclass(frozen=True, slots=True)
class GroupDeleted(Event):
    group_type: GroupType


@dataclass(frozen=True, slots=True)
class GroupTypeChanged(Event):
    """A classic group upgraded to a consumer group or back (docs/kafka-formats.md#group-states)."""

    old: GroupType
    new: GroupType


@dataclass(frozen=True, slots=True)
class GroupStateChanged(Event):
    group_type: GroupType
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class MemberJoined(Event):
    member_id: str
    client_id: str
    host: str
    instance_id: str | None


@dataclass(frozen=True, slots=True)
class MemberLeft(Event):
    member_id: str
    client_id: str
    instance_id: str | None


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced(Event):
    """KIP-345: a static member came back with a new member id; no rebalance happens."""

    instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class Rebalance(Event):
    """A generation (classic) or group-epoch (KIP-848, share, streams) change."""

    group_type: GroupType
    generation: int
    previous_generation: int
    causes: tuple[RebalanceCause, ...]
    members_before: int
    members_after: int
    partitions_moved: int | None  # None when the assignment is not known (non-consumer protocol, no target yet)
    partitions_stayed: int | None
    seconds_since_previous: float | None
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RebalanceStorm(Event):
    """A storm began: repeated churn (see ``verdicts``); reported once, with :class:`StormEnded` when it ends."""

    rebalances: int
    window_seconds: float
    first_timestamp: int
    reason: str = ""

    verdict = "storm"


@dataclass(frozen=True, slots=True)
class StormEnded(Event):
    """The storm is over: no membership change for the quiet period. ``offset`` is the storm's last rebalance."""

    rebalances: int
    storm_seconds: float
    first_timestamp: int
    reason: str = ""

    verdict = "storm_ended"


@dataclass(frozen=True, slots=True)
class RollingRestart(Event):
    """Many rebalances in the window, but each member identity restarted at most once: a deploy, not a storm."""

    rebalances: int
    window_seconds: float
    first_timestamp: int
    restarted: tuple[str, ...]
    reason: str = ""

    verdict = "rolling_restart"


@dataclass(frozen=True, slots=True)
class _SizeVerdict(Event):
    """An episode of membership changes that settled: its rebalances, span and the size before and after."""

    rebalances: int
    window_seconds: float
    first_timestamp: int
    members_before: int
    members_after: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GroupFormed(_SizeVerdict):
    verdict = "formation"


@dataclass(frozen=True, slots=True)
class ScaleOut(_SizeVerdict):
    verdict = "scale_out"


@dataclass(frozen=True, slots=True)
class ScaleIn(_SizeVerdict):
    verdict = "scale_in"


@dataclass(frozen=True, slots=True)
class OffsetDeleted(Event):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class TransactionEnded(Event):
    """A COMMIT/ABORT marker for a producer with pending offsets (``group_id`` is "" when it touched several)."""

    producer_id: int
    committed: bool
    applied: int
    skipped: int


@dataclass(frozen=True, slots=True)
class StatusChanged(Event):
    """A partition's status changed (``old`` is None for the first status it ever had); ``reason`` says why, in
    words an operator can act on. ``offset`` is the shard's last applied offset when it was evaluated."""

    topic: str
    partition: int
    old: Status | None
    new: Status
    reason: str = ""


@dataclass(frozen=True, slots=True)
class KafkaUnavailable(Event):
    """Kafka (the group coordinator) was away from ``since_ms`` to ``back_ms``: no heartbeat and no write for
    longer than the gap. A cluster event: ``group_id`` is empty, ``offset`` is ``since_ms`` (the same in every
    shard, so the shards' rows merge into one), and ``groups`` are the groups whose members rejoined because of it,
    which are not judged as churn. Reported once the rejoin window after ``back_ms`` is over."""

    since_ms: int
    back_ms: int
    seconds: float
    groups: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Anomaly(Event):
    """A record the model could not apply (InvalidTransition, InconsistentRecord, unknown type)."""

    partition: int
    reason: str


VERDICT_EVENTS = (RebalanceStorm, StormEnded, RollingRestart, GroupFormed, ScaleOut, ScaleIn)
# ``group_events`` kinds (event class names) that carry a rebalance verdict -> the verdict's name.
VERDICT_OF_KIND: dict[str, str] = {cls.__name__: cls.verdict for cls in VERDICT_EVENTS}

# --------------------------------------------------------------------------------------------------------------
# Snapshots


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    log_end: int | None  # the end offset lag is measured against (LSO, capped by the high watermark)
    lag: int | None
    lag_seconds: float | None
    lag_seconds_lower_bound: bool  # the committed offset is older than the end-offset history: at least this much
    data_loss_risk: bool  # committed offset below the low watermark: retention overtook the consumer
    status: Status
    owner: str | None
    status_reason: str = ""
    catch_up: CatchUp = UNKNOWN  # time to work off the lag at the current rates (model/catch_up.py)
    log_start: int | None = None  # the partition's low watermark at the latest heartbeat (None before one)
    lag_seconds_method: str | None = None  # "measured" or "interpolated" (model/lag.py); None without lag_seconds


@dataclass(frozen=True, slots=True)
class GroupVerdicts:
    """The rebalance verdicts of a group so far (from the checkpointed model: they survive restarts)."""

    storms: int = 0
    rolling_restarts: int = 0
    scale_outs: int = 0
    scale_ins: int = 0
    formations: int = 0
    storm_active: bool = False
    last_verdict: str | None = None
    last_reason: str = ""
    last_verdict_ms: int | None = None
    # rebalance accounting, kept with the verdicts so it survives restarts too
    partitions_moved: int = 0  # summed over the rebalances whose assignment is known
    last_partitions_moved: int | None = None
    causes: tuple[tuple[str, int], ...] = ()  # (cause, rebalances with it), sorted by cause


@dataclass(frozen=True, slots=True)
class TopicLag:
    topic: str
    sum_lag: int | None  # None: no partition of the topic has a known end offset yet
    max_lag: int | None
    max_lag_seconds: float | None


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    assignment: tuple[tuple[str, int], ...]
    target_assignment: tuple[tuple[str, int], ...] | None
    member_epoch: int | None = None
    state: str | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    pending_revocation: tuple[tuple[str, int], ...] = ()
    uses_classic_protocol: bool = False
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    # streams groups: the (subtopology, partition) tasks the member runs and is meant to run; ``assignment`` and
    # ``target_assignment`` are the topic partitions those tasks read
    active_tasks: tuple[tuple[str, int], ...] = ()
    target_tasks: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    group_id: str
    group_type: GroupType
    state: str
    protocol_type: str | None
    assignor: str
    generation: int  # classic generation or KIP-848 group epoch
    assignment_epoch: int | None
    leader: str | None
    members: tuple[MemberSnapshot, ...]
    partitions: tuple[PartitionLag, ...]
    topics: tuple[TopicLag, ...]
    sum_lag: int | None  # None: the group has partitions but none has a known end offset yet (0 without any)
    max_lag: int | None
    max_lag_seconds: float | None
    status: Status
    rebalances: int
    last_rebalance_timestamp: int | None
    current_state_timestamp: int | None
    is_simple: bool = False
    verdicts: GroupVerdicts = GroupVerdicts()
    catch_up: CatchUp = UNKNOWN  # of the slowest partition


@dataclass(frozen=True, slots=True)
class ShardSnapshot:
    partition: int
    now_ms: int
    last_offset: int
    groups: tuple[GroupSnapshot, ...] = field(default=())
