"""The driver's HTTP server: a port checked before binding, the URL a client on this host reaches it by, one thread
per request (a slow client never blocks a readiness probe), a quiet access log, and a stop that frees the port."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from typing import Any, Callable

import pytest

from streaming.sinks.http_server import BackgroundHttpServer


class _Echo(BackgroundHttpServer):
    """Answers every path with its own path; ``/slow`` waits until released."""

    thread_name = "test-http"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.release = threading.Event()

    def _app(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        path = environ["PATH_INFO"]
        if path == "/slow":
            self.release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [path.encode()]


def _get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


@pytest.mark.parametrize("port", [-1, 65536, 70000])
def test_a_port_outside_0_to_65535_is_refused_before_binding(port):
    with pytest.raises(ValueError, match=f"port must be 0..65535, got {port}"):
        _Echo(host="127.0.0.1", port=port)


@pytest.mark.parametrize("host,url", [
    ("", "http://127.0.0.1:8080"), ("0.0.0.0", "http://127.0.0.1:8080"),  # every interface: reach it on loopback
    ("::", "http://[::1]:8080"), ("::1", "http://[::1]:8080"),  # IPv6 literals go in brackets (RFC 3986)
    ("10.1.2.3", "http://10.1.2.3:8080"), ("metrics.local", "http://metrics.local:8080"),
])
def test_the_url_is_one_a_client_can_use(host, url):
    assert _Echo(host=host, port=8080).url == url


def test_port_zero_takes_a_free_port_and_the_url_names_it():
    with _Echo(host="127.0.0.1", port=0) as server:
        assert server.port != 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert _get(server.url + "/hello") == "/hello"
    assert server.port == 0, "once stopped, the configured port again"


def test_a_slow_request_does_not_block_another():
    with _Echo(host="127.0.0.1", port=0) as server:
        slow: list[str] = []
        t = threading.Thread(target=lambda: slow.append(_get(server.url + "/slow")))
        t.start()
        time.sleep(0.2)  # the slow request is being served
        assert _get(server.url + "/ready", timeout=3) == "/ready"
        assert not slow
        server.release.set()
        t.join(5)
        assert slow == ["/slow"]


def test_requests_leave_no_access_log(capfd):
    with _Echo(host="127.0.0.1", port=0) as server:
        for _ in range(3):
            _get(server.url + "/metrics")
    out, err = capfd.readouterr()
    assert "GET /metrics" not in out + err


def test_start_twice_is_refused_and_stop_twice_is_harmless():
    server = _Echo(host="127.0.0.1", port=0).start()
    port = server.port
    try:
        with pytest.raises(RuntimeError, match="_Echo already started"):
            server.start()
    finally:
        server.stop()
        server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_port_in_use_is_an_os_error_on_start():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = _Echo(host="127.0.0.1", port=taken.getsockname()[1])
        with pytest.raises(OSError):
            server.start()
        server.stop()  # nothing was bound: still safe

