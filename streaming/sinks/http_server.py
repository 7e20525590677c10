"""The one way groupscope serves HTTP from the driver (``/metrics`` and the API): the standard library's WSGI
server, one daemon thread per request, bound on :meth:`BackgroundHttpServer.start` and served from a daemon thread.

No framework: both endpoints are a handful of read-only paths answered from in-memory state, and the standard
library keeps the driver's dependencies to what the job needs anyway.
"""

from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any, Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["BackgroundHttpServer", "QuietHandler"]


class _Server(ThreadingMixIn, WSGIServer):
    """One thread per request, so a slow scrape or API client never blocks ``/ready`` probes."""

    daemon_threads = True
    # A burst of clients (dashboards polling many groups at once) must not be refused by a short listen queue.
    request_queue_size = 128


class _Server6(_Server):
    address_family = socket.AF_INET6


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapers and dashboards poll every few seconds: an access log would flood stderr. Failures surface as
        HTTP statuses and are logged by the application."""


class BackgroundHttpServer:
    """Binds on :meth:`start` (``port=0`` picks a free port, see :attr:`port`), serves from a daemon thread, and
    :meth:`stop` shuts the loop down and closes the socket. Subclasses provide ``_app`` (a WSGI application)."""

    handler_class: type[WSGIRequestHandler] = QuietHandler
    thread_name = "groupscope-http"

    def __init__(self, *, host: str, port: int) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port}")
        self.host = host
        self._port = port
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port once started (the ephemeral one for ``port=0``), else the configured one."""
        return self._httpd.server_address[1] if self._httpd is not None else self._port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else ("::1" if self.host == "::" else self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def _app(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        raise NotImplementedError

    def _serve(self) -> None:
        """Binds and serves in a daemon thread.

        Raises:
            OSError: the address is in use or cannot be bound.
            RuntimeError: already started.
        """
        if self._httpd is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        server_class = _Server6 if ":" in self.host else _Server
        httpd = make_server(self.host, self._port, self._app, server_class=server_class,
                            handler_class=self.handler_class)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"{self.thread_name}-{self.port}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops serving and closes the listening socket; safe to call twice."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self):
        self._serve()
        return self
