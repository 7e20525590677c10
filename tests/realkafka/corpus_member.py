"""One scripted consumer process for the corpus recordings (``tests/realkafka/corpus.py``).

Why a process of its own: a crash, a ``kill -9`` or a clean close must be what it is in production, the end of a
real client process, so each member the driver starts is one of these (``--count`` runs several consumers in one
process for a large group, each with its own client id, to spare the machine twenty interpreters).

It consumes with confluent-kafka (librdkafka), commits the positions of every assigned partition explicitly and
synchronously every ``--commit-every`` seconds (a paused or stuck partition is re-committed unchanged, as a client
committing its whole assignment does), and prints what it did as JSON lines on stdout (the driver adds them to
``client_events.jsonl``): assignments, revocations, losses, commits, pauses, blocks, poison records. Behaviours:

* ``--process-ms N``: each record takes N ms (a slow consumer);
* ``--block-after S --block-for B``: after S s of consuming, processing blocks for B s without polling, again and
  again (longer than ``max.poll.interval.ms``: thrown out of the group each time, no restart);
* ``--hang-after S``: processing hangs for good after S s while the client stays in the group;
* ``--pause-after S --pause-partition P``: the partition is paused after S s;
* ``--poison-after S --poison-partition P``: the next record of P after S s can never be processed: the member
  seeks back to it and retries forever;
* SIGUSR1 makes the process exit at once without closing (a crash); SIGTERM closes the consumer cleanly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

_print_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"t_ms": int(time.time() * 1000), "event": event, **fields},
                                    separators=(",", ":")) + "\n")
        sys.stdout.flush()


def _parts(tps) -> list[str]:
    return [f"{tp.topic}:{tp.partition}" for tp in tps]


class Member:
    """One consumer and its scripted behaviour, run on its own thread."""

    def __init__(self, args: argparse.Namespace, name: str, stop: threading.Event) -> None:
        self.args, self.name, self.stop = args, name, stop
        conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": name,
                "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3}
        if args.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"partition.assignment.strategy": args.assignor, "session.timeout.ms": args.session_ms,
                         "heartbeat.interval.ms": 1000, "max.poll.interval.ms": args.max_poll_ms})
        if args.instance_id:
            conf["group.instance.id"] = args.instance_id
        self.consumer = Consumer(conf)
        self.poisoned: dict[tuple[str, int], int] = {}

    def _assigned(self, consumer, tps) -> None:
        emit("assigned", member=self.name, partitions=_parts(tps))

    def _revoked(self, consumer, tps) -> None:
        emit("revoked", member=self.name, partitions=_parts(tps))

    def _lost(self, consumer, tps) -> None:
        emit("lost", member=self.name, partitions=_parts(tps))

    def run(self) -> None:
        a = self.args
        self.consumer.subscribe([a.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)
        started = time.monotonic()
        last_commit = time.monotonic()
        next_block = started + a.block_after if a.block_for else None
        paused = poison_armed = False
        while not self.stop.is_set():
            now = time.monotonic()
            if a.hang_after is not None and now - started >= a.hang_after:
                emit("hung", member=self.name, why="processing hangs for good; the client stays in the group")
                self.stop.wait()
                break
            if next_block is not None and now >= next_block:
                emit("blocked", member=self.name, seconds=a.block_for, max_poll_ms=a.max_poll_ms)
                self.stop.wait(a.block_for)
                emit("unblocked", member=self.name)
                next_block = time.monotonic() + a.block_after
            if a.pause_after is not None and not paused and now - started >= a.pause_after:
                tps = [tp for tp in self.consumer.assignment() if tp.partition == a.pause_partition]
                if tps:
                    self.consumer.pause(tps)
                    paused = True
                    emit("paused", member=self.name, partitions=_parts(tps))
            if a.poison_after is not None and not poison_armed and now - started >= a.poison_after:
                poison_armed = True
            message = self.consumer.poll(0.2)
            if message is not None and message.error() is None:
                key = (message.topic(), message.partition())
                if poison_armed and message.partition() == a.poison_partition:
                    if key not in self.poisoned:
                        self.poisoned[key] = message.offset()
                        emit("poison", member=self.name, partition=f"{key[0]}:{key[1]}", offset=message.offset())
                    # the record fails; retry it from the same offset on the next poll
                    self.consumer.seek(TopicPartition(key[0], key[1], self.poisoned[key]))
                    time.sleep(0.05)
                elif a.process_ms:
                    time.sleep(a.process_ms / 1000)
            if time.monotonic() - last_commit >= a.commit_every:
                last_commit = time.monotonic()
                self._commit()
        if not a.no_close:
            self.consumer.close()
            emit("closed", member=self.name)

    def _commit(self) -> None:
        assignment = self.consumer.assignment()
        if not assignment:
            return
        try:
            positions = []
            for tp in self.consumer.position(assignment):
                retry = self.poisoned.get((tp.topic, tp.partition))
                if retry is not None:
                    tp.offset = retry  # after a seek the position is unknown until the next fetch: commit the retry
                if tp.offset >= 0:
                    positions.append(tp)
            if positions:
                self.consumer.commit(offsets=positions, asynchronous=False)
                emit("commit", member=self.name, offsets={f"{tp.topic}:{tp.partition}": tp.offset for tp in positions})
        except KafkaException as exc:
            emit("commit_failed", member=self.name, error=str(exc.args[0]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    p.add_argument("--assignor", default="range")
    p.add_argument("--instance-id")
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--max-poll-ms", type=int, default=300000)
    p.add_argument("--commit-every", type=float, default=1.0)
    p.add_argument("--process-ms", type=float, default=0)
    p.add_argument("--block-after", type=float, default=0)
    p.add_argument("--block-for", type=float, default=0)
    p.add_argument("--hang-after", type=float)
    p.add_argument("--pause-after", type=float)
    p.add_argument("--pause-partition", type=int, default=0)
    p.add_argument("--poison-after", type=float)
    p.add_argument("--poison-partition", type=int, default=0)
    p.add_argument("--no-close", action="store_true")
    args = p.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: (emit("crash", member=args.name), os._exit(3)))
    names = [args.name] if args.count == 1 else [f"{args.name}-{i}" for i in range(args.count)]
    emit("process_up", member=args.name, pid=os.getpid(), consumers=names)
    threads = [threading.Thread(target=Member(args, n, stop).run, name=n, daemon=True) for n in names]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.2)
    emit("process_exit", member=args.name)


if __name__ == "__main__":
    main()
