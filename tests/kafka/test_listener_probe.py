"""A bootstrap address where something other than plaintext Kafka listens is named for what it is, in one line.

Real sockets on loopback: a server that answers HTTP, one that accepts and never answers, one that closes at once
(what a TLS listener does with a plaintext request), and librdkafka's mock cluster, a real Kafka-protocol broker."""

from __future__ import annotations

import re
import socket
import socketserver
import struct
import threading
import time

import pytest

from streaming.kafka.listener_probe import api_versions_request, classify_answer, first_address, probe_listener
from streaming.kafka.mock_cluster import MockCluster
from tests.cli_helpers import run_cli


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(answer):
    """A loopback server whose handler gets the connection; yields its port."""
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            answer(self.request)

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _http(conn):
    conn.recv(1024)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def _silent(conn):
    time.sleep(5)


def _closes(conn):
    conn.recv(1024)


@pytest.fixture
def http_server():
    server = _serve(_http)
    yield server.server_address[1]
    server.shutdown()


def test_the_request_is_an_api_versions_v0_request():
    request = api_versions_request("c")
    size, api_key, version, _correlation, client_len = struct.unpack(">ihhih", request[:14])
    assert (size, api_key, version, client_len, request[14:]) == (len(request) - 4, 18, 0, 1, b"c")


def test_answers_are_named():
    correlation = api_versions_request()[8:12]
    assert classify_answer(b"\x00\x00\x00\x10" + correlation + b"\x00\x00") is None  # Kafka echoes the id
    assert classify_answer(b"HTTP/1.0 404 Not Found\r\n\r\n") == \
        'an HTTP server answers there, not Kafka ("HTTP/1.0 404 Not Found"): check the port'
    assert classify_answer(b"\x15\x03\x01\x00\x02\x02\x46").startswith("a TLS listener answers there (it sent an "
                                                                      "alert): set kafka security.protocol")
    assert classify_answer(b"SSH-2.0-OpenSSH_9.2\r\n") == "an SSH server answers there, not Kafka: check the port"
    assert classify_answer(b"+OK\x01").startswith('the server there does not speak Kafka\'s protocol (it answered "+OK')


def test_first_address():
    assert first_address("PLAINTEXT://kafka-1:9092,kafka-2:9092") == ("kafka-1", 9092)
    assert first_address("[::1]:9093") == ("::1", 9093)
    assert first_address("kafka") is None


def test_probe_against_real_listeners(http_server):
    assert probe_listener("127.0.0.1", http_server) == \
        'an HTTP server answers there, not Kafka ("HTTP/1.1 400 Bad Request"): check the port'
    silent = _serve(_silent)
    try:
        assert probe_listener("127.0.0.1", silent.server_address[1], timeout_s=0.5).startswith(
            "it accepts connections but did not answer a Kafka request in 0.5 s")
    finally:
        silent.shutdown()
    closes = _serve(_closes)
    try:
        assert probe_listener("127.0.0.1", closes.server_address[1]).startswith(
            "it accepts connections but closed this one on a Kafka request: a TLS listener")
    finally:
        closes.shutdown()
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    assert probe_listener("127.0.0.1", closed_port) is None  # refused: librdkafka's reason says it
    with MockCluster(1) as mc:
        assert probe_listener(*first_address(mc.bootstrap_servers)) is None  # a Kafka broker answered


def test_a_command_pointed_at_an_http_port_says_so_in_one_line_and_soon(http_server):
    """librdkafka calls this "Invalid response size 1213486160 ... increase receive.message.max.bytes" (the bytes
    are "HTTP"): that raw line stays out, groupscope's says what answers, and it does not wait out the 8 s."""
    started = time.monotonic()
    proc = run_cli("heartbeat", "--once", "--bootstrap", f"127.0.0.1:{http_server}", timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    assert re.fullmatch(re.escape(f"groupscope heartbeat: cannot reach Kafka at 127.0.0.1:{http_server}: an HTTP "
                                  'server answers there, not Kafka ("HTTP/1.1 400 Bad Request"): check the port ')
                        + r"\(for \d s\)", lines[0]), lines
    assert took < 7, took
