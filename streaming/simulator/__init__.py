"""Workload simulator (``groupscope simulate``): emulates Kafka 4.0's group coordinator and its clients and writes
the records a real broker would write to ``__consumer_offsets`` (plus real messages to the consumed topics).

Public face only; see ``simulation.py`` (entry point), ``scenarios.py`` (the named scenarios), ``coordinator.py``
(the record rules), ``clients.py`` (client behaviour), ``sinks.py`` / ``kafka_sink.py`` (where records go),
``expected.py`` (the test oracle), ``recording.py`` (a run as a recording folder, the layout of the real-Kafka
verdict recordings) and ``real_consumers.py`` (real confluent-kafka consumers against a real Kafka).
"""

from .clients import ConsumerConfig, SimConsumer, SimpleConsumer, TransactionalApp
from .clock import DEFAULT_START_MS, Scheduler
from .coordinator import Coordinator, CoordinatorConfig
from .expected import expected_groups, project
from .recording import RecordingSink, write_recording
from .scenarios import SCENARIOS, Scenario, resolve, scenario_names
from .simulation import Simulation, SimulationRunner
from .sinks import (
    Append,
    Marker,
    MemorySink,
    NullSink,
    SegmentSink,
    Sink,
    replay_entries,
)
from .topics import Topic, TopicSpec

__all__ = [
    "Append", "ConsumerConfig", "Coordinator", "CoordinatorConfig", "DEFAULT_START_MS", "Marker", "MemorySink",
    "NullSink", "RecordingSink", "SCENARIOS", "Scenario", "Scheduler", "SegmentSink", "SimConsumer", "SimpleConsumer", "Simulation",
    "SimulationRunner", "Sink", "Topic", "TopicSpec", "TransactionalApp", "expected_groups", "project", "resolve",
    "replay_entries", "scenario_names", "write_recording",
]
