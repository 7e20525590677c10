"""The API's HTTP server: the standard library's WSGI server, one thread per request, like the metrics endpoint.

A request takes one state view, builds plain dicts (``routes.py``) and encodes them as JSON; nothing is cached, so
an answer is never older than the latest micro-batch. Constructing binds nothing; :meth:`ApiServer.start` binds
(``port=0`` picks a free port) and serves from a daemon thread; :meth:`ApiServer.stop` closes the socket. A port
already in use is :class:`ApiPortInUse`, one line naming the address.
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from streaming.api.routes import Reply, route
from streaming.api.source import ClusterSource
from streaming.sinks.http_server import BackgroundHttpServer, QuietHandler

__all__ = ["ApiServer", "ApiPortInUse"]

log = logging.getLogger("groupscope.api")

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}


class ApiPortInUse(RuntimeError):
    """The API's address is taken by another process."""


class _Handler(QuietHandler):
    def get_environ(self) -> dict[str, Any]:
        """Adds the path as sent (still percent-encoded): WSGI's ``PATH_INFO`` has ``%2F`` already turned into a
        ``/``, which would split a group id holding one."""
        env = super().get_environ()
        env["groupscope.raw_path"] = self.path.split("?", 1)[0]
        return env


class ApiServer(BackgroundHttpServer):
    """Serves ``/v3/kafka/...`` (Burrow's shapes) and ``/v1/...`` (groupscope's) for the given clusters."""

    handler_class = _Handler
    thread_name = "groupscope-api"

    def __init__(self, sources: Mapping[str, ClusterSource] | Callable[[], Mapping[str, ClusterSource]], *,
                 host: str = "0.0.0.0", port: int = 8000) -> None:
        """``sources``: cluster name -> source, or a function returning that mapping (clusters may come and go)."""
        super().__init__(host=host, port=port)
        self._sources = sources if callable(sources) else (lambda: sources)

    def start(self) -> ApiServer:
        """Binds and serves in a daemon thread.

        Raises:
            ApiPortInUse: the address is in use.
            OSError: it cannot be bound for another reason.
            RuntimeError: already started.
        """
        try:
            self._serve()
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ApiPortInUse(f"HTTP API port {self.host}:{self._port} is already in use (set api.port, or "
                                   "GROUPSCOPE_API__PORT)") from None
            raise
        return self

    def _app(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        raw = environ.get("groupscope.raw_path") or environ.get("PATH_INFO") or "/"
        try:
            reply = route(method, raw, self._sources())
        except Exception as exc:  # noqa: BLE001 - one line in the log, a JSON error to the client
            log.warning("HTTP API: %s %s failed: %s: %s", method, raw, type(exc).__name__, exc)
            reply = Reply(500, {"error": True, "message": f"internal error: {type(exc).__name__}"})
        data = json.dumps(reply.body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *reply.headers]
        start_response(f"{reply.status} {_REASONS.get(reply.status, 'Error')}", headers)
        return [] if method == "HEAD" else [data]
