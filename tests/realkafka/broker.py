"""A real Apache Kafka broker: one KRaft node (broker and controller in one process) on free loopback ports, or a
small cluster of brokers with a controller of their own.

It is the broker a Kafka user runs, from Kafka's own jars (``install.py``), so the suite meets Kafka's group
coordinator, its ``__consumer_offsets`` writes, its transactions and its tools exactly as production does. The
broker can be stopped and started again on the same log directory (an outage, a restart), killed (a crash), or
frozen with SIGSTOP (a broker that holds connections open and answers nothing).

A broker that does not come up within its timeout is stopped and the error carries the last lines of its log, so a
failed start is a clear failure, never a hang.

A cluster (:class:`KafkaCluster`) is brokers and one controller, each a process of its own, the controller quorum
named up front (``controller.quorum.voters``) and every node's storage formatted with one cluster id: Kafka's
static-quorum set-up, which needs no node to start first. With the controller apart, stopping or killing a broker
never touches the quorum: the controller fences the broker and moves the leadership of its partitions,
``__consumer_offsets`` included, to the other brokers, a few seconds after the broker's session lapses. (With
combined nodes, a killed broker that was also the active controller takes a controller election with it, and the
new controller fences the dead broker only after a session of its own: a slower move, and a different incident.)
"""

from __future__ import annotations

import base64
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
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


#: Settings a three-broker cluster adds: every internal topic and every auto-created topic on all three brokers, and
#: a write acknowledged by two of them, so one broker may be away without stopping commits or transactions. Few
#: offsets partitions (Kafka's default is 50), so a group's coordinator is one of a handful of partition leaders.
#: Brokers fenced 4 s after their last heartbeat (9 s by default), so a killed broker's partitions move soon.
CLUSTER_SETTINGS = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "broker.heartbeat.interval.ms": "1000",
    "broker.session.timeout.ms": "4000",
}


class BrokerFailed(RuntimeError):
    """The broker did not start or died: the message ends with the last lines of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    """A random cluster id in Kafka's form (a UUID in URL-safe base64 without padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(frozen=True)
class StaticQuorum:
    """The controller quorum every node of a cluster is given: the voters (``id@host:port,...``) and the cluster id
    each node's storage is formatted with."""

    voters: str
    cluster_id: str


class KafkaBroker:
    """One KRaft node in ``workdir`` (its log directory is ``workdir/data``, its log ``workdir/broker.log``).

    Alone (``quorum`` None) it is a cluster of its own: formatted ``--standalone``, its own controller the quorum.
    With a ``quorum`` it is node ``node_id`` of a cluster whose controllers are the quorum's voters, in the
    ``roles`` given (``"broker"``, ``"controller"`` or both); a controller's ``controller_port`` must be the one
    the voters name for it. A controller alone has no client listener: it is ready once its port listens."""

    def __init__(self, install: KafkaInstall, workdir: Path, *, settings: dict[str, str] | None = None,
                 heap: str = "768m", node_id: int = 1, quorum: StaticQuorum | None = None,
                 controller_port: int | None = None, jvm_options: tuple[str, ...] = ("-XX:+UseG1GC",),
                 roles: str = "broker,controller") -> None:
        self.install = install
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "broker.log"
        self.node_id = node_id
        self.quorum = quorum
        self.roles = roles
        self.port = free_port()
        self.controller_port = controller_port if controller_port is not None else free_port()
        self.heap = heap
        self.jvm_options = jvm_options
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
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self) -> None:
        """Formats the storage on the first start and starts the process, without waiting for it: the nodes of a
        cluster are all launched before any is waited for, since no broker answers until the controller quorum
        runs."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        properties = self._write_properties()
        if not self._formatted:
            self._format(properties)
        log = open(self.log_path, "a")
        log.write(f"==== starting Kafka {self.version} at {time.strftime('%H:%M:%S')} ====\n")
        log.flush()
        command = [java_binary(), f"-Xms{self.heap}", f"-Xmx{self.heap}", *self.jvm_options,
                   "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                   "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                   "-cp", f"{self.install.lib}/*", "kafka.Kafka", str(properties)]
        self._proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        log.close()

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
        quorum = ({"controller.quorum.voters": self.quorum.voters} if self.quorum is not None
                  else {"controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}"})
        listeners = {"broker": f"PLAINTEXT://127.0.0.1:{self.port}",
                     "controller": f"CONTROLLER://127.0.0.1:{self.controller_port}"}
        roles = self.roles.split(",")
        lines = {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            **quorum,
            "listeners": ",".join(listeners[r] for r in roles),
            **({"advertised.listeners": listeners["broker"]} if "broker" in roles else {}),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **self.settings,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return path

    def _format(self, properties: Path) -> None:
        # A static quorum's voters are in the properties: Kafka refuses --standalone beside them.
        if self.quorum is None:
            how, cluster_id = ["--standalone"], new_cluster_id()
        else:
            how, cluster_id = [], self.quorum.cluster_id
        # "--cluster-id=ID" in one word: an id starting with "-" (1 in 64) would otherwise be read as an option
        done = self.install.run_tool("kafka.tools.StorageTool", "format", *how, f"--cluster-id={cluster_id}",
                                     "-c", str(properties), timeout=120)
        if done.returncode != 0:
            raise BrokerFailed(f"kafka-storage format failed (exit {done.returncode}):\n"
                               + "\n".join((done.stdout + done.stderr).splitlines()[-15:]))
        self._formatted = True

    def wait_ready(self, timeout: float) -> None:
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
                if "broker" not in self.roles.split(","):
                    socket.create_connection(("127.0.0.1", self.controller_port), timeout=2).close()
                    return
                if self.node_id in admin.list_topics(timeout=2).brokers:
                    return
            except Exception:  # noqa: BLE001 - not answering yet
                pass
            time.sleep(0.3)
        self.kill()
        raise BrokerFailed(f"Kafka {self.version} did not answer within {timeout:.0f} s; its log ends:\n"
                           f"{self.log_tail()}")



class KafkaCluster:
    """``size`` brokers (node ids 1 to ``size``, in ``workdir/node-N``) and one controller (node id 0, in
    ``workdir/controller``), the controller the whole static quorum; :data:`CLUSTER_SETTINGS` on top of the
    one-node test settings, and ``settings`` on top of both.

    Each broker is a :class:`KafkaBroker`, to be stopped, killed, frozen or started on its own (:meth:`node`); three
    brokers keep their replicated topics with any one away. The processes run with small heaps, the serial
    collector and the first JIT tier only: four JVMs share two cores with the job under test, and start-up is most
    of what they spend."""

    def __init__(self, install: KafkaInstall, workdir: Path, *, size: int = 3, settings: dict[str, str] | None = None,
                 heap: str = "384m",
                 jvm_options: tuple[str, ...] = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")) -> None:
        controller_port = free_port()
        quorum = StaticQuorum(f"0@127.0.0.1:{controller_port}", new_cluster_id())
        merged = {**CLUSTER_SETTINGS, **(settings or {})}
        self.controller = KafkaBroker(install, Path(workdir) / "controller", settings=merged, heap="256m",
                                      node_id=0, quorum=quorum, controller_port=controller_port,
                                      jvm_options=jvm_options, roles="controller")
        self.nodes = [KafkaBroker(install, Path(workdir) / f"node-{i}", settings=merged, heap=heap, node_id=i,
                                  quorum=quorum, jvm_options=jvm_options, roles="broker")
                      for i in range(1, size + 1)]

    @property
    def bootstrap(self) -> str:
        """Every node's listener, as a client of a real cluster is configured."""
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def version(self) -> str:
        return self.nodes[0].version

    def node(self, node_id: int) -> KafkaBroker:
        return self.nodes[node_id - 1]

    def start(self, timeout: float = 120) -> "KafkaCluster":
        """Formats and launches every node at once (formatting is a JVM of its own per node), then waits for the
        controller to listen and each broker to list itself; if one fails, all are stopped and its error raised."""
        from concurrent.futures import ThreadPoolExecutor

        deadline = time.monotonic() + timeout
        everyone = [self.controller, *self.nodes]
        try:
            with ThreadPoolExecutor(len(everyone)) as pool:
                list(pool.map(KafkaBroker.launch, everyone))
            for n in everyone:
                n.wait_ready(max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """The brokers at once (each one's controlled shutdown takes a round with the controller), then the
        controller: stopped first, it would leave the brokers' shutdowns waiting on it until they time out."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(KafkaBroker.stop, self.nodes))
        self.controller.stop()

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
