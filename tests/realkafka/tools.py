"""Kafka's own command-line tools, run from the same jars as the broker: the reference the project is held to.

* ``consumer_groups``, ``share_groups``, ``streams_groups``: ``kafka-consumer-groups.sh``, ``kafka-share-groups.sh``
  and ``kafka-streams-groups.sh``, their tables read back into rows.
* ``dump_log``: ``kafka-dump-log.sh --offsets-decoder`` (``DumpLogSegments``) over segment files.
* ``reset_offsets`` and ``delete_group``: the operator's actions the project must follow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.protocol.conformance import parse_dump_line
from tests.realkafka.broker import KafkaBroker

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"


class ToolFailed(RuntimeError):
    pass


def consumer_groups(broker: KafkaBroker, *args: str, timeout: float = 120) -> str:
    """Runs ``kafka-consumer-groups --bootstrap-server BROKER ARGS``; its stdout (the log goes to stderr)."""
    return group_tool(broker, CONSUMER_GROUP_COMMAND, *args, timeout=timeout)


def share_groups(broker: KafkaBroker, *args: str, timeout: float = 120) -> str:
    """Runs ``kafka-share-groups --bootstrap-server BROKER ARGS``; its stdout."""
    return group_tool(broker, SHARE_GROUP_COMMAND, *args, timeout=timeout)


def streams_groups(broker: KafkaBroker, *args: str, timeout: float = 120) -> str:
    """Runs ``kafka-streams-groups --bootstrap-server BROKER ARGS``; its stdout."""
    return group_tool(broker, STREAMS_GROUP_COMMAND, *args, timeout=timeout)


def group_tool(broker: KafkaBroker, main_class: str, *args: str, timeout: float = 120) -> str:
    done = broker.install.run_tool(main_class, "--bootstrap-server", broker.bootstrap, *args, timeout=timeout)
    if done.returncode != 0:
        raise ToolFailed(f"{main_class.rsplit('.', 1)[1]} {' '.join(args)} failed (exit {done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-5:]))
    return done.stdout


def parse_tables(text: str, *, rest: str | None = None) -> list[dict[str, str]]:
    """The rows of the tables ``kafka-consumer-groups --describe`` prints, one dict per row keyed by the column
    header. Cells never hold spaces (an empty cell is printed as ``-``), except the coordinator's ``host:port (id)``,
    whose header is two words as well, so splitting on whitespace lines cells up with headers. Lines that are not
    table rows (``Consumer group 'g' has no active members.``) are left out. ``rest`` names a last column whose
    cells hold spaces (``kafka-streams-groups``' ``ASSIGNMENTS``): it takes what the other columns leave."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            header = None
            continue
        cells = line.split()
        if cells[0] == "GROUP":
            header = cells
            continue
        if header is not None and rest is not None and header[-1] == rest and len(cells) >= len(header) - 1:
            head = len(header) - 1
            rows.append({**dict(zip(header[:head], cells[:head])), rest: " ".join(cells[head:])})
        elif header is not None and len(cells) == len(header):
            rows.append(dict(zip(header, cells)))
    return [_join_coordinator(r) for r in rows]


def _join_coordinator(row: dict[str, str]) -> dict[str, str]:
    if "COORDINATOR" in row:
        row = dict(row)
        row["COORDINATOR (ID)"] = f"{row.pop('COORDINATOR')} {row.pop('(ID)')}"
    return row


def describe_all(broker: KafkaBroker) -> dict[str, list[dict[str, str]]]:
    """The three views of every group: ``--state --verbose``, ``--members --verbose`` and ``--offsets``."""
    return {
        "state": parse_tables(consumer_groups(broker, "--describe", "--all-groups", "--state", "--verbose")),
        "members": parse_tables(consumer_groups(broker, "--describe", "--all-groups", "--members", "--verbose")),
        "offsets": parse_tables(consumer_groups(broker, "--describe", "--all-groups", "--offsets")),
    }


def reset_offsets(broker: KafkaBroker, group: str, topic: str, to_offset: int) -> str:
    return consumer_groups(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset",
                           str(to_offset), "--execute")


def delete_group(broker: KafkaBroker, group: str) -> str:
    return consumer_groups(broker, "--delete", "--group", group)


def dump_log(broker: KafkaBroker, files: list[Path], timeout: float = 600) -> str:
    """``kafka-dump-log --offsets-decoder --print-data-log`` over ``files``: Kafka's decoding of the records."""
    done = broker.install.run_tool(broker.install.dump_log_class, "--offsets-decoder", "--print-data-log",
                                   "--files", ",".join(str(f) for f in files), timeout=timeout)
    if done.returncode != 0:
        raise ToolFailed(f"kafka-dump-log failed (exit {done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-5:]))
    return done.stdout


def dump_records(text: str) -> dict[tuple[int, int], tuple]:
    """``kafka-dump-log`` output over several files: ``(partition, offset) -> (key, payload)`` or a marker."""
    out, partition = {}, None
    for line in text.splitlines():
        if line.startswith("Dumping "):
            partition = int(Path(line.split(" ", 1)[1]).parent.name.rsplit("-", 1)[1])
            continue
        parsed = parse_dump_line(line)
        if parsed is not None:
            out[(partition, parsed[0])] = parsed[1]
    return out


def decode_differences(broker: KafkaBroker, segments: Path) -> tuple[int, list[str]]:
    """``groupscope decode --format kafka`` over the ``__consumer_offsets-N`` folders in ``segments`` against
    ``kafka-dump-log --offsets-decoder`` over the same files: ``(records Kafka printed, every difference)``."""
    expected = dump_records(dump_log(broker, sorted(segments.glob("__consumer_offsets-*/*.log"))))
    done = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "decode", "--format", "kafka",
                           str(segments)], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        return len(expected), [f"groupscope decode exited {done.returncode}: {done.stderr.strip()[-500:]}"]
    got = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        got[(row["partition"], row["offset"])] = ("marker", (row["endTxnMarker"], row["coordinatorEpoch"])) \
            if "endTxnMarker" in row else (row["key"], row["payload"])
    problems = [] if len(got) == len(done.stdout.splitlines()) else ["a record was printed twice"]
    problems += [f"{k}: missing" for k in sorted(set(expected) - set(got))]
    problems += [f"{k}: not in Kafka's dump" for k in sorted(set(got) - set(expected))]
    problems += [f"{k}: Kafka {json.dumps(expected[k])}, groupscope {json.dumps(got[k])}"
                 for k in sorted(set(expected) & set(got)) if json.dumps(expected[k]) != json.dumps(got[k])]
    return len(expected), problems


def topic_id(broker: KafkaBroker, topic: str) -> str:
    """The topic's id as ``kafka-topics --describe`` prints it (``TopicId: ...``)."""
    done = broker.install.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap,
                                   "--describe", "--topic", topic, timeout=120)
    words = done.stdout.replace("\t", " ").split()
    if done.returncode != 0 or "TopicId:" not in words:
        raise ToolFailed(f"kafka-topics --describe --topic {topic} failed (exit {done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-5:]))
    return words[words.index("TopicId:") + 1]
