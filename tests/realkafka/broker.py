"""A real Apache Kafka broker: one KRaft node (broker and controller in one process) on free loopback ports.

It is the broker a Kafka user runs, from Kafka's own jars (``install.py``), so the suite meets Kafka's group
coordinator, its ``__consumer_offsets`` writes, its transactions and its tools exactly as production does. The
broker can be stopped and started again on the same log directory (an outage, a restart), killed (a crash), or
frozen with SIGSTOP (a broker that holds connections open and answers nothing).

A broker that does not come up within its timeout is stopped and the error carries the last lines of its log, so a
failed start is a clear failure, never a hang.
"""

from __future__ import annotations

import base64
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from tests.realkafka.install import KafkaInstall, java_binary

#: Broker settings for a one-node test cluster. Replication factors of 1 (there is one node); no initial rebalance
#: delay, so a group forms as soon as its members join; small thread pools, since the suite runs on two cores.
#: Everything else is Kafka's default: 50 ``__consumer_offsets`` partitions, both group protocols.
TEST_BROKER_SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
}


class BrokerFailed(RuntimeError):
    """The broker did not start or died: the message ends with the last lines of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One KRaft node in ``workdir`` (its log directory is ``workdir/data``, its log ``workdir/broker.log``)."""

    def __init__(self, install: KafkaInstall, workdir: Path, *, settings: dict[str, str] | None = None,
                 heap: str = "768m") -> None:
        self.install = install
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "broker.log"
        self.port = free_port()
        self.controller_port = free_port()
        self.heap = heap
        self.settings = {**TEST_BROKER_SETTINGS, **(settings or {})}
        self._proc: subprocess.Popen | None = None
        self._formatted = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def version(self) -> str:
        return self.install.version

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---- life cycle ---------------------------------------------------------------------------------------------

    def start(self, timeout: float = 90) -> "KafkaBroker":
        """Formats the storage on the first start, starts the broker, and returns once it answers metadata."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        properties = self._write_properties()
        if not self._formatted:
            self._format(properties)
        log = open(self.log_path, "a")
        log.write(f"==== starting Kafka {self.version} at {time.strftime('%H:%M:%S')} ====\n")
        log.flush()
        command = [java_binary(), f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC",
                   "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                   "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                   "-cp", f"{self.install.lib}/*", "kafka.Kafka", str(properties)]
        self._proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        log.close()
        self._wait_ready(timeout)
        return self

    def stop(self, timeout: float = 30) -> None:
        """A clean shutdown (SIGTERM), as a service manager stops Kafka; killed if it does not end in time."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self.resume()
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        self._proc = None

    def kill(self) -> None:
        """``kill -9``: the broker dies without closing anything."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)
        self._proc = None

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing answers, as with a hung broker or a network partition."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)

    def restart(self, timeout: float = 90) -> "KafkaBroker":
        self.stop()
        return self.start(timeout)

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no broker log)"
        return "\n".join(text[-lines:])

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- inside ---------------------------------------------------------------------------------------------------

    def _write_properties(self) -> Path:
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **self.settings,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return path

    def _format(self, properties: Path) -> None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # "--cluster-id=ID" in one word: an id starting with "-" (1 in 64) would otherwise be read as an option
        done = self.install.run_tool("kafka.tools.StorageTool", "format", "--standalone", f"--cluster-id={cluster_id}",
                                     "-c", str(properties), timeout=120)
        if done.returncode != 0:
            raise BrokerFailed(f"kafka-storage format failed (exit {done.returncode}):\n"
                               + "\n".join((done.stdout + done.stderr).splitlines()[-15:]))
        self._formatted = True

    def _wait_ready(self, timeout: float) -> None:
        """Waits until the broker lists itself in a metadata answer; fails with its log if it dies or is late."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0, "socket.timeout.ms": 2000})
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                self._proc = None
                raise BrokerFailed(f"Kafka {self.version} exited during start-up (status {code}); "
                                   f"its log ends:\n{self.log_tail()}")
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception:  # noqa: BLE001 - not answering yet
                pass
            time.sleep(0.3)
        self.kill()
        raise BrokerFailed(f"Kafka {self.version} did not answer within {timeout:.0f} s; its log ends:\n"
                           f"{self.log_tail()}")

