"""Debian's ``prometheus`` and ``promtool`` for the tests: locating them, and a real Prometheus server process.

The binaries come from Debian's ``prometheus`` package, which ``.ci/run`` installs. A test that needs them and
does not find them fails (it does not skip): a green run must mean the rules and dashboards were really checked.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["require", "run", "free_port", "PrometheusProcess", "PromQueryError"]


def require(tool: str) -> str:
    """Path of ``tool`` (``prometheus``, ``promtool``, ``docker-compose``); fails the test when missing."""
    path = shutil.which(tool)
    if path is None:
        package = "docker-compose" if tool == "docker-compose" else "prometheus"
        pytest.fail(f"{tool} not found on PATH: .ci/run installs it (apt-get install -y {package})")
    return path


def run(args: list[str], *, text: bool = True, **kwargs: Any) -> subprocess.CompletedProcess:
    """Runs a tool to completion, capturing its output (the caller asserts on the return code)."""
    return subprocess.run(args, capture_output=True, text=text, timeout=120, check=False, **kwargs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PromQueryError(AssertionError):
    pass


class PrometheusProcess:
    """A real Prometheus on 127.0.0.1 with a temporary config and data directory, scraping ``targets`` every
    second and evaluating ``rule_files``; :meth:`stop` ends the process and removes the directory."""

    def __init__(self, targets: Iterable[str], rule_files: Iterable[Path] = (), *, job: str = "groupscope",
                 interval: str = "1s") -> None:
        self.targets = list(targets)
        self.rule_files = [str(p) for p in rule_files]
        self.job = job
        self.interval = interval
        self.port = 0
        self._dir: tempfile.TemporaryDirectory | None = None
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> PrometheusProcess:
        binary = require("prometheus")
        self._dir = tempfile.TemporaryDirectory(prefix="groupscope-prom-")
        root = Path(self._dir.name)
        config = {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "rule_files": self.rule_files,
            "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": self.targets}]}],
        }
        (root / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        for attempt in range(3):  # a free port can be taken between probing and binding: retry
            self.port = free_port()
            with open(root / "prometheus.log", "wb") as log:  # the child keeps its own handle
                self._proc = subprocess.Popen(
                    [binary, f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'data'}",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                    stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                        if r.status == 200:
                            return self
                except OSError:
                    pass
                time.sleep(0.1)
            self._terminate()
        raise RuntimeError(f"prometheus did not become ready:\n{self.log()}")

    def log(self) -> str:
        if self._dir is None:
            return ""
        path = Path(self._dir.name) / "prometheus.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop(self) -> None:
        self._terminate()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    # ---- HTTP API -----------------------------------------------------------------------------------------------

    def api(self, path: str, **params: Any) -> Any:
        """GET ``/api/v1/<path>``; returns ``data``, raises :class:`PromQueryError` on an API error."""
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise PromQueryError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query at now: the result vector (a scalar comes back as one sample without labels)."""
        data = self.api("query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def scrapes(self) -> int:
        """Scrapes of our job so far (samples of ``up``; the least over the targets)."""
        result = self.query(f'min(count_over_time(up{{job="{self.job}"}}[1h]))')
        return int(float(result[0]["value"][1])) if result else 0

    def wait_for_scrapes(self, n: int, timeout: float = 30.0) -> None:
        """Blocks until ``n`` more scrapes of every target have happened (so a state change is recorded)."""
        start = self.scrapes()
        deadline = time.monotonic() + timeout
        while self.scrapes() < start + n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"prometheus made fewer than {n} scrapes in {timeout}s:\n{self.log()}")
            time.sleep(0.2)
        up = self.query(f'min(up{{job="{self.job}"}})')
        assert up and up[0]["value"][1] == "1", f"a scrape of {self.targets} failed:\n{self.log()}"
