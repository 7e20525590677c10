"""Tests for streaming/model/assignors.py: Kafka's client-side partition assignors and assignment analysis.

Three layers:
1. The shared conformance cases (``tests/data/conformance/assignors.json``): exact answers for range/roundrobin,
   named properties for the sticky ones. A missing file, an unknown case field or an unknown property name
   fails the run, so nothing in the file is silently ignored.
2. Scenarios from Kafka's own assignor unit tests, restated as tables: each row says what Kafka's test asserts.
3. Hypothesis properties over random groups, subscriptions and (conflicting) ownership claims.

To add a conformance property: write ``_check_<name>(outcome, value)`` and register it in ``PROPERTY_CHECKS``.
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import captures_dir

from streaming.model.assignors import (
    STRATEGIES,
    Assignment,
    AssignmentStats,
    CooperativeAssignment,
    Move,
    TopicPartition,
    _java_string_hash,
    analyse,
    assign,
    cooperative_sticky_assign,
    movement,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)

# ----------------------------------------------------------------------------------------------------------------
# Helpers shared by all layers


def _partition_set(assignment: Mapping[str, Sequence[TopicPartition]]) -> list[TopicPartition]:
    return [tp for partitions in assignment.values() for tp in partitions]


def _subscribed_partitions(
    subscriptions: Mapping[str, Sequence[str]], partitions_per_topic: Mapping[str, int]
) -> set[TopicPartition]:
    """Every partition that some member subscribes to: what a complete assignment must cover."""
    topics = {t for topics in subscriptions.values() for t in topics}
    return {(t, p) for t in topics for p in range(partitions_per_topic.get(t, 0))}


def _assert_valid(
    result: Assignment,
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    *,
    complete: bool = True,
) -> None:
    """The invariants of every assignor: one list per member, sorted, each partition once, only to subscribers."""
    assert set(result) == set(subscriptions)
    for member, partitions in result.items():
        assert partitions == sorted(partitions), f"{member}'s list is not sorted"
        for topic, partition in partitions:
            assert topic in subscriptions[member], f"{member} got {topic}-{partition} without subscribing"
    everything = _partition_set(result)
    assert len(everything) == len(set(everything)), "a partition was assigned twice"
    wanted = _subscribed_partitions(subscriptions, partitions_per_topic)
    if complete:
        assert set(everything) == wanted
    else:
        assert set(everything) <= wanted


def _next_round_owned(first_round: Assignment) -> dict[str, list[TopicPartition]]:
    return {m: list(partitions) for m, partitions in first_round.items()}


def _assert_cooperative_safe(owned: Mapping[str, Sequence[TopicPartition]], first_round: Assignment) -> None:
    """Kafka's own check (CooperativeStickyAssignorTest.verifyCooperativeValidity): nothing is added to one member
    in the round in which it is revoked from another."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, partitions in first_round.items():
        mine = set(owned.get(member, ()))
        added |= set(partitions) - mine
        revoked |= mine - set(partitions)
    assert not added & revoked, f"handed over while still being revoked: {sorted(added & revoked)}"


def _converge(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    owned: Mapping[str, Sequence[TopicPartition]] | None,
    generations: Mapping[str, int] | None,
    *,
    max_rounds: int = 4,
) -> Assignment:
    """Play cooperative rebalances until nobody revokes anything, checking each round is safe.

    Kafka's own test allows up to four follow-up rebalances (CooperativeStickyAssignorTest).
    """
    current_owned = {m: list(p) for m, p in (owned or {}).items() if m in subscriptions}
    generation = max((generations or {}).values(), default=0)
    result = cooperative_sticky_assign(subscriptions, partitions_per_topic, owned=owned, generations=generations)
    for _ in range(max_rounds + 1):
        _assert_cooperative_safe(current_owned, result.assignment)
        if not result.revoked:
            return result.assignment
        current_owned = _next_round_owned(result.assignment)
        generation += 1
        result = cooperative_sticky_assign(
            subscriptions,
            partitions_per_topic,
            owned=current_owned,
            generations={m: generation for m in subscriptions},
        )
    pytest.fail(f"cooperative-sticky did not settle within {max_rounds} follow-up rebalances")


# ----------------------------------------------------------------------------------------------------------------
# 1. Conformance cases from tests/data/conformance/assignors.json


CONFORMANCE_FILE = captures_dir() / "conformance" / "assignors.json"

# Every field a case may carry. A new field in the file makes test_conformance_case fail until it is handled here.
CASE_FIELDS = {
    "name",
    "seed",
    "note",
    "strategy",
    "partitions_per_topic",
    "subscriptions",
    "previous_assignment",  # -> owned
    "generations",  # -> generations
    "instance_ids",  # -> instance_ids
    "expected",
    "expect_properties",
}


def _load_cases() -> list[Any]:
    """The file's cases, or one sentinel that fails: a missing file must fail the run, never skip it."""
    try:
        data = json.loads(CONFORMANCE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [pytest.param(("unreadable", f"{CONFORMANCE_FILE}: {error}"), id="conformance-file-unreadable")]
    cases = data.get("cases") if isinstance(data, dict) else None
    if not cases:
        return [pytest.param(("unreadable", f"{CONFORMANCE_FILE}: no cases"), id="conformance-file-empty")]
    return [pytest.param(case, id=str(case.get("name", index))) for index, case in enumerate(cases)]


def _partitions(values: Sequence[Sequence[Any]]) -> list[TopicPartition]:
    return [(str(t), int(p)) for t, p in values]


def _assignment_from_json(data: Mapping[str, Sequence[Sequence[Any]]] | None) -> dict[str, list[TopicPartition]]:
    return {m: _partitions(v) for m, v in (data or {}).items()}


@dataclass(frozen=True)
class Outcome:
    """What a property checker sees: the case's inputs and the assignment the strategy settled on."""

    subscriptions: Mapping[str, Sequence[str]]
    partitions_per_topic: Mapping[str, int]
    previous: Mapping[str, Sequence[TopicPartition]]
    assignment: Assignment


def _require_true(name: str, value: object) -> None:
    if value is not True:
        pytest.fail(f"property {name!r}: only the value true is defined, got {value!r}")


def _check_all_partitions_assigned(outcome: Outcome, value: object) -> None:
    """Every partition of every subscribed topic is held by exactly one member."""
    _require_true("all_partitions_assigned", value)
    everything = _partition_set(outcome.assignment)
    assert len(everything) == len(set(everything)), "a partition is assigned twice"
    assert set(everything) == _subscribed_partitions(outcome.subscriptions, outcome.partitions_per_topic)


def _check_only_subscribed_topics(outcome: Outcome, value: object) -> None:
    """No member holds a partition of a topic it does not subscribe to."""
    _require_true("only_subscribed_topics", value)
    for member, partitions in outcome.assignment.items():
        stray = [tp for tp in partitions if tp[0] not in outcome.subscriptions[member]]
        assert not stray, f"{member} holds unsubscribed {stray}"


def _check_balanced(outcome: Outcome, value: object) -> None:
    """Sticky's balance: nobody holds 2+ partitions more than a member subscribed to one of them.

    The file states this one as prose (its value is a description), so any truthy value means "check it".
    """
    if not value:
        pytest.fail(f"property 'balanced': expected a description or true, got {value!r}")
    stats = analyse(outcome.assignment, outcome.subscriptions, outcome.partitions_per_topic)
    assert stats.is_balanced, f"not balanced: loads {dict(stats.loads)}"


def _check_max_minus_min_load(outcome: Outcome, value: object) -> None:
    """The largest member load minus the smallest, over all members, equals the stated number."""
    if not isinstance(value, int) or isinstance(value, bool):
        pytest.fail(f"property 'max_minus_min_load': expected an integer, got {value!r}")
    loads = [len(p) for p in outcome.assignment.values()] or [0]
    assert max(loads) - min(loads) == value, f"loads {loads}"


def _check_keeps_previous_of_surviving_members(outcome: Outcome, value: object) -> None:
    """Every member still in the group keeps every partition it held before."""
    _require_true("keeps_previous_of_surviving_members", value)
    for member, before in outcome.previous.items():
        if member in outcome.subscriptions:
            lost = set(before) - set(outcome.assignment[member])
            assert not lost, f"{member} lost {sorted(lost)}"


PROPERTY_CHECKS: dict[str, Callable[[Outcome, object], None]] = {
    "all_partitions_assigned": _check_all_partitions_assigned,
    "only_subscribed_topics": _check_only_subscribed_topics,
    "balanced": _check_balanced,
    "max_minus_min_load": _check_max_minus_min_load,
    "keeps_previous_of_surviving_members": _check_keeps_previous_of_surviving_members,
}


@pytest.mark.parametrize("case", _load_cases())
def test_conformance_case(case: Any) -> None:
    """Exact cases must match exactly; property cases must satisfy every listed property.

    For cooperative-sticky, "expected" is the first round (what the leader sends), while properties are judged on
    the settled assignment after the follow-up rebalances, the state the properties describe.
    """
    if isinstance(case, tuple) and case[0] == "unreadable":
        pytest.fail(f"conformance file missing or unreadable: {case[1]}")
    unknown = set(case) - CASE_FIELDS
    assert not unknown, f"case fields this test does not handle yet: {sorted(unknown)}"
    assert case["strategy"] in STRATEGIES, f"unknown strategy {case['strategy']!r}"
    assert "expected" in case or "expect_properties" in case, "a case must state expected or expect_properties"

    subscriptions = case["subscriptions"]
    partitions_per_topic = case["partitions_per_topic"]
    previous = _assignment_from_json(case.get("previous_assignment"))
    generations = case.get("generations")
    result = assign(
        case["strategy"],
        subscriptions,
        partitions_per_topic,
        owned=previous or None,
        generations=generations,
        instance_ids=case.get("instance_ids"),
    )
    _assert_valid(result, subscriptions, partitions_per_topic, complete=case["strategy"] != "cooperative-sticky")

    if "expected" in case:
        assert result == _assignment_from_json(case["expected"])

    properties = case.get("expect_properties") or {}
    if case["strategy"] == "cooperative-sticky":
        result = _converge(subscriptions, partitions_per_topic, previous, generations)
    outcome = Outcome(subscriptions, partitions_per_topic, previous, result)
    for name, value in properties.items():
        check = PROPERTY_CHECKS.get(name)
        if check is None:
            pytest.fail(f"unknown property {name!r} in case {case['name']!r}: add a checker to PROPERTY_CHECKS")
        check(outcome, value)


def test_conformance_file_covers_range_roundrobin_and_sticky() -> None:
    """Guards against the file shrinking to nothing useful (every case removed would otherwise pass)."""
    data = json.loads(CONFORMANCE_FILE.read_text(encoding="utf-8"))
    strategies = {case["strategy"] for case in data["cases"]}
    assert {"range", "roundrobin", "sticky"} <= strategies


# ----------------------------------------------------------------------------------------------------------------
# 2. Scenarios from Kafka's assignor unit tests (clients/src/test/.../AbstractStickyAssignorTest.java,
#    CooperativeStickyAssignorTest.java), restated as data. Member and topic names are Kafka's: the sticky
#    assignor's choice of which members keep a bigger share follows Java HashMap order of the member ids
#    (for consumer1..4 that is consumer4, consumer3, consumer2, consumer1), so the names matter.

C1, C2, C3, C4 = "consumer1", "consumer2", "consumer3", "consumer4"


@dataclass(frozen=True)
class StickyScenario:
    id: str
    why: str
    subscriptions: dict[str, list[str]]
    partitions_per_topic: dict[str, int]
    expected: dict[str, list[TopicPartition]]
    owned: dict[str, list[TopicPartition]] | None = None
    generations: dict[str, int] | None = None
    withheld: frozenset[TopicPartition] = frozenset()
    """Partitions cooperative-sticky must keep back in the first round (Kafka's partitionsTransferringOwnership)."""


def _tps(*items: str) -> list[TopicPartition]:
    """'topic1-0' style names to partitions."""
    out = []
    for item in items:
        topic, _, partition = item.rpartition("-")
        out.append((topic, int(partition)))
    return out


STICKY_SCENARIOS = [
    StickyScenario(
        "mixed-subscriptions",
        "general algorithm: topic2 (one subscriber) is placed first, then topic1 to the least loaded in id order",
        {C1: ["topic1"], C2: ["topic1", "topic2"], C3: ["topic1"]},
        {"topic1": 3, "topic2": 2},
        {C1: _tps("topic1-0", "topic1-2"), C2: _tps("topic2-0", "topic2-1"), C3: _tps("topic1-1")},
    ),
    StickyScenario(
        "two-consumers-six-partitions",
        "equal subscriptions, nothing owned: a round-robin deal over partitions sorted by topic",
        {C1: ["topic1", "topic2"], C2: ["topic1", "topic2"]},
        {"topic1": 3, "topic2": 3},
        {C1: _tps("topic1-0", "topic1-2", "topic2-1"), C2: _tps("topic1-1", "topic2-0", "topic2-2")},
    ),
    StickyScenario(
        "owning-min-quota-expected-max",
        "both keep what they own; the one free partition goes to the first short member",
        {C1: ["topic1", "topic2"], C2: ["topic1", "topic2"]},
        {"topic1": 2, "topic2": 3},
        {C1: _tps("topic1-0", "topic2-0", "topic2-1"), C2: _tps("topic1-1", "topic2-2")},
        owned={C1: _tps("topic1-0", "topic2-1"), C2: _tps("topic1-1", "topic2-2")},
        generations={C1: 1, C2: 1},
    ),
    StickyScenario(
        "more-max-owners-than-max-slots",
        "only one member may keep 2; HashMap order visits consumer2 before consumer1, so consumer1 gives one up"
        " (its highest partition number) and it must wait for the follow-up round",
        {C1: ["topic1", "topic2"], C2: ["topic1", "topic2"], C3: ["topic1", "topic2"]},
        {"topic1": 2, "topic2": 2},
        {C1: _tps("topic1-0"), C2: _tps("topic1-1", "topic2-1"), C3: _tps("topic2-0")},
        owned={C1: _tps("topic1-0", "topic2-0"), C2: _tps("topic1-1", "topic2-1"), C3: []},
        generations={C1: 1, C2: 1, C3: 1},
        withheld=frozenset(_tps("topic2-0")),
    ),
    StickyScenario(
        "all-under-min-quota",
        "everyone keeps what they own; free partitions are dealt round-robin in member-id order",
        {C1: ["topic1", "topic2"], C2: ["topic1", "topic2"], C3: ["topic1", "topic2"]},
        {"topic1": 2, "topic2": 3},
        {C1: _tps("topic1-0", "topic2-1"), C2: _tps("topic1-1", "topic2-2"), C3: _tps("topic2-0")},
        owned={C1: _tps("topic1-0"), C2: _tps("topic1-1"), C3: []},
        generations={C1: 1, C2: 1, C3: 1},
    ),
    StickyScenario(
        "add-two-consumers",
        "the owners keep two each (lowest partition numbers across topics first); three partitions change owner",
        {m: ["topic1", "topic2"] for m in (C1, C2, C3, C4)},
        {"topic1": 3, "topic2": 4},
        {
            C1: _tps("topic1-0", "topic2-1"),
            C2: _tps("topic1-1", "topic2-0"),
            C3: _tps("topic1-2", "topic2-3"),
            C4: _tps("topic2-2"),
        },
        owned={
            C1: _tps("topic1-0", "topic1-2", "topic2-1", "topic2-3"),
            C2: _tps("topic1-1", "topic2-0", "topic2-2"),
        },
        generations={C1: 1, C2: 1, C3: 1, C4: 1},
        withheld=frozenset(_tps("topic1-2", "topic2-3", "topic2-2")),
    ),
    StickyScenario(
        "remove-two-consumers",
        "the survivors keep everything and share the leavers' partitions",
        {C3: ["topic1", "topic2"], C4: ["topic1", "topic2"]},
        {"topic1": 3, "topic2": 4},
        {C3: _tps("topic1-0", "topic1-2", "topic2-1", "topic2-3"), C4: _tps("topic1-1", "topic2-0", "topic2-2")},
        owned={
            C1: _tps("topic1-0", "topic2-1"),
            C2: _tps("topic1-1", "topic2-0"),
            C3: _tps("topic1-2", "topic2-3"),
            C4: _tps("topic2-2"),
        },
        generations={C1: 1, C2: 1, C3: 1, C4: 1},
    ),
    StickyScenario(
        "stale-generation-claims-lose",
        "consumer2 claims consumer1's partitions from an older generation: the newer claim wins",
        {C1: ["topic", "topic2"], C2: ["topic", "topic2"]},
        {"topic": 3, "topic2": 3},
        {C1: _tps("topic-0", "topic-2", "topic2-1"), C2: _tps("topic-1", "topic2-0", "topic2-2")},
        owned={C1: _tps("topic-0", "topic-2", "topic2-1"), C2: _tps("topic-0", "topic-2", "topic2-1")},
        generations={C1: 10, C2: 9},
    ),
    StickyScenario(
        "no-generation-claims-lose",
        "a member reporting no generation counts as generation -1",
        {C1: ["topic", "topic2"], C2: ["topic", "topic2"]},
        {"topic": 3, "topic2": 3},
        {C1: _tps("topic-0", "topic-2", "topic2-1"), C2: _tps("topic-1", "topic2-0", "topic2-2")},
        owned={C1: _tps("topic-0", "topic-2", "topic2-1"), C2: _tps("topic-0", "topic-2", "topic2-1")},
        generations={C1: 10},
    ),
    StickyScenario(
        "same-generation-double-claim",
        "two members of one generation claim topic-0: neither keeps it, and its new owner must wait a round",
        {m: ["topic"] for m in (C1, C2, C3)},
        {"topic": 3},
        {C1: _tps("topic-1"), C2: _tps("topic-2"), C3: _tps("topic-0")},
        owned={C1: _tps("topic-0", "topic-1"), C2: _tps("topic-0", "topic-2"), C3: []},
        generations={C1: 1, C2: 1, C3: 1},
        withheld=frozenset(_tps("topic-0")),
    ),
    StickyScenario(
        "highest-generation-wins",
        "three generations overlap; every partition stays with its newest claimant",
        {m: ["topic", "topic2", "topic3"] for m in (C1, C2, C3)},
        {"topic": 3, "topic2": 3, "topic3": 3},
        {
            C1: _tps("topic-0", "topic2-0", "topic3-0"),
            C2: _tps("topic-1", "topic2-1", "topic3-1"),
            C3: _tps("topic-2", "topic2-2", "topic3-2"),
        },
        owned={
            C1: _tps("topic-0", "topic2-0", "topic3-0"),
            C2: _tps("topic-1", "topic2-1", "topic3-1"),
            C3: _tps("topic2-1", "topic3-0", "topic3-2"),
        },
        generations={C1: 10, C2: 9, C3: 8},
    ),
    StickyScenario(
        "owned-partitions-of-unsubscribed-topic-dropped",
        "a claim on a topic nobody subscribes to is ignored",
        {"consumer": ["topic"]},
        {"topic": 2},
        {"consumer": _tps("topic-0", "topic-1")},
        owned={"consumer": _tps("topic-0", "topic-1", "other-0", "other-1")},
        generations={"consumer": 1},
    ),
]


@pytest.mark.parametrize("scenario", STICKY_SCENARIOS, ids=lambda s: s.id)
def test_sticky_matches_kafka_scenarios(scenario: StickyScenario) -> None:
    result = sticky_assign(
        scenario.subscriptions, scenario.partitions_per_topic, owned=scenario.owned, generations=scenario.generations
    )
    assert result == {m: sorted(p) for m, p in scenario.expected.items()}, scenario.why


@pytest.mark.parametrize("scenario", STICKY_SCENARIOS, ids=lambda s: s.id)
def test_cooperative_withholds_what_kafka_withholds(scenario: StickyScenario) -> None:
    result = cooperative_sticky_assign(
        scenario.subscriptions, scenario.partitions_per_topic, owned=scenario.owned, generations=scenario.generations
    )
    assert result.target == {m: sorted(p) for m, p in scenario.expected.items()}
    handed_out = set(_partition_set(result.assignment))
    assert set(_partition_set(result.target)) - handed_out == scenario.withheld, scenario.why


def test_no_reassignment_of_current_members_with_older_generations() -> None:
    """Kafka: a newcomer gets only free partitions when older-generation owners each hold a fair share."""
    topics = ["topic", "topic2", "topic3", "topic1"]
    result = sticky_assign(
        {m: topics for m in (C1, C2, C3, C4)},
        {"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3},
        owned={
            C2: _tps("topic-0", "topic2-0", "topic1-0"),
            C3: _tps("topic3-2", "topic2-2", "topic1-1"),
            C4: _tps("topic3-1", "topic-1", "topic-2"),
        },
        generations={C2: 9, C3: 8, C4: 7},
    )
    assert result[C1] == _tps("topic1-2", "topic2-1", "topic3-0")


# ----------------------------------------------------------------------------------------------------------------
# Behaviour pinned by hand


def test_unknown_strategy_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError) as error:
        assign("uniform", {"a": ["t"]}, {"t": 1})
    for name in STRATEGIES:
        assert name in str(error.value)


def test_assign_dispatches_to_each_assignor() -> None:
    subscriptions = {"a": ["t"], "b": ["t"]}
    counts = {"t": 4}
    owned = {"a": _tps("t-0", "t-1", "t-2", "t-3")}
    assert assign("range", subscriptions, counts) == range_assign(subscriptions, counts)
    assert assign("roundrobin", subscriptions, counts) == roundrobin_assign(subscriptions, counts)
    assert assign("sticky", subscriptions, counts, owned=owned) == sticky_assign(subscriptions, counts, owned=owned)
    # For cooperative-sticky the leader sends the first round: b must wait for a's revocations.
    assert assign("cooperative-sticky", subscriptions, counts, owned=owned) == {"a": _tps("t-0", "t-1"), "b": []}


def test_cooperative_member_joining_takes_two_rounds() -> None:
    """A member joining a one-member group: the owner revokes half first, the joiner gets it next round."""
    subscriptions = {"a": ["t"], "b": ["t"]}
    first = cooperative_sticky_assign(subscriptions, {"t": 4}, owned={"a": _tps("t-0", "t-1", "t-2", "t-3")})
    assert isinstance(first, CooperativeAssignment)
    assert first.assignment == {"a": _tps("t-0", "t-1"), "b": []}
    assert first.revoked == _tps("t-2", "t-3")
    assert first.target == {"a": _tps("t-0", "t-1"), "b": _tps("t-2", "t-3")}
    second = cooperative_sticky_assign(subscriptions, {"t": 4}, owned=first.assignment, generations={"a": 2, "b": 2})
    assert second.assignment == first.target
    assert second.revoked == []


def test_cooperative_partition_of_unsubscribed_topic_waits_for_revocation() -> None:
    """a drops topic u but still owns u-0: b may only get u-0 once a has revoked it (Kafka's general case)."""
    result = cooperative_sticky_assign(
        {"a": ["t"], "b": ["t", "u"]}, {"t": 2, "u": 1}, owned={"a": _tps("t-0", "u-0"), "b": _tps("t-1")}
    )
    assert result.target == {"a": _tps("t-0"), "b": _tps("t-1", "u-0")}
    assert result.assignment == {"a": _tps("t-0"), "b": _tps("t-1")}
    assert result.revoked == _tps("u-0")


def test_cooperative_revokes_claims_on_deleted_topics_without_withholding_anything() -> None:
    result = cooperative_sticky_assign({"a": ["t"]}, {"t": 1}, owned={"a": _tps("t-0", "gone-0")})
    assert result.assignment == result.target == {"a": _tps("t-0")}
    assert result.revoked == _tps("gone-0")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_members_without_topics_get_empty_lists_and_unsubscribed_topics_stay_unassigned(strategy: str) -> None:
    subscriptions = {"a": ["t", "missing"], "b": [], "c": ["missing"]}
    result = assign(strategy, subscriptions, {"t": 3, "unwatched": 5})
    assert result == {"a": _tps("t-0", "t-1", "t-2"), "b": [], "c": []}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_empty_group(strategy: str) -> None:
    assert assign(strategy, {}, {"t": 3}) == {}


def test_range_gives_the_extra_partitions_of_every_topic_to_the_same_members() -> None:
    """The known weakness of range: per-topic ranges restart at the first member for every topic."""
    result = range_assign({m: ["x", "y"] for m in ("a", "b", "c")}, {"x": 4, "y": 4})
    assert result == {"a": _tps("x-0", "x-1", "y-0", "y-1"), "b": _tps("x-2", "y-2"), "c": _tps("x-3", "y-3")}
    assert analyse(result, {m: ["x", "y"] for m in ("a", "b", "c")}, {"x": 4, "y": 4}).skew == 2


def test_static_members_sort_first_by_instance_id() -> None:
    """MemberInfo order: members with a group.instance.id first (by instance id), then the rest by member id."""
    subscriptions = {"m-a": ["t"], "m-b": ["t"], "m-c": ["t"]}
    instance_ids = {"m-a": "zone-2", "m-b": "zone-1", "m-c": None}
    assert range_assign(subscriptions, {"t": 4}, instance_ids=instance_ids) == {
        "m-b": _tps("t-0", "t-1"),
        "m-a": _tps("t-2"),
        "m-c": _tps("t-3"),
    }
    assert roundrobin_assign(subscriptions, {"t": 4}, instance_ids=instance_ids) == {
        "m-b": _tps("t-0", "t-3"),
        "m-a": _tps("t-1"),
        "m-c": _tps("t-2"),
    }
    # Without instance ids, member ids decide.
    assert range_assign(subscriptions, {"t": 4})["m-a"] == _tps("t-0", "t-1")


def test_member_ids_compare_as_java_strings() -> None:
    """Java compares UTF-16 code units: U+10000 (a surrogate pair, 0xD800...) sorts before U+FFFF."""
    low, high = "a\uffff", "a\U00010000"
    assert low < high  # Python's code-point order says the opposite of Java's
    result = range_assign({low: ["t"], high: ["t"]}, {"t": 3})
    assert result[high] == _tps("t-0", "t-1")
    assert result[low] == _tps("t-2")


def test_java_string_hash_matches_java() -> None:
    # Values of String.hashCode() in Java; "Aa"/"BB" is the classic collision.
    assert _java_string_hash("") == 0
    assert _java_string_hash("hello") == 99162322
    assert _java_string_hash("Aa") == _java_string_hash("BB") == 2112
    assert _java_string_hash("consumer-1-" + "x" * 40) < 2**32


@pytest.mark.parametrize(
    ("subscriptions", "counts", "error"),
    [
        ({"a": "t"}, {"t": 1}, TypeError),  # a bare string would silently subscribe to topics "t"
        ({"a": ["t"]}, {"t": -1}, ValueError),
        ({"a": ["t"]}, {"t": 1.5}, TypeError),
    ],
    ids=["bare-string-subscription", "negative-count", "float-count"],
)
def test_bad_input_is_rejected(subscriptions: Any, counts: Any, error: type[Exception]) -> None:
    for strategy in STRATEGIES:
        with pytest.raises(error):
            assign(strategy, subscriptions, counts)


def test_malformed_owned_partition_is_rejected() -> None:
    with pytest.raises(TypeError):
        sticky_assign({"a": ["t"]}, {"t": 1}, owned={"a": ["t-0"]})  # type: ignore[list-item]


def test_json_style_owned_partitions_are_accepted() -> None:
    assert sticky_assign({"a": ["t"], "b": ["t"]}, {"t": 2}, owned={"b": [["t", 0]]}) == {  # type: ignore[list-item]
        "a": _tps("t-1"),
        "b": _tps("t-0"),
    }


# ----------------------------------------------------------------------------------------------------------------
# Analysis


def test_analyse_heterogeneous_balanced_despite_skew() -> None:
    """c1 can only read t1, which it fully holds; c3 alone reads t3: skew 2, yet nothing can move."""
    subscriptions = {"c1": ["t1"], "c2": ["t1", "t2"], "c3": ["t1", "t2", "t3"]}
    counts = {"t1": 2, "t2": 3, "t3": 4}
    stats = analyse(sticky_assign(subscriptions, counts), subscriptions, counts)
    assert isinstance(stats, AssignmentStats)
    assert stats.is_balanced
    assert stats.skew == 2
    assert dict(stats.loads) == {"c1": 2, "c2": 3, "c3": 4}
    assert stats.unassigned == () and stats.misplaced == ()


def test_analyse_roundrobin_imbalance_is_reported() -> None:
    """seed003: roundrobin leaves c2 with 4 partitions while c1 (subscribed to t1) has 1."""
    subscriptions = {"c0": ["t0"], "c1": ["t0", "t1"], "c2": ["t0", "t1", "t2"]}
    counts = {"t0": 1, "t1": 2, "t2": 3}
    stats = analyse(roundrobin_assign(subscriptions, counts), subscriptions, counts)
    assert not stats.is_balanced
    assert stats.skew == 3
    # Per topic it looks fine: t0's one partition leaves one subscriber empty, t1 and t2 are even.
    assert dict(stats.topic_skew) == {"t0": 1, "t1": 0, "t2": 0}
    # sticky fixes exactly this case
    assert analyse(sticky_assign(subscriptions, counts), subscriptions, counts).is_balanced


def test_analyse_lists_unassigned_and_misplaced() -> None:
    subscriptions = {"a": ["t"], "b": ["u"]}
    stats = analyse({"a": _tps("t-0", "u-0"), "b": []}, subscriptions, {"t": 2, "u": 1})
    assert stats.unassigned == (("t", 1),)
    assert stats.misplaced == (("a", ("u", 0)),)
    # a holds 2, b holds 0 and subscribes to u, which a holds: moving u-0 would even them out
    assert not stats.is_balanced


def test_analyse_rejects_double_assignment() -> None:
    with pytest.raises(ValueError, match="assigned to both"):
        analyse({"a": _tps("t-0"), "b": _tps("t-0")}, {"a": ["t"], "b": ["t"]}, {"t": 1})


def test_analyse_stats_are_read_only() -> None:
    stats = analyse({"a": _tps("t-0")}, {"a": ["t"]}, {"t": 1})
    with pytest.raises(TypeError):
        stats.loads["a"] = 5  # type: ignore[index]
    hash(stats)  # usable as a key despite the mapping fields


def test_movement_classifies_every_partition() -> None:
    before = {"a": _tps("t-0", "t-1"), "b": _tps("t-2"), "gone": _tps("t-3")}
    after = {"a": _tps("t-0"), "b": _tps("t-1", "t-2"), "c": _tps("t-4")}
    result = movement(before, after)
    assert result.moved == (Move(("t", 1), "a", "b"),)
    assert result.stayed == (Move(("t", 0), "a", "a"), Move(("t", 2), "b", "b"))
    assert result.assigned == (Move(("t", 4), None, "c"),)
    assert result.unassigned == (Move(("t", 3), "gone", None),)
    assert result.changed == 3


def test_movement_rejects_double_assignment() -> None:
    with pytest.raises(ValueError):
        movement({"a": _tps("t-0"), "b": _tps("t-0")}, {})


def test_sticky_moves_less_than_roundrobin_when_a_member_leaves() -> None:
    """seed004's picture: after c1 leaves, roundrobin reshuffles, sticky only hands out c1's partitions."""
    counts = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    everyone = {m: list(counts) for m in ("c0", "c1", "c2")}
    survivors = {m: list(counts) for m in ("c0", "c2")}
    before = roundrobin_assign(everyone, counts)
    sticky_moves = movement(before, sticky_assign(survivors, counts, owned=before))
    roundrobin_moves = movement(before, roundrobin_assign(survivors, counts))
    # Only the leaver's three partitions change hands under sticky.
    assert {move.source for move in sticky_moves.moved} == {"c1"}
    assert sticky_moves.changed == 3
    # Roundrobin also moves partitions between the two survivors.
    assert {move.source for move in roundrobin_moves.moved} - {"c1"}
    assert roundrobin_moves.changed > sticky_moves.changed


# ----------------------------------------------------------------------------------------------------------------
# 3. Properties

MEMBER_IDS = ["c0", "c1", "c2", "c3", "c4", "c5", "consumer1", "a\uffff", "a\U00010000"]
TOPIC_NAMES = ["t0", "t1", "t2", "t3"]
PROPERTY_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, int]]:
    """A membership with subscriptions and partition counts.

    Half the groups have one shared subscription (Kafka's quota path for sticky), half differing ones (its
    general path). Topics may be subscribed without existing (no metadata) or exist without subscribers.
    """
    counts = draw(st.dictionaries(st.sampled_from(TOPIC_NAMES), st.integers(0, 7), max_size=len(TOPIC_NAMES)))
    members = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=6, unique=True))
    topic_lists = st.lists(st.sampled_from(TOPIC_NAMES), unique=True, max_size=len(TOPIC_NAMES))
    if draw(st.booleans()):
        shared = draw(topic_lists)
        return {m: list(shared) for m in members}, counts
    return {m: draw(topic_lists) for m in members}, counts


@st.composite
def histories(
    draw: st.DrawFn,
) -> tuple[dict[str, list[str]], dict[str, int], dict[str, list[TopicPartition]], dict[str, int]]:
    """A group plus what its members (and one departed member) claim to own, with generations.

    Claims may conflict (two claimants of one partition), be stale, or name partitions that no longer exist.
    """
    subscriptions, counts = draw(groups())
    claimants = [*subscriptions, "departed"]
    owned: dict[str, list[TopicPartition]] = defaultdict(list)
    for topic, count in counts.items():
        for partition in range(count):
            for member in draw(st.lists(st.sampled_from(claimants), max_size=2, unique=True)):
                owned[member].append((topic, partition))
    if draw(st.booleans()):
        owned[draw(st.sampled_from(claimants))].append(("deleted", 0))
    generations = draw(st.dictionaries(st.sampled_from(claimants), st.integers(1, 3)))
    return subscriptions, counts, dict(owned), generations


def _shuffled(mapping: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """Same content, another insertion order (and shuffled topic lists): results must not notice."""
    items = list(mapping.items())
    rng.shuffle(items)
    return {k: (rng.sample(list(v), len(v)) if isinstance(v, list) else v) for k, v in items}


@PROPERTY_SETTINGS
@given(group=groups(), strategy=st.sampled_from(["range", "roundrobin", "sticky"]))
def test_property_every_subscribed_partition_assigned_once_to_a_subscriber(
    group: tuple[dict[str, list[str]], dict[str, int]], strategy: str
) -> None:
    subscriptions, counts = group
    _assert_valid(assign(strategy, subscriptions, counts), subscriptions, counts)


@PROPERTY_SETTINGS
@given(history=histories())
def test_property_sticky_with_history_is_valid_and_balanced(history: Any) -> None:
    subscriptions, counts, owned, generations = history
    result = sticky_assign(subscriptions, counts, owned=owned, generations=generations)
    _assert_valid(result, subscriptions, counts)
    assert analyse(result, subscriptions, counts).is_balanced


@PROPERTY_SETTINGS
@given(group=groups(), strategy=st.sampled_from(["range", "roundrobin"]), seed=st.integers(0, 2**16))
def test_property_range_and_roundrobin_are_deterministic(
    group: tuple[dict[str, list[str]], dict[str, int]], strategy: str, seed: int
) -> None:
    subscriptions, counts = group
    rng = random.Random(seed)
    first = assign(strategy, subscriptions, counts)
    assert assign(strategy, subscriptions, counts) == first
    assert assign(strategy, _shuffled(subscriptions, rng), _shuffled(counts, rng)) == first


@PROPERTY_SETTINGS
@given(history=histories(), seed=st.integers(0, 2**16))
def test_property_sticky_is_deterministic(history: Any, seed: int) -> None:
    subscriptions, counts, owned, generations = history
    rng = random.Random(seed)
    first = sticky_assign(subscriptions, counts, owned=owned, generations=generations)
    again = sticky_assign(
        _shuffled(subscriptions, rng),
        _shuffled(counts, rng),
        owned=_shuffled(owned, rng),
        generations=_shuffled(generations, rng),
    )
    assert again == first


@PROPERTY_SETTINGS
@given(history=histories())
def test_property_sticky_rerun_on_its_own_output_moves_nothing(history: Any) -> None:
    subscriptions, counts, owned, generations = history
    result = sticky_assign(subscriptions, counts, owned=owned, generations=generations)
    rerun = sticky_assign(subscriptions, counts, owned=result)
    assert movement(result, rerun).changed == 0
    assert rerun == result


@PROPERTY_SETTINGS
@given(group=groups(), leaver=st.integers(0, 5))
def test_property_sticky_survivors_keep_everything_when_a_member_leaves_a_uniform_group(
    group: tuple[dict[str, list[str]], dict[str, int]], leaver: int
) -> None:
    """With equal subscriptions the old shares fit the new quotas, so survivors lose nothing (seed004)."""
    subscriptions, counts = group
    shared = next(iter(subscriptions.values()))
    subscriptions = {m: list(shared) for m in subscriptions}
    before = sticky_assign(subscriptions, counts)
    gone = sorted(subscriptions)[leaver % len(subscriptions)]
    survivors = {m: t for m, t in subscriptions.items() if m != gone}
    after = sticky_assign(survivors, counts, owned=before)
    for member in survivors:
        assert set(before[member]) <= set(after[member])


@PROPERTY_SETTINGS
@given(history=histories())
def test_property_cooperative_never_hands_over_what_is_being_revoked(history: Any) -> None:
    subscriptions, counts, owned, generations = history
    result = cooperative_sticky_assign(subscriptions, counts, owned=owned, generations=generations)
    current = {m: p for m, p in owned.items() if m in subscriptions}
    _assert_cooperative_safe(current, result.assignment)
    # The first round is the target minus the withheld partitions, and "revoked" is exactly what members lose.
    _assert_valid(result.target, subscriptions, counts)
    assert analyse(result.target, subscriptions, counts).is_balanced
    for member, partitions in result.assignment.items():
        assert set(partitions) <= set(result.target[member])
    lost = {tp for m, partitions in current.items() for tp in partitions if tp not in result.assignment[m]}
    assert result.revoked == sorted(lost)
    # Withholding only ever concerns partitions somebody still claims.
    claimed = {tp for partitions in current.values() for tp in partitions}
    withheld = set(_partition_set(result.target)) - set(_partition_set(result.assignment))
    assert withheld <= claimed
    # Same target as the eager sticky assignor.
    assert result.target == sticky_assign(subscriptions, counts, owned=owned, generations=generations)


@PROPERTY_SETTINGS
@given(history=histories())
def test_property_cooperative_settles_to_a_valid_balanced_assignment(history: Any) -> None:
    subscriptions, counts, owned, generations = history
    settled = _converge(subscriptions, counts, owned, generations)
    _assert_valid(settled, subscriptions, counts)
    assert analyse(settled, subscriptions, counts).is_balanced
