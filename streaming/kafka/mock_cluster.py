"""librdkafka's mock Kafka cluster, started in-process through ctypes: a real Kafka-protocol broker over TCP.

No Apache Kafka broker can run on the machines groupscope is developed and tested on, but the librdkafka shipped
inside confluent-kafka contains a mock cluster that speaks the Kafka protocol (produce, fetch, list offsets,
consumer groups, commits). Its C API is exported from the bundled shared library, so we open that library with
ctypes and drive it. Other processes (Spark's Python workers) reach it over 127.0.0.1 like any broker.

The mock cluster does not write ``__consumer_offsets`` itself, but accepts produced records on a topic of that name:
the simulator writes real encoded coordinator records there. It cannot create topics through CreateTopics, so
:meth:`MockCluster.create_topic` calls the C API.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from typing import Iterable

__all__ = ["MockCluster", "MockClusterError"]

_RD_KAFKA_PRODUCER = 0
_TOPIC_ALREADY_EXISTS = 36  # Kafka error code


class MockClusterError(RuntimeError):
    pass


def _find_library() -> str:
    import confluent_kafka

    package_dir = os.path.dirname(confluent_kafka.__file__)
    candidates = sorted(glob.glob(os.path.join(os.path.dirname(package_dir), "confluent_kafka.libs", "librdkafka*.so*")))
    candidates += sorted(glob.glob(os.path.join(package_dir, ".dylibs", "librdkafka*.dylib")))
    if not candidates:
        raise MockClusterError("the librdkafka bundled with confluent-kafka was not found; the mock cluster needs it")
    return candidates[0]


_lib_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def _library() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(_find_library())
            lib.rd_kafka_conf_new.restype = ctypes.c_void_p
            lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_size_t]
            lib.rd_kafka_conf_set.restype = ctypes.c_int
            lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
            lib.rd_kafka_new.restype = ctypes.c_void_p
            lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
            lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
            lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
            lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
            lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
            lib.rd_kafka_mock_broker_set_down.argtypes = [ctypes.c_void_p, ctypes.c_int32]
            lib.rd_kafka_mock_broker_set_down.restype = ctypes.c_int
            lib.rd_kafka_mock_broker_set_up.argtypes = [ctypes.c_void_p, ctypes.c_int32]
            lib.rd_kafka_mock_broker_set_up.restype = ctypes.c_int
            lib.rd_kafka_err2str.argtypes = [ctypes.c_int]
            lib.rd_kafka_err2str.restype = ctypes.c_char_p
            _lib = lib
        return _lib


class MockCluster:
    """An in-process mock Kafka cluster. Use as a context manager, or call :meth:`close`."""

    def __init__(self, brokers: int = 1) -> None:
        lib = _library()
        self._lib = lib
        conf = lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        # A producer handle that never connects anywhere: it only hosts the mock cluster's threads.
        for key, value in ((b"bootstrap.servers", b""), (b"log_level", b"0")):
            lib.rd_kafka_conf_set(conf, key, value, errstr, len(errstr))
        self._rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise MockClusterError(f"cannot create the librdkafka handle: {errstr.value.decode(errors='replace')}")
        self._cluster = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._cluster:
            lib.rd_kafka_destroy(self._rk)
            raise MockClusterError("librdkafka refused to start a mock cluster")
        self.bootstrap_servers: str = lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()
        self.brokers = brokers

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, replication_factor)
        if err == _TOPIC_ALREADY_EXISTS:
            return  # idempotent: several components may ensure the same topic
        if err:
            raise MockClusterError(f"cannot create topic {name}: {self._lib.rd_kafka_err2str(err).decode()}")

    def create_topics(self, topics: Iterable[tuple[str, int]]) -> None:
        for name, partitions in topics:
            self.create_topic(name, partitions)

    def set_broker_down(self, broker_id: int = 1) -> None:
        """Takes a broker offline (connections refused) to test how clients ride out an outage."""
        self._lib.rd_kafka_mock_broker_set_down(self._cluster, broker_id)

    def set_broker_up(self, broker_id: int = 1) -> None:
        self._lib.rd_kafka_mock_broker_set_up(self._cluster, broker_id)

    def close(self) -> None:
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> "MockCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
