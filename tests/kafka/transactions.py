"""A partition that ends on a transaction marker, written through a real Kafka-protocol broker (librdkafka's mock
cluster): shared by the tail probe's tests and the heartbeat emitter's feature test."""

from __future__ import annotations

from confluent_kafka import Producer


def transactional_tail(bootstrap: str) -> int:
    """One plain record, then a committed transaction of 5 records: offsets 0-5, the COMMIT marker at 6."""
    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    plain.produce("payments", b"p", partition=0)
    plain.flush(10)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tails", "log_level": 3})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce("payments", b"t%d" % i, partition=0)
    txn.commit_transaction(30)
    return 7
