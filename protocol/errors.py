"""The codec's one error type.

Every malformed input raises :class:`CodecError`, so a caller needs exactly one ``except`` clause to quarantine a
record. The message always says what was being read and at which byte, because "bad record" alone is useless to a
person staring at a 300-byte hex dump.
"""

from __future__ import annotations

__all__ = ["CodecError"]


class CodecError(ValueError):
    """Bytes that are not a valid encoding of what the caller asked to decode.

    ``field`` names what was being read (``"OffsetCommitValue.metadata"``), ``position`` is the byte offset inside
    the buffer being decoded where the problem was found (``None`` when not tied to one byte).
    """

    def __init__(self, reason: str, *, field: str | None = None, position: int | None = None) -> None:
        self.reason = reason
        self.field = field
        self.position = position
        parts = [reason]
        if field is not None:
            parts.append(f"field {field}")
        if position is not None:
            parts.append(f"at byte {position}")
        super().__init__(", ".join(parts) if len(parts) > 1 else reason)
