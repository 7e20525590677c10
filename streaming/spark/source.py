"""A Spark Python Data Source that tails Kafka topics by explicit offset ranges: ``format("groupscope_kafka")``.

The offsets live in Spark's checkpoint (as with Spark's own Kafka source, whose output columns this mirrors, so the
built-in ``kafka`` source can replace it where its jar is on the classpath). The driver side asks Kafka for end
offsets (the last stable offset for read_committed topics) and plans ranges; executors read them with
:func:`streaming.kafka.reader.read_ranges` and hand Spark Arrow batches.

Options (Spark lower-cases option keys): ``topics`` (comma list), ``startingoffsets`` (``earliest`` | ``latest``),
``maxoffsetspertrigger``, ``readtasks``, ``unlimitedtopics`` (comma list read in full every batch),
``isolation`` (``read_committed``), ``timeoutseconds``, ``packed`` (``true``: one row per partition chunk with the
records as an Arrow IPC payload, see :mod:`streaming.job.packed`; ``false``: a row per record, the columns of Spark's
Kafka source), ``deferredtopics`` (comma list, packed only: a range of these topics is one row naming the range,
and whoever processes the row reads its records), and ``kafka.<librdkafka setting>`` passed through.
"""

from __future__ import annotations

from typing import Iterator

from pyspark.sql.datasource import DataSource

from ..kafka.planning import to_json_offsets
from streaming.job.packed import PACKED_DDL
from .ranges import RangeReader, RangeTask

__all__ = ["KafkaRangeSource", "SOURCE_DDL"]

SOURCE_DDL = "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp"


class KafkaRangeSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "groupscope_kafka"

    def schema(self) -> str:
        return PACKED_DDL if _packed(self.options) else SOURCE_DDL

    def streamReader(self, schema):  # noqa: N802 (Spark's name)
        return _Reader(self.options)


class _Reader(RangeReader):
    def __init__(self, options) -> None:
        opts = _lower_keys(options)
        self.kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
        if "bootstrap.servers" not in self.kafka:
            raise ValueError("groupscope_kafka source needs the option kafka.bootstrap.servers")
        self.topics = [t.strip() for t in opts.get("topics", "").split(",") if t.strip()]
        if not self.topics:
            raise ValueError("groupscope_kafka source needs the option topics")
        self.starting = opts.get("startingoffsets", "earliest")
        if self.starting not in ("earliest", "latest"):
            raise ValueError(f"startingOffsets must be earliest or latest, got {self.starting!r}")
        self.max_rows = int(opts["maxoffsetspertrigger"]) if opts.get("maxoffsetspertrigger") else None
        self.read_tasks = int(opts.get("readtasks", "2"))
        self.unlimited = frozenset(t.strip() for t in opts.get("unlimitedtopics", "").split(",") if t.strip())
        self.isolation = opts.get("isolation", "read_committed")
        self.timeout_s = float(opts.get("timeoutseconds", "300"))
        self.packed = _packed(opts)
        # Topics whose ranges travel as range markers: the shard steps read those records themselves.
        self.deferred = frozenset(t.strip() for t in opts.get("deferredtopics", "").split(",") if t.strip())
        if self.deferred and not self.packed:
            raise ValueError("deferredTopics needs packed=true")
        self.reader = opts.get("reader", "fetch")
        if self.reader not in ("fetch", "consumer"):
            raise ValueError(f"reader must be fetch or consumer, got {self.reader!r}")
        self._access = None
        self._target = None  # Trigger.AvailableNow: end offsets frozen at query start

    # ---- driver side ----------------------------------------------------------------------------------------

    def _kafka_access(self):
        if self._access is None:
            from ..kafka.client import KafkaAccess

            self._access = KafkaAccess(self.kafka)
        return self._access

    def _ends(self, *, earliest: bool = False) -> dict[tuple[str, int], int]:
        access = self._kafka_access()
        parts = [(t, p) for t in self.topics for p in access.partitions(t)]
        ends = access.end_offsets(parts, low=earliest)
        if earliest:
            return {tp: max(0, e.low_watermark) for tp, e in ends.items()}
        read_committed = self.isolation == "read_committed"
        return {tp: (e.last_stable if read_committed else e.high_watermark) for tp, e in ends.items()}

    def initialOffset(self) -> dict:  # noqa: N802
        from ..kafka.client import KafkaUnavailable

        try:
            return to_json_offsets(self._ends(earliest=self.starting == "earliest"))
        except KafkaUnavailable:
            return {}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._ends()

    def ends(self):
        from ..kafka.client import KafkaUnavailable

        try:
            return self._target if self._target is not None else self._ends()
        except KafkaUnavailable:
            return None  # no news while the cluster is unreachable

    # ---- executor side --------------------------------------------------------------------------------------

    def read(self, partition: RangeTask) -> Iterator:
        from streaming.job.packed import pack, pack_partitions, pack_ranges

        from ..kafka.range_read import read_range_chunks

        ranges = list(partition.ranges)
        if self.deferred:
            markers = [r for r in ranges if r.topic in self.deferred and r.size > 0]
            if markers:
                yield pack_ranges(markers)
            ranges = [r for r in ranges if r.topic not in self.deferred]
        for key, batch in read_range_chunks(self.kafka, ranges, timeout_s=self.timeout_s, isolation=self.isolation,
                                            reader=self.reader):
            if not self.packed:
                yield batch
            elif key is not None:
                yield pack_partitions([(key[0], key[1], batch)])
            else:
                yield from pack(batch)


def _lower_keys(options) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def _packed(options) -> bool:
    value = _lower_keys(options).get("packed", "false").lower()
    if value not in ("true", "false"):
        raise ValueError(f"packed must be true or false, got {value!r}")
    return value == "true"
