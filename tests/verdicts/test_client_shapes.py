"""Statuses and verdicts on client behaviours the real recordings do not show, replayed through the job's step from
synthetic recordings (``synthetic.py``). Each test names the client behaviour it is written from."""

from __future__ import annotations

from tests.verdicts.synthetic import SyntheticRecording, group_verdicts, stretches


def test_java_consumer_too_slow_for_its_backlog_is_warn_not_stall(tmp_path):
    """Kafka's Java consumer with auto-commit commits the position of every assigned partition at each commit,
    changed or not, and its fetcher hands out one partition's buffered records (up to 1 MiB) before the next's.
    A member that processes 25 of the 100 records/s produced over 4 partitions therefore moves one partition at a
    time while the other three are committed unchanged, poll after poll. That is a slow consumer (WARN, as
    librdkafka's slow consumer in the real recordings), not four stalled partitions."""
    group, topic, rate, chunk = "java-slow", "orders", 25, 10_000
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})
    rec.classic_generation(5.0, group, 1, {"consumer-java-slow-1-a": ("consumer-java-slow-1", {topic: [0, 1, 2, 3]})})
    position, buffered, t = [0, 0, 0, 0], [], 5.5
    while t < 400:
        for p in range(4):  # the auto-commit of every assigned partition at this poll
            rec.commit(t, group, topic, p, position[p])
        for p in range(4):  # a fetch for every partition without buffered records
            if not any(x[0] == p for x in buffered) and int(rate * t) > position[p]:
                buffered.append([p, min(int(rate * t), position[p] + chunk)])
        taken = 0
        while taken < 500 and buffered:  # max.poll.records, from the first buffered partition on
            p, end = buffered[0]
            n = min(500 - taken, end - position[p])
            position[p] += n
            taken += n
            if position[p] >= end:
                buffered.pop(0)
        t += max(1.0, taken / rate)
    timeline = rec.replay(tmp_path, 400, lambda s: {(topic, p): int(rate * s) for p in range(4)})
    for p in range(4):
        seen = stretches(timeline, group, f"{topic}:{p}", 400)
        assert "STALL" not in {s for _, _, s in seen}, seen
        assert seen[-1][2] == "WARN" and seen[-1][0] <= 100, seen


def test_checkpoint_committer_working_off_a_backlog_is_not_warn(tmp_path):
    """A stream processor commits its offsets on its checkpoints, once a minute. Back after an outage with 90,000
    records to read, it processes 300 records/s against 100 produced: every commit takes 12,000 off its lag. Half a
    minute after a commit its lag is higher than half a minute before (nothing committed in between), which is the
    saw-tooth of its cadence, not lag growing."""
    group, topic = "checkpointing", "orders"
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})
    rec.classic_generation(3.0, group, 1, {"job-1": ("job", {topic: [0]})})
    end = [90_000 + 100 * s for s in range(1002)]
    position = 0
    for s in range(1001):
        position = min(end[s], position + 300)
        if s % 60 == 5:
            rec.commit(s + 0.2, group, topic, 0, position)
    timeline = rec.replay(tmp_path, 1000, lambda s: {(topic, 0): end[int(s)]})
    seen = stretches(timeline, group, f"{topic}:0", 1000)
    assert all(status == "OK" for start, _, status in seen if start >= 130), seen
    assert seen[-1][2] == "OK", seen


def test_second_member_with_the_default_client_id_is_a_scale_out(tmp_path):
    """Consumers started as separate processes on one host with the client's default id (Java names every one
    ``consumer-<group>-1``, librdkafka ``rdkafka``): the second joins beside the first under the same name. It is
    an added member, not a restart, once the first one stays."""
    group, topic, client = "default-ids", "orders", "consumer-default-ids-1"
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})
    rec.classic_generation(5.0, group, 1, {"m-a": (client, {topic: [0, 1, 2, 3]})})
    rec.classic_generation(100.0, group, 2, {"m-a": (client, {topic: [0, 1]}), "m-b": (client, {topic: [2, 3]})})
    for s in range(6, 300):
        for p in range(4):
            rec.commit(s + 0.5, group, topic, p, s * 10)
    timeline = rec.replay(tmp_path, 300, lambda s: {(topic, p): int(s) * 10 for p in range(4)})
    assert [v for _, v in group_verdicts(timeline, group)] == ["formation", "scale_out"], group_verdicts(timeline,
                                                                                                        group)


def test_java_consumers_with_the_default_client_id_restarted_one_by_one_are_a_rolling_restart(tmp_path):
    """Four Java consumers, each its own JVM on one host, all named ``consumer-<group>-1`` by the client's default,
    with the cooperative-sticky assignor (classic protocol). A deploy closes and restarts them one at a time, 15 s
    apart, starting a minute after they formed the group. Each restart is three generations: the member leaves (its
    partitions go to the others at once), the new instance joins and gets nothing while the partitions to move are
    revoked, and the owners' immediate rejoin hands them over. Four members named alike are four members, not one
    crash-looping consumer: a rolling restart, never a storm."""
    group, topic, client = "coop-default-ids", "orders", "consumer-coop-default-ids-1"
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})
    members = [f"{client}-{k}" for k in range(4)]
    assignment = {m: [2 * k, 2 * k + 1] for k, m in enumerate(members)}
    generation = 1

    def write(t: float) -> None:
        nonlocal generation
        rec.classic_generation(t, group, generation, {m: (client, {topic: ps}) for m, ps in assignment.items()})
        generation += 1

    write(5.0)
    t = 60.0
    for k in range(4):
        orphaned = assignment.pop(members[k])
        others = list(assignment)
        for i, p in enumerate(orphaned):
            assignment[others[i % len(others)]] = assignment[others[i % len(others)]] + [p]
        write(t)  # the member left
        members[k] = f"{client}-{k}-restarted"
        revoked = []
        for m in list(assignment):
            if len(assignment[m]) > 2:
                revoked.append(assignment[m][-1])
                assignment[m] = assignment[m][:-1]
        assignment[members[k]] = []
        write(t + 3.0)  # its new instance joined; partitions to move revoked
        assignment[members[k]] = revoked
        write(t + 3.3)  # the follow-up generation hands them over
        t += 15.0
    for s in range(0, 300, 5):
        for p in range(8):
            rec.commit(s + 6.1, group, topic, p, (s + 6) * 10)
    timeline = rec.replay(tmp_path, 300, lambda s: {(topic, p): int(s) * 10 for p in range(8)})
    verdicts = group_verdicts(timeline, group)
    assert [v for _, v in verdicts] == ["formation", "rolling_restart"], verdicts


def test_java_consumers_killed_soon_after_every_assignment_are_a_storm(tmp_path):
    """Three Java consumers (classic protocol, range, the default 45 s session), each its own JVM on one host named
    ``consumer-<group>-1``, die (OOM-killed, SIGKILL) a few seconds after every assignment and are restarted at
    once. Each restart joins the rebalance its predecessor's death left pending, which completes only when the dead
    instances' sessions expire: the log shows a generation every ~47 s replacing all three, and then two more
    consumers added. A crash loop of the whole group: a storm, never a scale-out."""
    group, topic, client = "oom-loop", "orders", "consumer-oom-loop-1"
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})

    def crew(k: int) -> dict[str, tuple[str, dict[str, list[int]]]]:
        return {f"{client}-{k}-{i}": (client, {topic: [2 * i, 2 * i + 1]}) for i in range(3)}

    rec.classic_generation(3.0, group, 1, crew(0))
    rec.classic_generation(52.9, group, 2, crew(1))
    rec.classic_generation(99.8, group, 3, crew(2))
    added = {f"{client}-x-{i}": (client, {topic: []}) for i in range(2)}
    rec.classic_generation(104.6, group, 4, {**crew(2), **added})
    for k, t in enumerate((5.0, 55.0, 102.0)):  # each crew commits once before it dies
        for p in range(6):
            rec.commit(t, group, topic, p, int(t) * 10)
    timeline = rec.replay(tmp_path, 200, lambda s: {(topic, p): int(s) * 10 for p in range(6)})
    verdicts = group_verdicts(timeline, group)
    assert [v for _, v in verdicts][:2] == ["formation", "storm"], verdicts
    assert verdicts[1][0] <= 105, verdicts
    assert "scale_out" not in [v for _, v in verdicts], verdicts


def _one_partition_held(tmp_path, group: str, client: str, partitions: int, commit_every: float,
                        recommit_held: bool = True):
    """One member holding ``partitions`` partitions of a topic produced at 20 records/s each; from 60 s to 180 s
    partition 0 is held (paused, or its poison record retried) while the member keeps the others current, and
    every ``commit_every`` seconds it commits the position of each (the held one unchanged, or not at all unless
    ``recommit_held``). Returns the status stretches of partition 0 and of the others."""
    topic = "orders"
    rec = SyntheticRecording()
    rec.classic_generation(2.0, group, 0, {})
    rec.classic_generation(5.0, group, 1, {f"{client}-a": (client, {topic: list(range(partitions))})})
    t = 6.0
    while t < 300:
        held = 60 <= t < 180
        if recommit_held or not held:
            rec.commit(t, group, topic, 0, 20 * 60 if held else int(20 * t))
        for p in range(1, partitions):
            rec.commit(t, group, topic, p, int(20 * t))
        t += commit_every
    timeline = rec.replay(tmp_path, 300, lambda s: {(topic, p): int(20 * s) for p in range(partitions)})
    return (stretches(timeline, group, f"{topic}:0", 300),
            [x for p in range(1, partitions) for x in stretches(timeline, group, f"{topic}:{p}", 300)])


def test_one_paused_partition_beside_a_current_one_is_stall(tmp_path):
    """librdkafka's ``pause()`` of one of a member's two partitions (or a poison record retried on it) while the
    member keeps consuming the other, committing the positions of both every 5 s (``commit()``), as the paused
    member of stalled_consumer does with all of its partitions. The member keeps its other partition current, so
    the held one is not waiting its turn behind a backlog: it is stalled."""
    held, others = _one_partition_held(tmp_path, "pause-one", "rdkafka", 2, 5.0)
    assert {s for a, b, s in held if a < 170 and b > 90} == {"STALL"}, held
    assert held[-1][2] == "OK" and held[-1][0] <= 200, held
    assert {s for _, _, s in others} == {"OK"}, others


def test_java_auto_commit_with_one_partition_held_is_stall(tmp_path):
    """The same with Kafka's Java consumer and auto-commit (every 5 s, every assigned partition's position) on four
    partitions: one held on a record that fails again and again, the other three consumed as they are produced."""
    held, others = _one_partition_held(tmp_path, "java-held", "consumer-java-held-1", 4, 5.0)
    assert {s for a, b, s in held if a < 170 and b > 90} == {"STALL"}, held
    assert held[-1][2] == "OK" and held[-1][0] <= 200, held
    assert {s for _, _, s in others} == {"OK"}, others


def test_one_partition_held_and_not_committed_beside_current_ones_is_stop(tmp_path):
    """librdkafka's ``commit()`` commits only the partitions whose position changed: a member that pauses one of its
    three partitions (or retries a poison record on it) and keeps the other two current commits nothing for the
    held one. No commit while its lag grows, beside partitions the same member keeps current: STOP, not a slow
    member busy elsewhere."""
    held, others = _one_partition_held(tmp_path, "held-quiet", "rdkafka", 3, 1.0, recommit_held=False)
    assert {s for a, b, s in held if a < 170 and b > 100} == {"STOP"}, held
    assert held[-1][2] == "OK" and held[-1][0] <= 200, held
    assert {s for _, _, s in others} == {"OK"}, others
