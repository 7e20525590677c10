"""``MetricsPage``: the page served to scrapes equals prometheus_client's rendering of the same registry, byte for
byte, in both formats and gzipped; the state's series are rendered once per batch and never served stale; the job's
own series move with every scrape.

The states are the real Kafka 4.0 captures replayed through the model (``ScenarioReplay``), so the page has the
shapes the job exports, and hand-made rows where a case needs one figure to change.
"""

from __future__ import annotations

import gzip
import zlib
from functools import partial

import pytest
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from streaming.sinks.exposition import OPENMETRICS, TEXT
from streaming.sinks.metric_catalogue import MetricSpec
from streaming.sinks.metrics_page import MetricsPage, page_format
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.state_store import MetricsState
from tests.sinks.replay_rows import ScenarioReplay
from tests.sinks.scrape import NOW, group_row, partition_row

LIBRARY = {TEXT: generate_latest, OPENMETRICS: openmetrics_latest}


def _replayed(scenario: str) -> MetricsState:
    replay = ScenarioReplay(scenario)
    state = MetricsState()
    for label in replay.labels():
        replay.advance(label)
        b = replay.batch()
        state.apply_batch(b.groups, b.partitions, b.events)
    return state


def _server(*states: MetricsState, clock=lambda: NOW, compat=()) -> MetricsServer:
    server = MetricsServer(states[0], cluster="c0", partition_metrics=True, process_metrics=False, clock=clock,
                           compat=compat)
    for i, state in enumerate(states[1:], 1):
        server.add_cluster(f"c{i}", state)
    return server


@pytest.mark.parametrize("fmt", [TEXT, OPENMETRICS], ids=["0.0.4", "openmetrics"])
@pytest.mark.parametrize("scenario", ["a_classic", "c_consumer_protocol", "d_transactions"])
def test_the_page_is_the_librarys_rendering_byte_for_byte(fmt, scenario):
    server = _server(_replayed(scenario))
    page = MetricsPage(server.collector, fmt)
    assert page.render().body == LIBRARY[fmt](server.registry)
    assert page.render().body == LIBRARY[fmt](server.registry), "the kept part, served again"


@pytest.mark.parametrize("fmt", [TEXT, OPENMETRICS], ids=["0.0.4", "openmetrics"])
def test_several_clusters_share_each_family(fmt):
    server = _server(_replayed("a_classic"), _replayed("c_consumer_protocol"))
    assert MetricsPage(server.collector, fmt).render().body == LIBRARY[fmt](server.registry)


def test_the_process_series_follow_the_job_series():
    """The driver's ``process_*`` series are rendered by the library on every scrape, after groupscope's own."""
    server = _server(_replayed("a_classic"))
    process = CollectorRegistry()
    process.register(ProcessCollector(registry=None))
    body = MetricsPage(server.collector, OPENMETRICS, process).render().body.decode()
    assert body.endswith("# EOF\n") and body.count("# EOF") == 1
    assert "\nprocess_resident_memory_bytes " in body
    assert body.index("# HELP process_") > body.index("# HELP groupscope_state_bytes")


def test_a_batch_is_on_the_next_scrape():
    state = MetricsState()
    state.apply_batch([group_row("g1", sum_lag=45)], [partition_row("g1", "orders", 0, 30)])
    server = _server(state)
    page = MetricsPage(server.collector, TEXT)
    assert 'kafka_consumergroup_group_sum_lag{cluster="c0",group="g1"} 45.0\n' in page.render().body.decode()
    state.apply_batch([group_row("g1", sum_lag=7)], [partition_row("g1", "orders", 0, 7)])
    body = page.render().body.decode()
    assert 'kafka_consumergroup_group_sum_lag{cluster="c0",group="g1"} 7.0\n' in body
    assert 'kafka_consumergroup_lag{cluster="c0",group="g1",partition="0",topic="orders"} 7.0\n' in body
    assert body.encode() == generate_latest(server.registry)


def test_the_state_part_is_rendered_once_per_batch_and_the_jobs_own_on_every_scrape():
    calls = {"group": 0, "monitor": 0}

    def counted(scope):
        def samples(s):
            calls[scope] += 1
            return [([s.cluster], s.now)]
        return samples

    state = MetricsState()
    state.apply_batch([group_row("g1")])
    clock = iter(range(1000, 2000)).__next__
    server = _server(state, clock=clock)
    server.collector.metrics = (MetricSpec("x_group", "gauge", "group", ("cluster",), "h", counted("group")),
                                MetricSpec("x_age", "gauge", "monitor", ("cluster",), "h", counted("monitor")))
    page = MetricsPage(server.collector, TEXT)
    first, second = page.render().body.decode(), page.render(gzip=True).body
    assert calls == {"group": 1, "monitor": 2}
    assert 'x_group{cluster="c0"} 1000.0' in first and 'x_age{cluster="c0"} 1000.0' in first
    assert 'x_age{cluster="c0"} 1001.0' in gzip.decompress(second).decode(), "the job's series move with the clock"
    state.apply_batch([group_row("g1")])
    assert 'x_group{cluster="c0"} 1002.0' in page.render().body.decode()
    assert calls == {"group": 2, "monitor": 3}


@pytest.mark.parametrize("fmt", [TEXT, OPENMETRICS], ids=["0.0.4", "openmetrics"])
def test_a_gzip_page_is_one_gzip_stream_of_the_plain_page(fmt):
    state = _replayed("a_classic")
    server = _server(state)
    page = MetricsPage(server.collector, fmt)
    for _ in range(2):  # compressed once, then the kept compression with a new tail
        zipped = page.render(gzip=True)
        assert zipped.gzipped
        assert gzip.decompress(zipped.body) == LIBRARY[fmt](server.registry)
        inflate = zlib.decompressobj(wbits=31)  # one member, as a strict reader (Go's, with multistream off) reads
        assert inflate.decompress(zipped.body) == LIBRARY[fmt](server.registry) and inflate.eof
        assert not inflate.unused_data
    state.apply_batch([group_row("late-group")])
    assert b'group="late-group"' in gzip.decompress(page.render(gzip=True).body)


@pytest.mark.parametrize("accept, fmt", [
    ("", TEXT),
    ("text/plain;version=0.0.4", TEXT),
    ("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", OPENMETRICS),
    ("application/openmetrics-text", OPENMETRICS),
    ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8", OPENMETRICS),
    ("application/openmetrics-text;version=1.0.0;escaping=dots", None),
    ("application/openmetrics-text;version=2.0.0", None),
    ("text/plain;version=1.0.0;escaping=dots", None),
])
def test_the_negotiated_format_is_written_here_unless_names_would_change(accept, fmt):
    encoder, _ = choose_encoder(accept)
    assert page_format(encoder) is fmt


def test_a_format_this_module_does_not_know_is_left_to_the_library():
    assert page_format(partial(lambda registry: b"", escaping="underscores")) is None


def test_after_a_gzip_scrape_only_the_compressed_page_is_kept_until_a_plain_scrape_asks():
    """A Prometheus server asks for gzip only: the plain text (the larger by ~35×) is not held between its scrapes;
    a plain scrape of the same batch renders it again and gets the same page."""
    server = _server(_replayed("a_classic"))
    page = MetricsPage(server.collector, TEXT)
    plain = page.render().body
    zipped = page.render(gzip=True).body
    assert page._kept.body is None and page._kept.deflated is not None
    assert gzip.decompress(page.render(gzip=True).body) == plain == gzip.decompress(zipped)
    assert page.render().body == plain and page._kept.body is not None
