"""HTTP helpers of the API tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

__all__ = ["get_json"]


def get_json(port: int, path: str) -> tuple[int, object]:
    """``(HTTP status, decoded JSON body)`` of a GET on loopback; error statuses return their body too."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
