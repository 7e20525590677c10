"""Kafka's own command-line tools, run from the same jars as the broker: the reference the project is held to.

* ``consumer_groups``: ``kafka-consumer-groups.sh`` (``ConsumerGroupCommand``), its tables read back into rows.
* ``dump_log``: ``kafka-dump-log.sh --offsets-decoder`` (``DumpLogSegments``) over segment files.
* ``reset_offsets`` and ``delete_group``: the operator's actions the project must follow.
"""

from __future__ import annotations

from pathlib import Path

from tests.realkafka.broker import KafkaBroker

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


class ToolFailed(RuntimeError):
    pass


def consumer_groups(broker: KafkaBroker, *args: str, timeout: float = 120) -> str:
    """Runs ``kafka-consumer-groups --bootstrap-server BROKER ARGS``; its stdout (the log goes to stderr)."""
    done = broker.install.run_tool(CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap, *args,
                                   timeout=timeout)
    if done.returncode != 0:
        raise ToolFailed(f"kafka-consumer-groups {' '.join(args)} failed (exit {done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-5:]))
    return done.stdout


def parse_tables(text: str) -> list[dict[str, str]]:
    """The rows of the tables ``kafka-consumer-groups --describe`` prints, one dict per row keyed by the column
    header. Cells never hold spaces (an empty cell is printed as ``-``), except the coordinator's ``host:port (id)``,
    whose header is two words as well, so splitting on whitespace lines cells up with headers. Lines that are not
    table rows (``Consumer group 'g' has no active members.``) are left out."""
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
        if header is not None and len(cells) == len(header):
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


def topic_id(broker: KafkaBroker, topic: str) -> str:
    """The topic's id as ``kafka-topics --describe`` prints it (``TopicId: ...``)."""
    done = broker.install.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap,
                                   "--describe", "--topic", topic, timeout=120)
    words = done.stdout.replace("\t", " ").split()
    if done.returncode != 0 or "TopicId:" not in words:
        raise ToolFailed(f"kafka-topics --describe --topic {topic} failed (exit {done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-5:]))
    return words[words.index("TopicId:") + 1]
