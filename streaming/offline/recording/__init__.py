"""Recordings of a real cluster (``__consumer_offsets`` records plus end-offset samples) and their replay through
the job's own per-shard step, as a timeline of verdicts.

A recording is a folder holding ``records.jsonl`` (or ``segments/``, the offsets partitions as on a broker's disk)
and ``end_offsets.jsonl`` (what the heartbeat carries, sampled on the recording's own clock). See
docs/recordings.md for the format.
"""

from streaming.offline.recording.load import Recording, RecordingError, load_recording
from streaming.offline.recording.replay import TimelineEntry, replay_recording, timeline_from_events

__all__ = ["Recording", "RecordingError", "load_recording", "TimelineEntry", "replay_recording",
           "timeline_from_events"]
