"""Compute consumer-group partition assignments the way Kafka's client-side assignors do, and analyse them.

Mirrors the classic-protocol assignors of the Java client: ``RangeAssignor`` ("range"), ``RoundRobinAssignor``
("roundrobin"), ``StickyAssignor`` ("sticky") and ``CooperativeStickyAssignor`` ("cooperative-sticky"), the
last two built on ``internals.AbstractStickyAssignor``. groupscope uses them to tell what a group's leader
*should* have computed for a given membership (for rebalance analysis and for the group simulator), so the
results follow Kafka's algorithms step by step. Where Kafka's sticky result depends on Java ``HashMap``
iteration order, this module reproduces that order from the member ids (see ``_hashmap_order``) and otherwise
breaks ties by member id, so every result is deterministic.

Not modelled: rack-aware assignment (KIP-881); groupscope never sees rack ids of partition replicas.

Kafka facts relied on (the seed articles disagree in places; Kafka wins):

* Only topics that somebody subscribes to and that have at least one partition take part
  (``AbstractPartitionAssignor.assign`` skips topics without metadata). Partitions of other topics stay
  unassigned; members without subscriptions get an empty list.
* Strings compare as Java's ``String.compareTo`` does, by UTF-16 code unit, which differs from Python's
  code-point order for characters above U+FFFF. Member ids begin with the client-chosen ``client.id``,
  so this can matter.
* range and roundrobin sort members by ``group.instance.id`` when one is set (static members first), then by
  member id (``AbstractPartitionAssignor.MemberInfo``). The sticky assignors sort by member id only.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "STRATEGIES",
    "Assignment",
    "AssignmentStats",
    "CooperativeAssignment",
    "Move",
    "Movement",
    "TopicPartition",
    "analyse",
    "assign",
    "cooperative_sticky_assign",
    "movement",
    "range_assign",
    "roundrobin_assign",
    "sticky_assign",
]

TopicPartition = tuple[str, int]
"""A partition as ``(topic, partition)``."""

Assignment = dict[str, list[TopicPartition]]
"""Member id to its partitions, each list sorted by (topic, partition)."""

STRATEGIES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")
"""Assignor names as Kafka's ``ConsumerPartitionAssignor.name()`` spells them."""

# Kafka's DEFAULT_GENERATION: what a member that reports no generation is taken to have.
_NO_GENERATION = -1


# --------------------------------------------------------------------------------------------------------------
# Ordering and input normalisation


def _java_order(text: str) -> bytes:
    """Sort key that orders strings like Java's ``String.compareTo``.

    Java compares UTF-16 code units; big-endian UTF-16 bytes compare the same way, prefix rule included.
    Python's own order (code points) puts U+FFFF before U+10000, Java puts it after.
    """
    return text.encode("utf-16-be", "surrogatepass")


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    units = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return value


def _hashmap_order(keys: Iterable[str]) -> list[str]:
    """The order in which a ``java.util.HashMap<String, ?>`` holding ``keys`` iterates them.

    Kafka's sticky assignor walks its members in HashMap order at the one step where order changes the result
    (which members keep a bigger share). HashMap iterates bucket by bucket: the table has the smallest
    power-of-two capacity from 16 that keeps the load factor at most 0.75, and a key's bucket is its hash with
    the high half folded into the low half, masked to the capacity. Inside a bucket Kafka sees JoinGroup order,
    which an assignor's input does not carry; member-id order stands in for it, so the result is deterministic
    and equals Kafka's whenever no two member ids share a bucket.
    """
    ordered = sorted(keys, key=_java_order)
    capacity = 16
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        value = _java_string_hash(key)
        return (value ^ (value >> 16)) & (capacity - 1)

    return sorted(ordered, key=bucket)  # stable: member-id order within a bucket


def _partition_order(tp: TopicPartition) -> tuple[bytes, int]:
    """Sort key for partitions: topic (Java order), then partition number, as Kafka's comparators do."""
    return _java_order(tp[0]), tp[1]


def _sorted_partitions(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(partitions, key=_partition_order)


def _finish(assignment: Mapping[str, Iterable[TopicPartition]]) -> Assignment:
    """Return a fresh Assignment with every list sorted, so results never depend on construction order."""
    return {member: _sorted_partitions(partitions) for member, partitions in assignment.items()}


def _as_partition(value: object) -> TopicPartition:
    """Accept ``(topic, partition)`` or a JSON-style ``[topic, partition]`` and return a tuple.

    Raises:
        TypeError: if the value is not a (str, int) pair.
    """
    if isinstance(value, (tuple, list)) and len(value) == 2:
        topic, partition = value
        if isinstance(topic, str) and isinstance(partition, int) and not isinstance(partition, bool):
            return topic, partition
    raise TypeError(f"a partition must be a (topic: str, partition: int) pair, got {value!r}")


@dataclass(frozen=True, slots=True)
class _Group:
    """One rebalance's input, cleaned up the way Kafka's AbstractPartitionAssignor presents it to an assignor."""

    members: tuple[str, ...]
    """Member ids in Java string order."""
    subscribed: Mapping[str, frozenset[str]]
    """Each member's subscription as given, unknown topics included (the sticky assignor compares these)."""
    topics_of: Mapping[str, frozenset[str]]
    """Each member's subscribed topics that exist, i.e. that appear in ``partition_counts``."""
    partition_counts: Mapping[str, int]
    """Partition count of every topic that somebody subscribes to and that has at least one partition."""
    consumers_of: Mapping[str, tuple[str, ...]]
    """Each topic of ``partition_counts`` to its subscribers, in Java order of member id."""

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return [(topic, p) for p in range(self.partition_counts[topic])]

    def all_partitions(self) -> list[TopicPartition]:
        """Every assignable partition, sorted by topic then partition."""
        return [tp for topic in sorted(self.partition_counts, key=_java_order) for tp in self.partitions_of(topic)]

    def exists(self, tp: TopicPartition) -> bool:
        return 0 <= tp[1] < self.partition_counts.get(tp[0], 0)


def _group(subscriptions: Mapping[str, Sequence[str]], partitions_per_topic: Mapping[str, int]) -> _Group:
    """Validate and normalise the assignor inputs.

    Raises:
        TypeError: if a subscription is a bare string (a common slip: "t" would subscribe to topic "t"
            only by accident) or a partition count is not an int.
        ValueError: if a partition count is negative.
    """
    for topic, count in partitions_per_topic.items():
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"partition count of topic {topic!r} must be an int, got {count!r}")
        if count < 0:
            raise ValueError(f"partition count of topic {topic!r} must be >= 0, got {count}")
    subscribed: dict[str, frozenset[str]] = {}
    for member, topics in subscriptions.items():
        if isinstance(topics, str):
            raise TypeError(f"subscription of member {member!r} must be a sequence of topics, not a string")
        subscribed[member] = frozenset(topics)
    wanted = frozenset().union(*subscribed.values())
    counts = {t: n for t, n in partitions_per_topic.items() if t in wanted and n > 0}
    members = tuple(sorted(subscribed, key=_java_order))
    topics_of = {m: frozenset(t for t in subscribed[m] if t in counts) for m in members}
    consumers_of = {t: tuple(m for m in members if t in topics_of[m]) for t in counts}
    return _Group(members, subscribed, topics_of, counts, consumers_of)


def _member_order(instance_ids: Mapping[str, str | None] | None) -> Callable[[str], tuple]:
    """Sort key for members as Kafka's ``MemberInfo.compareTo``: static members first, by group instance id.

    Kafka compares two members by instance id only when both have one; a member with an instance id sorts before
    one without; otherwise member ids decide. The member id breaks ties between equal instance ids (which the
    broker does not allow anyway), so the order is total.
    """
    ids = instance_ids or {}

    def key(member: str) -> tuple:
        instance = ids.get(member)
        if instance is None:
            return (1, b"", _java_order(member))
        return (0, _java_order(instance), _java_order(member))

    return key


# --------------------------------------------------------------------------------------------------------------
# range and roundrobin


def range_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    """Assign like Kafka's RangeAssignor: each topic on its own, in contiguous ranges.

    For every topic, its subscribers are sorted (static members by instance id first, then by member id) and
    take consecutive slices of ``n // m`` partitions; the first ``n % m`` of them take one more. Because every
    topic restarts at the first member, the same members get the extra partitions of every topic, which is the
    well-known imbalance of this assignor with many topics.

    Raises:
        TypeError: on a bare-string subscription or a non-int partition count.
        ValueError: on a negative partition count.
    """
    group = _group(subscriptions, partitions_per_topic)
    order = _member_order(instance_ids)
    result: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
    for topic, count in group.partition_counts.items():
        consumers = sorted(group.consumers_of[topic], key=order)
        if not consumers:
            continue
        base, extra = divmod(count, len(consumers))
        start = 0
        for index, member in enumerate(consumers):
            size = base + (1 if index < extra else 0)
            result[member].extend((topic, p) for p in range(start, start + size))
            start += size
    return _finish(result)


def roundrobin_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    """Assign like Kafka's RoundRobinAssignor: one circle of members dealt every partition in order.

    All subscribed partitions are sorted by (topic, partition) and dealt to the sorted members in turn. A member
    not subscribed to the partition's topic is skipped, and the position in the circle carries over from one
    topic to the next (it does not restart per topic). With unequal subscriptions this can be visibly unbalanced,
    which is why the sticky assignor exists.

    Raises:
        TypeError: on a bare-string subscription or a non-int partition count.
        ValueError: on a negative partition count.
    """
    group = _group(subscriptions, partitions_per_topic)
    circle = sorted(group.members, key=_member_order(instance_ids))
    result: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
    position = 0
    for topic, partition in group.all_partitions():
        # Terminates: the topic is in partition_counts only because some member subscribes to it.
        while topic not in group.topics_of[circle[position % len(circle)]]:
            position += 1
        result[circle[position % len(circle)]].append((topic, partition))
        position += 1
    return _finish(result)


# --------------------------------------------------------------------------------------------------------------
# sticky: shared machinery


@dataclass(frozen=True, slots=True)
class _Claims:
    """What the members say they own, after Kafka's rules for conflicting claims."""

    owner: Mapping[TopicPartition, str]
    """The member whose claim stands: the sole claimant of the newest generation among the claims.
    Only existing partitions appear."""
    previous: Mapping[TopicPartition, str]
    """Kafka's "prevAssignment": the newest claimant among members of an older generation than the group's
    newest. The sticky assignor prefers to give a partition back to it when it must move anyway."""
    claimants: Mapping[TopicPartition, frozenset[str]]
    """Every current member that claims each partition, whatever its generation or subscription. These are the
    members that revoke the partition when their new assignment lacks it."""


def _claims(
    group: _Group,
    owned: Mapping[str, Sequence[TopicPartition]] | None,
    generations: Mapping[str, int] | None,
) -> _Claims:
    """Resolve ownership claims as AbstractStickyAssignor does.

    The claim of the newest generation wins. Two members of that same generation claiming one partition cannot
    both be right, so neither keeps it. Kafka decides these conflicts in HashMap order, which with three or more
    claimants can change the outcome; here the result depends only on the generations. Claims by members that
    are no longer in the group are ignored (Kafka never sees them: they are not in the JoinGroup).

    Raises:
        TypeError: if an owned partition is not a (str, int) pair.
    """
    owned = owned or {}
    gens = generations or {}
    generation = {m: gens.get(m, _NO_GENERATION) for m in group.members}
    newest_generation = max(generation.values(), default=_NO_GENERATION)
    by_partition: dict[TopicPartition, list[str]] = defaultdict(list)
    for member in group.members:
        for tp in dict.fromkeys(_as_partition(v) for v in owned.get(member, ())):
            by_partition[tp].append(member)

    owner: dict[TopicPartition, str] = {}
    previous: dict[TopicPartition, str] = {}
    for tp, members in by_partition.items():
        if not group.exists(tp):
            continue
        newest = max(generation[m] for m in members)
        winners = [m for m in members if generation[m] == newest]
        if len(winners) == 1:
            owner[tp] = winners[0]
        older = [m for m in members if generation[m] < newest_generation]
        if older:
            previous[tp] = min(older, key=lambda m: (-generation[m], _java_order(m)))
    claimants = {tp: frozenset(members) for tp, members in by_partition.items()}
    return _Claims(owner, previous, claimants)


def _sticky_target(group: _Group, claims: _Claims) -> Assignment:
    """Balanced-first, sticky-second assignment: the common core of both sticky assignors.

    Kafka picks one of two algorithms. When every member has the same subscription (the usual case) a quota
    algorithm is exact and fast; otherwise a general search moves partitions one at a time until no member
    could take a partition from a member that has two or more partitions more.
    """
    kept: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
    for tp, member in claims.owner.items():
        kept[member].append(tp)
    subscriptions = set(group.subscribed.values())
    if len(subscriptions) <= 1:
        return _QuotaBuilder(group, kept).build()
    return _GeneralBuilder(group, kept, claims.previous).build()


class _QuotaBuilder:
    """Kafka's "constrained" sticky algorithm, used when all members subscribe to the same topics.

    Every member's share is fixed in advance: ``total // members`` partitions (min quota), and
    ``total % members`` of the members get one more (max quota). Members keep as many of their own partitions as
    their share allows, then the leftovers are dealt round-robin to members still short of their share. Nothing
    else moves, so this is both balanced and as sticky as the quotas allow.
    """

    def __init__(self, group: _Group, kept: Mapping[str, list[TopicPartition]]) -> None:
        self.group = group
        self.kept = kept

    def build(self) -> Assignment:
        members = self.group.members
        if not members:
            return {}
        partitions = self.group.all_partitions()
        min_quota, extra = divmod(len(partitions), len(members))
        max_quota = min_quota + (1 if extra else 0)

        result: dict[str, list[TopicPartition]] = {m: [] for m in members}
        with_max = 0  # members already holding max_quota
        short: list[str] = []  # below min_quota after keeping their own
        at_min: deque[str] = deque()  # at min_quota and allowed one more while with_max < extra
        # Who keeps a max-quota share goes by iteration order, which in Kafka is a HashMap's.
        for member in _hashmap_order(members):
            # Keep the lowest partition numbers across topics first, as Kafka does, so that what a member keeps
            # spreads over topics instead of draining one.
            own = sorted(self.kept[member], key=lambda tp: (tp[1], _java_order(tp[0])))
            if len(own) < min_quota:
                result[member] = own
                short.append(member)
            elif len(own) >= max_quota and with_max < extra:
                result[member] = own[:max_quota]
                with_max += 1
            else:
                result[member] = own[:min_quota]
                at_min.append(member)
        if with_max >= extra:
            at_min.clear()
        # Leftovers are then dealt in member-id order.
        short.sort(key=_java_order)
        at_min = deque(sorted(at_min, key=_java_order))

        taken = {tp for own in result.values() for tp in own}
        cursor = 0
        for tp in (tp for tp in partitions if tp not in taken):
            if short:
                cursor %= len(short)
                member = short[cursor]
                result[member].append(tp)
                if len(result[member]) == min_quota:
                    # Promoted to "at min": may still get one more once every short member is served.
                    short.pop(cursor)
                    at_min.append(member)
                else:
                    cursor += 1
            else:
                # The quotas add up to the partition count, so a member is always waiting here.
                result[at_min.popleft()].append(tp)
        return _finish(result)


class _GeneralBuilder:
    """Kafka's general sticky algorithm for members with different subscriptions.

    1. Keep every valid claim a member still subscribes to.
    2. Give each remaining partition to its least-loaded subscriber, topics with fewest subscribers first
       (they have the least freedom, so they go first).
    3. While some member could take a partition from a member holding two or more partitions more than it
       (Kafka's ``isBalanced``), move that partition: back to its previous-generation owner when that helps,
       else to the least-loaded subscriber. If nothing had to be revoked for subscription changes, first try
       moving only the partitions placed in step 2, which keeps old ownership intact where possible.

    Each move takes a partition from a member to one holding at least two fewer, which strictly lowers the sum
    of squared loads, so step 3 ends, and it ends only when the assignment is balanced. For the same reason
    Kafka's last-resort "revert if the balance score got worse" never fires, and is left out.
    """

    def __init__(
        self,
        group: _Group,
        kept: Mapping[str, list[TopicPartition]],
        previous: Mapping[TopicPartition, str],
    ) -> None:
        self.group = group
        self.previous = previous
        self.rank = {m: _java_order(m) for m in group.members}
        self.held: dict[str, set[TopicPartition]] = {m: set() for m in group.members}
        self.owner_of: dict[TopicPartition, str] = {}
        # A partition kept by a member no longer subscribed to its topic must be revoked, which is a movement
        # already; Kafka then skips the "fresh partitions only" first pass.
        self.revocation_required = False
        for member, partitions in kept.items():
            for tp in partitions:
                if tp[0] in group.topics_of[member]:
                    self._give(tp, member)
                else:
                    self.revocation_required = True
        # Where each partition sat before balancing started, to undo earlier moves instead of adding new ones.
        self.origin: dict[TopicPartition, str] = {}

    def _give(self, tp: TopicPartition, member: str) -> None:
        self.held[member].add(tp)
        self.owner_of[tp] = member

    def _least_loaded(self, topic: str) -> str:
        return min(self.group.consumers_of[topic], key=lambda m: (len(self.held[m]), self.rank[m]))

    def build(self) -> Assignment:
        group = self.group
        topic_order = sorted(group.partition_counts, key=lambda t: (len(group.consumers_of[t]), _java_order(t)))
        ordered = [tp for topic in topic_order for tp in group.partitions_of(topic)]

        fresh = [tp for tp in ordered if tp not in self.owner_of]
        for tp in fresh:
            self._give(tp, self._least_loaded(tp[0]))

        self.origin = dict(self.owner_of)
        # Partitions of a topic with a single subscriber can never move.
        movable = [tp for tp in ordered if len(group.consumers_of[tp[0]]) > 1]
        if not self.revocation_required:
            movable_set = set(movable)
            self._rebalance([tp for tp in fresh if tp in movable_set])
        self._rebalance(movable)
        return _finish(self.held)

    def _rebalance(self, partitions: list[TopicPartition]) -> None:
        moved = True
        while moved:
            moved = False
            for tp in partitions:
                source = self.owner_of[tp]
                destination = self._better_home(tp, source)
                if destination is not None:
                    self._move(tp, source, destination)
                    moved = True

    def _better_home(self, tp: TopicPartition, source: str) -> str | None:
        """A member that should take ``tp`` from ``source`` for balance, or None if none should."""
        load = len(self.held[source])
        previous = self.previous.get(tp)
        if (
            previous is not None
            and previous != source
            and tp[0] in self.group.topics_of[previous]
            and len(self.held[previous]) + 1 < load
        ):
            return previous
        candidate = self._least_loaded(tp[0])
        return candidate if len(self.held[candidate]) + 1 < load else None

    def _move(self, tp: TopicPartition, source: str, destination: str) -> None:
        """Move one partition of ``tp``'s topic from source to destination, undoing an earlier move if possible.

        The load change is the same whichever partition of the topic moves; sending back one that came from the
        destination earlier in this rebalance keeps more partitions with their original owner (Kafka's
        ``PartitionMovements`` does the same to avoid partitions circulating between two members).
        """
        returning = [q for q in self.held[source] if q[0] == tp[0] and self.origin.get(q) == destination]
        actual = min(returning, key=_partition_order) if returning else tp
        self.held[source].discard(actual)
        self._give(actual, destination)


# --------------------------------------------------------------------------------------------------------------
# sticky and cooperative-sticky


def sticky_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
) -> Assignment:
    """Assign like Kafka's StickyAssignor: as balanced as possible, then as close to the owned partitions as possible.

    Args:
        owned: what each member reports it owned before this rebalance (Kafka's ``ownedPartitions``, or the
            StickyAssignor user data). Entries of members not in ``subscriptions`` are ignored.
        generations: each member's generation when it owned those partitions; missing means -1 (no
            generation). The newest generation wins conflicting claims.

    Raises:
        TypeError: on a bare-string subscription, a non-int partition count or a malformed owned partition.
        ValueError: on a negative partition count.
    """
    group = _group(subscriptions, partitions_per_topic)
    return _sticky_target(group, _claims(group, owned, generations))


@dataclass(frozen=True, slots=True)
class CooperativeAssignment:
    """One round of the cooperative (incremental) protocol."""

    assignment: Assignment = field(hash=False)
    """What each member gets in this round: the sticky target without partitions that are changing owner."""
    revoked: list[TopicPartition] = field(hash=False)
    """Partitions that some member owned and must give up in this round, sorted."""
    target: Assignment = field(hash=False)
    """The sticky target this round works towards. The follow-up rebalance, triggered by the revocations,
    normally hands out the withheld partitions as here, but it computes afresh."""


def cooperative_sticky_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
) -> CooperativeAssignment:
    """Assign like Kafka's CooperativeStickyAssignor: the sticky target, minus partitions that change owner.

    Under the cooperative protocol members keep consuming through a rebalance, so a partition must not be
    handed to its new owner while the old owner may still be processing it. The assignor therefore withholds
    every partition whose target owner is not its rightful owner while some member still claims it; the claimant
    revokes it (its new assignment lacks it), rejoins, and the follow-up rebalance hands it over. Partitions no
    member claims are handed out at once.

    Kafka computes the withheld set slightly differently in its two algorithms; this uses one rule for both:
    withhold a partition from a member unless that member is its rightful owner (sole newest-generation claimant)
    or nobody in the group claims it. That is Kafka's rule for equal subscriptions, and it is at least as strict
    in the general case, where Kafka lets a member with a stale claim take a partition that another member
    revokes in the same round.

    Args:
        owned: each member's owned partitions (``ownedPartitions``); members not in ``subscriptions`` ignored.
        generations: each member's generation (missing means -1); the newest wins conflicting claims.

    Raises:
        TypeError: on a bare-string subscription, a non-int partition count or a malformed owned partition.
        ValueError: on a negative partition count.
    """
    group = _group(subscriptions, partitions_per_topic)
    claims = _claims(group, owned, generations)
    target = _sticky_target(group, claims)
    first_round = {
        member: [tp for tp in partitions if claims.owner.get(tp) == member or not claims.claimants.get(tp)]
        for member, partitions in target.items()
    }
    kept = {(member, tp) for member, partitions in first_round.items() for tp in partitions}
    revoked = {tp for tp, claimants in claims.claimants.items() for member in claimants if (member, tp) not in kept}
    return CooperativeAssignment(first_round, _sorted_partitions(revoked), target)


def assign(
    strategy: str,
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
    instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    """Run the assignor Kafka knows by ``strategy`` and return what the group leader would send.

    Every argument is accepted for every strategy because a Kafka subscription carries all of them; each
    assignor reads what it uses: range and roundrobin read ``instance_ids``, the sticky ones ``owned`` and
    ``generations``. For "cooperative-sticky" the result is this round's assignment (partitions changing owner
    withheld); call :func:`cooperative_sticky_assign` for the revocations and the target.

    Raises:
        ValueError: if ``strategy`` is not one of :data:`STRATEGIES`, or on a negative partition count.
        TypeError: on malformed subscriptions, partition counts or owned partitions.
    """
    if strategy == "range":
        return range_assign(subscriptions, partitions_per_topic, instance_ids=instance_ids)
    if strategy == "roundrobin":
        return roundrobin_assign(subscriptions, partitions_per_topic, instance_ids=instance_ids)
    if strategy == "sticky":
        return sticky_assign(subscriptions, partitions_per_topic, owned=owned, generations=generations)
    if strategy == "cooperative-sticky":
        return cooperative_sticky_assign(
            subscriptions, partitions_per_topic, owned=owned, generations=generations
        ).assignment
    raise ValueError(f"unknown assignment strategy {strategy!r}; expected one of: {', '.join(STRATEGIES)}")


# --------------------------------------------------------------------------------------------------------------
# Analysis


def _owners(assignment: Mapping[str, Sequence[TopicPartition]], name: str) -> dict[TopicPartition, str]:
    """Map each partition to its member.

    Raises:
        ValueError: if a partition is listed twice (under one member or two): such an assignment is not one
            Kafka can produce, and every figure derived from it would be misleading.
        TypeError: if a partition is not a (str, int) pair.
    """
    owners: dict[TopicPartition, str] = {}
    for member, partitions in assignment.items():
        for value in partitions:
            tp = _as_partition(value)
            if tp in owners:
                raise ValueError(f"{name}: partition {tp} is assigned to both {owners[tp]!r} and {member!r}")
            owners[tp] = member
    return owners


@dataclass(frozen=True, slots=True)
class AssignmentStats:
    """How evenly an assignment spreads partitions, by the measures Kafka's assignors aim at."""

    loads: Mapping[str, int] = field(hash=False)
    """Partitions held by each member (every member of the subscriptions, and any other the assignment names)."""
    topic_skew: Mapping[str, int] = field(hash=False)
    """Per topic: max - min count of that topic's partitions among the members subscribed to it. Range keeps
    this at most 1; roundrobin and sticky do not aim for it."""
    skew: int
    """max - min of ``loads`` among members that can receive a partition (subscribed to an existing topic)."""
    is_balanced: bool
    """Kafka's sticky definition: no member holds two or more partitions more than another member that is
    subscribed to the topic of one of them (moving that one partition would even them out). With differing
    subscriptions an assignment can be balanced with a large skew."""
    unassigned: tuple[TopicPartition, ...]
    """Partitions of subscribed topics that nobody holds (not considered by ``is_balanced``)."""
    misplaced: tuple[tuple[str, TopicPartition], ...]
    """(member, partition) pairs where the member is not subscribed to the topic or the partition does not
    exist. A correct assignor never produces these."""


def analyse(
    assignment: Mapping[str, Sequence[TopicPartition]],
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
) -> AssignmentStats:
    """Measure an assignment against the group's subscriptions.

    Raises:
        ValueError: if a partition is assigned twice, or on a negative partition count.
        TypeError: on malformed subscriptions, partition counts or partitions.
    """
    group = _group(subscriptions, partitions_per_topic)
    owners = _owners(assignment, "assignment")
    members = list(group.members) + sorted((m for m in assignment if m not in group.topics_of), key=_java_order)
    held: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp, member in owners.items():
        held[member].append(tp)
    loads = {m: len(held[m]) for m in members}
    topics_of = {m: group.topics_of.get(m, frozenset()) for m in members}

    topic_skew: dict[str, int] = {}
    for topic in sorted(group.partition_counts, key=_java_order):
        counts = [sum(1 for tp in held[m] if tp[0] == topic) for m in group.consumers_of[topic]]
        topic_skew[topic] = max(counts) - min(counts)
    eligible = [loads[m] for m in members if topics_of[m]]
    skew = max(eligible) - min(eligible) if eligible else 0

    held_topics = {m: {tp[0] for tp in held[m]} for m in members}
    is_balanced = not any(
        loads[giver] >= loads[taker] + 2 and held_topics[giver] & topics_of[taker]
        for giver in members
        for taker in members
    )
    unassigned = tuple(tp for tp in group.all_partitions() if tp not in owners)
    misplaced = tuple(
        (member, tp)
        for member in members
        for tp in _sorted_partitions(held[member])
        if tp[0] not in topics_of[member] or not group.exists(tp)
    )
    return AssignmentStats(
        loads=MappingProxyType(loads),
        topic_skew=MappingProxyType(topic_skew),
        skew=skew,
        is_balanced=is_balanced,
        unassigned=unassigned,
        misplaced=misplaced,
    )


class Move(NamedTuple):
    """One partition's fate between two assignments; ``source``/``target`` is None where it had/has no owner."""

    partition: TopicPartition
    source: str | None
    target: str | None


@dataclass(frozen=True, slots=True)
class Movement:
    """What changed for each partition between two assignments, each list sorted by partition."""

    moved: tuple[Move, ...]
    """Owned before and after, by different members: the costly case (state and caches move with it)."""
    stayed: tuple[Move, ...]
    """Same owner before and after."""
    assigned: tuple[Move, ...]
    """Owned after but not before (``source`` is None)."""
    unassigned: tuple[Move, ...]
    """Owned before but not after (``target`` is None)."""

    @property
    def changed(self) -> int:
        """Partitions whose owner changed in any way: moved, newly assigned or left unassigned."""
        return len(self.moved) + len(self.assigned) + len(self.unassigned)


def movement(
    before: Mapping[str, Sequence[TopicPartition]],
    after: Mapping[str, Sequence[TopicPartition]],
) -> Movement:
    """Compare two assignments partition by partition.

    Raises:
        ValueError: if either assignment lists a partition twice.
        TypeError: if a partition is not a (str, int) pair.
    """
    old = _owners(before, "before")
    new = _owners(after, "after")
    moved: list[Move] = []
    stayed: list[Move] = []
    assigned: list[Move] = []
    unassigned: list[Move] = []
    for tp in _sorted_partitions(old.keys() | new.keys()):
        source, target = old.get(tp), new.get(tp)
        move = Move(tp, source, target)
        if source is None:
            assigned.append(move)
        elif target is None:
            unassigned.append(move)
        elif source == target:
            stayed.append(move)
        else:
            moved.append(move)
    return Movement(tuple(moved), tuple(stayed), tuple(assigned), tuple(unassigned))
