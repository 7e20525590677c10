"""What answers at a bootstrap address that librdkafka connected to but got nothing from.

librdkafka reports a listener that is not Kafka poorly: an HTTP server or a proxy shows as "Invalid response size
1213486160 ... increase receive.message.max.bytes" (those four bytes are ``HTTP``), a TLS listener as a
disconnect "during ApiVersion", and a server that never answers as a bare "Broker transport failure". When the
cluster cannot be reached and the connection itself did not fail, groupscope asks the first bootstrap address
once itself, with the smallest request every Kafka broker answers before any authentication (ApiVersions v0),
and says in words what answered instead.

Only for plaintext connections: with ``security.protocol`` set to SSL or SASL_SSL, a plaintext probe would only
find the TLS it is configured for.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["api_versions_request", "classify_answer", "probe_listener", "first_address"]

_API_VERSIONS = 18
_CORRELATION_ID = 0x67730001  # arbitrary; a Kafka answer echoes it
_TLS_RECORD_TYPES = {0x15: "an alert", 0x16: "a handshake"}


def api_versions_request(client_id: str = "groupscope-probe") -> bytes:
    """An ApiVersions v0 request: header (api key, version, correlation id, client id) and an empty body."""
    cid = client_id.encode()
    body = struct.pack(">hhih", _API_VERSIONS, 0, _CORRELATION_ID, len(cid)) + cid
    return struct.pack(">i", len(body)) + body


def classify_answer(answer: bytes) -> str | None:
    """Why ``answer`` (the first bytes a server sent back to :func:`api_versions_request`) is not Kafka's, or None
    when it is a Kafka response (its correlation id echoed)."""
    if len(answer) >= 8 and struct.unpack(">i", answer[4:8])[0] == _CORRELATION_ID:
        return None
    if answer.startswith(b"HTTP/"):
        status = answer.split(b"\r\n", 1)[0].decode("ascii", "replace")
        return f"an HTTP server answers there, not Kafka (\"{status}\"): check the port"
    if answer[:1] and answer[0] in _TLS_RECORD_TYPES and answer[1:2] == b"\x03":
        return (f"a TLS listener answers there (it sent {_TLS_RECORD_TYPES[answer[0]]}): set kafka "
                "security.protocol (SSL or SASL_SSL) and its certificates, or use the plaintext listener's port")
    if answer.startswith(b"SSH-"):
        return "an SSH server answers there, not Kafka: check the port"
    shown = answer[:16].decode("ascii", "replace").encode("unicode_escape").decode("ascii")
    return f"the server there does not speak Kafka's protocol (it answered \"{shown}\"): check the port"


def probe_listener(host: str, port: int, timeout_s: float = 2.0) -> str | None:
    """One ApiVersions request to ``host:port``: the reason it is not a Kafka listener, or None when a Kafka broker
    answered or the connection could not be made at all (librdkafka's own reason says more then)."""
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return None
    with conn:
        try:
            conn.sendall(api_versions_request())
            answer = conn.recv(64)
        except socket.timeout:
            return (f"it accepts connections but did not answer a Kafka request in {timeout_s:g} s: not a Kafka "
                    "listener, or one that expects TLS (kafka security.protocol)")
        except OSError as exc:
            return f"it accepts connections but closed this one on a Kafka request ({exc.strerror or exc})"
    if not answer:
        return ("it accepts connections but closed this one on a Kafka request: a TLS listener (kafka "
                "security.protocol), or not Kafka")
    return classify_answer(answer)


def first_address(bootstrap: str) -> tuple[str, int] | None:
    """The first ``host:port`` of a bootstrap list (``PLAINTEXT://`` prefixes and IPv6 brackets allowed)."""
    first = bootstrap.split(",", 1)[0].strip()
    first = first.split("://", 1)[-1]
    host, sep, port = first.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "localhost", int(port)
