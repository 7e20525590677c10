"""How ``groupscope replay`` writes a timeline for a person (``text_lines``): partitions that changed the same way
at the same moment share one line with their numbers as ranges, each group ends with a summary, and on a terminal a
reason wraps at word boundaries with a figure kept beside its unit. The command end to end, on real recordings, is
``tests/verdicts/test_replay_command.py``."""

from __future__ import annotations

from streaming.commands.replay import REASON_MIN_WIDTH, _ranges, text_lines
from streaming.offline.recording.replay import TimelineEntry

T0 = 1_767_225_600_000


def _part(t_s: float, partition: int, verdict: str, previous: str | None = "OK", topic: str = "orders",
          group: str = "billing", reason: str = "behind and growing") -> TimelineEntry:
    return TimelineEntry(T0 + int(t_s * 1000), group, "partition", topic, partition, verdict, previous, reason)


def _group(t_s: float, verdict: str, group: str = "billing", reason: str = "3 rebalances in 20 s") -> TimelineEntry:
    return TimelineEntry(T0 + int(t_s * 1000), group, "group", None, None, verdict, None, reason)


def test_partition_numbers_read_as_ranges():
    assert _ranges([5, 0, 1, 2, 3]) == "0-3,5"
    assert _ranges([7]) == "7"
    assert _ranges([2, 2, 3, 9, 10, 12]) == "2-3,9-10,12"
    assert _ranges([]) == ""


def test_partitions_that_changed_together_share_a_line():
    entries = [_part(12.5, p, "WARN") for p in (0, 1, 2, 3, 5)] + [_part(12.5, 4, "STALL"),
                                                                     _part(30, 0, "OK", "WARN", reason="caught up")]
    lines = text_lines(entries, T0)
    changes = lines[:lines.index("")]
    assert len(changes) == 3
    assert changes[0].split() == ["12.5", "s", "billing", "orders:0-3,5", "OK", "->", "WARN", "behind", "and",
                                  "growing"]
    assert "orders:4" in changes[1] and "OK -> STALL" in changes[1]
    assert changes[2].lstrip().startswith("30.0 s") and "WARN -> OK" in changes[2]


def test_each_group_ends_with_its_verdicts_and_how_its_partitions_ended():
    entries = [_group(5, "storm"), _part(6, 0, "WARN"), _part(6, 1, "WARN"), _part(8, 1, "OK", "WARN"),
               _group(40, "storm_ended"), _group(41, "rolling_restart", group="audit")]
    summary = text_lines(entries, T0)[-2:]
    assert summary == ["audit: rebalance verdicts rolling_restart; partitions at the end: none",
                       "billing: rebalance verdicts storm, storm_ended; partitions at the end: 1 OK, 1 WARN"]
    # Without end offsets, statuses were not judged: the summary does not pretend they ended anywhere.
    assert text_lines([_group(5, "storm")], T0, statuses_judged=False)[-1] == "billing: rebalance verdicts storm"


def test_times_are_seconds_from_the_recordings_start():
    (line, *_) = text_lines([_group(0, "storm")], T0 - 90_000)
    assert line.startswith("    90.0 s  billing")


def test_on_a_terminal_a_reason_wraps_under_its_first_word_keeping_figures_with_units():
    reason = ("the group rebalanced 4 times in 45 s while members kept joining and leaving, each time moving "
              "partitions between 3 members")
    (entry,) = [_group(1, "storm", reason=reason)]
    lines = text_lines([entry], T0, width=120)[:-2]
    assert len(lines) > 1 and all(len(line) <= 120 for line in lines)
    start = lines[0].index("the group")
    assert all(line[:start].strip() == "" and line[start] != " " for line in lines[1:])
    assert " ".join(" ".join(line.split()) for line in lines).endswith(" ".join(reason.split()))


def test_a_figure_and_its_unit_are_never_split_across_lines():
    reason = "rebalanced 4 times in 45 s; 12 members left within 90 s, then 3 members joined within 2 min"
    for width in range(60, 160):
        lines = text_lines([_group(1, "storm", reason=reason)], T0, width=width)[:-2]
        for this, after in zip(lines, lines[1:]):
            assert not (this.rstrip()[-1:].isdigit() and after.split()[0] in ("s", "min", "members")), \
                (width, this, after)


def test_on_a_narrow_terminal_the_reason_goes_under_its_change():
    reason = "a reason long enough that it cannot fit beside the columns of a narrow terminal at all, so it wraps"
    lines = text_lines([_group(1, "storm", reason=reason)], T0, width=70)[:-2]
    columns_width = len("     1.0 s  billing  (group)          storm                        ")
    assert 70 - columns_width < REASON_MIN_WIDTH  # the case under test
    assert lines[0].split() == ["1.0", "s", "billing", "(group)", "storm"]
    assert all(line.startswith(" " * 12) and line[12] != " " for line in lines[1:])
    assert " ".join(" ".join(line.split()) for line in lines[1:]) == reason


def test_into_a_pipe_every_change_is_one_line():
    reason = "word " * 60
    lines = text_lines([_group(1, "storm", reason=reason.strip())], T0, width=None)
    assert len(lines) == 3 and lines[0].endswith(reason.strip())
