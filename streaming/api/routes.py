"""Paths to answers: ``route(method, raw_path, sources)`` returns a :class:`Reply` (status, JSON body, headers).

No HTTP here, so every path is testable as a function call. Paths are split on ``/`` before percent-decoding, so a
group id holding ``/`` (Kafka allows it) is reachable as ``%2F``; each segment is then decoded as UTF-8. A trailing
``/`` is ignored. Only GET and HEAD are served: the API is read-only (Burrow's DELETE and POST paths answer 405).
Unknown paths under ``/v1`` get groupscope's error object; every other unknown path gets Burrow's catch-all body.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import unquote

from streaming.api import burrow, native
from streaming.api.source import ClusterSource

__all__ = ["Reply", "route", "openapi_document", "HOSTNAME"]

# Burrow's request object names the serving host (not the client's Host header).
HOSTNAME = socket.gethostname()
_READ = ("GET", "HEAD")


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: Any  # encoded as JSON
    headers: tuple[tuple[str, str], ...] = field(default=())


# Burrow's catch-all answer to a path it does not serve (no request object).
_INVALID = Reply(404, {"error": True, "message": "invalid request type", "result": {}})


@cache
def openapi_document() -> dict[str, Any]:
    """The OpenAPI description shipped beside this module (read once)."""
    return json.loads(resources.files("streaming.api").joinpath("openapi.json").read_text(encoding="utf-8"))


def route(method: str, raw_path: str, sources: Mapping[str, ClusterSource], *, host: str = HOSTNAME) -> Reply:
    """The answer to ``method raw_path`` (the path as sent, still percent-encoded, without the query string)."""
    try:
        parts = [unquote(s, errors="strict") for s in raw_path.strip("/").split("/")] if raw_path.strip("/") else []
    except UnicodeDecodeError:
        parts = None
    if parts and parts[0] == "v1":
        return _v1(method, parts or [], sources)
    path = "/" + "/".join(parts or [])
    request = {"url": path, "host": host}
    if parts is None or len(parts) < 2 or parts[:2] != ["v3", "kafka"]:
        return _INVALID
    if method not in _READ:
        return Reply(405, {"error": True, "message": "method not allowed: this API is read-only", "request": request},
                     (("Allow", "GET, HEAD"),))
    answer = _v3(parts[2:], sources)
    if answer is None:
        return _INVALID
    status, body = answer
    body["request"] = request
    return Reply(status, body)


def _v3(rest: list[str], sources: Mapping[str, ClusterSource]) -> tuple[int, dict[str, Any]] | None:
    if not rest:
        return burrow.cluster_list(sources)
    name, rest = rest[0], rest[1:]
    source = sources.get(name)
    view = source.view() if source is not None and rest else None
    match rest:
        case []:
            return burrow.cluster_detail(source)
        case ["topic"]:
            return burrow.topic_list(view)
        case ["topic", topic]:
            return burrow.topic_detail(view, topic)
        case ["topic", topic, "consumers"]:
            return burrow.topic_consumers(view, topic)
        case ["consumer"]:
            return burrow.consumer_list(view)
        case ["consumer", group]:
            return burrow.consumer_detail(view, group)
        case ["consumer", group, "status" | "lag" as kind]:
            return burrow.consumer_status(name, view, group, show_all=kind == "lag")
    return None


def _v1(method: str, parts: list[str], sources: Mapping[str, ClusterSource]) -> Reply:
    if method not in _READ:
        status, body = native.error(405, "method not allowed: this API is read-only")
        return Reply(status, body, (("Allow", "GET, HEAD"),))
    match parts[1:]:
        case ["openapi.json"]:
            return Reply(200, openapi_document())
        case ["clusters"]:
            return Reply(*native.clusters(sources))
        case ["clusters", name, *rest] if len(rest) <= 2:
            source = sources.get(name)
            view = source.view() if source is not None else None
            match rest:
                case []:
                    return Reply(*native.cluster(name, view))
                case ["groups"]:
                    return Reply(*native.groups(name, view))
                case ["groups", group]:
                    return Reply(*native.group(name, view, group))
    return Reply(*native.error(404, "no such path; see /v1/openapi.json"))
