"""Measured time lag without Kafka: the heartbeat's ``oldest`` rows and what the model's end-offset history makes of
a measured record. Which committed offsets the probe reads is in ``tests/kafka/test_oldest_probe.py``; the step's
``lagging`` list and its measured figure, in ``tests/job/test_step.py``. The read itself runs against a real broker
in ``tests/realkafka/test_measured_lag.py``."""

from __future__ import annotations

import json

import pytest

from streaming.model.lag import EndOffsetHistory, EndOffsetSample
from streaming.schema.heartbeat_format import OldestRecord, decode_heartbeat, encode_heartbeats

T0 = 1_767_225_600_000


# ---- the heartbeat message ---------------------------------------------------------------------------------------

def test_oldest_records_travel_with_their_partitions_end_offsets():
    ends = [("a", 0, 10, 10, 0), ("b", 0, 18, 18, 0), ("b", 1, 5, 5, 0)]
    rec = OldestRecord("b", 1, 2, 3, T0 - 9_000)
    one, two = encode_heartbeats(T0, "e", 1, ends, chunk_size=2, oldest=[rec])
    assert b'"oldest"' not in one, "messages without oldest records look as they always did"
    assert decode_heartbeat(one).oldest == ()
    assert decode_heartbeat(two).oldest == (rec,)


def test_a_heartbeat_written_before_oldest_records_existed_still_decodes():
    old = json.dumps({"v": 1, "ts": T0, "emitter": "h:1", "seq": 7, "chunk": 0, "chunks": 1,
                      "ends": [["orders", 0, 1500, 1500, 0]], "quiet": [["orders", 0, 1500, 1490]]}).encode()
    hb = decode_heartbeat(old)
    assert (hb.seq, hb.ends, hb.quiet, hb.oldest) == (
        7, (("orders", 0, 1500, 1500, 0),), (("orders", 0, 1500, 1490),), ())


@pytest.mark.parametrize("committed, covered", [(9, False), (10, True), (12, True), (13, False)])
def test_an_oldest_record_speaks_for_every_offset_from_where_it_was_read_up_to_itself(committed, covered):
    assert OldestRecord("t", 0, 10, 12, T0).covers(committed) is covered


# ---- the model's measured figure ---------------------------------------------------------------------------------


def test_a_measured_record_speaks_only_for_the_heartbeat_that_brought_it_and_survives_a_state_round_trip():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(100, 100, 0, T0, oldest=((40, 42, T0 - 10_000),)))
    assert h.measured_lag(41, T0 + 5_000) == 15.0 and h.measured_lag(43, T0) is None
    assert h.measured_lag(40, T0 - 20_000) == 0.0, "a producer clock ahead of the emitter's: never negative"
    assert EndOffsetHistory.from_state(h.to_state()).measured_lag(41, T0) == 10.0
    old = h.to_state()
    del old["oldest"]
    assert EndOffsetHistory.from_state(old).measured_lag(41, T0) is None, "a state written before: interpolated"
    h.observe(EndOffsetSample(100, 100, 0, T0 + 5_000))
    assert h.measured_lag(41, T0 + 5_000) is None
