"""CodecError: one exception type for every malformed input, whose text says what was read and where."""

from __future__ import annotations

import pytest

from protocol import CodecError, decode_record


def test_message_names_field_and_byte_when_known():
    err = CodecError("truncated", field="OffsetCommitValue.offset", position=12)
    assert str(err) == "truncated, field OffsetCommitValue.offset, at byte 12"
    assert (err.reason, err.field, err.position) == ("truncated", "OffsetCommitValue.offset", 12)


def test_message_is_the_bare_reason_without_context():
    err = CodecError("bad")
    assert str(err) == "bad" and err.field is None and err.position is None
    assert str(CodecError("bad", position=0)) == "bad, at byte 0"  # byte 0 is a position, not "none"
    assert str(CodecError("bad", field="key")) == "bad, field key"


def test_it_is_a_value_error_so_generic_handlers_catch_it():
    assert issubclass(CodecError, ValueError)
    with pytest.raises(ValueError):
        raise CodecError("x")


def test_the_codec_raises_it_with_field_and_position():
    with pytest.raises(CodecError) as info:
        decode_record(b"\x00\x01\x00\x05ab", None)
    assert info.value.field == "OffsetCommitKey.group" and info.value.position == 2
    assert "OffsetCommitKey.group" in str(info.value) and "at byte 2" in str(info.value)
