"""What the API reads for one cluster: a name usable as one path segment, a fresh view per call, connection facts
without secrets, and the monitor's Unix seconds as the API's epoch milliseconds."""

from __future__ import annotations

import dataclasses

import pytest

from streaming.api.source import ClusterInfo, ClusterSource, seconds_ms
from streaming.sinks.state_store import MetricsState


@pytest.mark.parametrize("name", ["", "east/1", "/"])
def test_a_cluster_name_must_be_one_path_segment(name):
    with pytest.raises(ValueError, match="non-empty and without '/'"):
        ClusterSource(name, MetricsState().view)


def test_of_state_reads_the_states_latest_view_on_each_call():
    state = MetricsState()
    source = ClusterSource.of_state("east", state)
    before = source.view()
    state.apply_batch([{"group_id": "g", "status": "OK"}])
    assert set(before.groups) == set() and set(source.view().groups) == {"g"}
    assert source.info == ClusterInfo()


def test_the_default_connection_facts_are_plaintext_with_no_credentials():
    info = ClusterInfo()
    assert (info.servers, info.client_id, info.security_protocol) == ((), "groupscope", "PLAINTEXT")
    assert (info.sasl_mechanism, info.sasl_username, info.refresh_seconds) == ("", "", 0.0)
    # Names and intervals only: no field can hold a password.
    assert not [f.name for f in dataclasses.fields(ClusterInfo) if "pass" in f.name or "secret" in f.name]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.client_id = "other"  # type: ignore[misc]


@pytest.mark.parametrize("seconds,ms", [(None, None), (0.0, 0), (1_795_311_000.5, 1_795_311_000_500),
                                        (1.0004, 1000), (1.0006, 1001), (-2.5, -2500)])
def test_seconds_become_whole_milliseconds_rounded_to_the_nearest(seconds, ms):
    assert seconds_ms(seconds) == ms
