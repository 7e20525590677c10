"""The docker-compose stack, offline: no Docker engine runs here, so the compose file is validated by apt's
``docker-compose config`` and its pieces are checked against the repository: pinned images, the commands the
README promises, mounted files that exist, a Prometheus config ``promtool`` accepts with our rules, Grafana
provisioning that finds the dashboards, and a groupscope config the job's own loader accepts.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from streaming.config import load_settings
from tests.dashboards.grafana import REPO
from tests.dashboards.promtools import require, run

COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
RUN = ["groupscope", "run", "--config", "/etc/groupscope/groupscope.yaml"]
SIMULATE = ["groupscope", "simulate", "--mode", "real-consumers", "--bootstrap", "kafka:9092"]


@pytest.fixture(scope="module")
def resolved() -> dict:
    """The compose file as docker-compose itself resolves it (paths absolute, defaults filled in)."""
    tool = require("docker-compose")
    out = run([tool, "-f", str(COMPOSE), "config"], cwd=REPO)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_is_valid(resolved):
    assert set(resolved["services"]) == {"kafka", "groupscope", "workload", "prometheus", "grafana"}


def test_images_are_pinned(raw):
    for name, service in raw["services"].items():
        if "build" in service:
            assert service["build"]["context"] == "." and (REPO / service["build"]["dockerfile"]).is_file(), name
            continue
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: pin an exact version, not {image!r}"


def test_kafka_is_a_single_kraft_node(raw):
    kafka = raw["services"]["kafka"]
    env = kafka["environment"]
    assert kafka["image"].startswith("apache/kafka:")
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller" and env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert not any("ZOOKEEPER" in k for k in env)


def test_job_and_workload_commands(raw, resolved):
    services = resolved["services"]
    job, workload = services["groupscope"], services["workload"]
    assert job["command"] == RUN and workload["command"] == SIMULATE
    assert job["environment"]["GROUPSCOPE_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert job["environment"]["GROUPSCOPE_METRICS_PORT"] == "9308"
    assert any(p["target"] == 9308 and p["published"] == 9308 for p in job["ports"])
    assert any(v.endswith(":/data:rw") or v.startswith("groupscope-data:/data") for v in job["volumes"])
    for name in ("groupscope", "workload"):
        assert services[name]["depends_on"]["kafka"]["condition"] == "service_healthy", name
    assert "9308/healthz" in " ".join(raw["services"]["groupscope"]["healthcheck"]["test"])


def test_bind_mounts_exist(raw):
    for name, service in raw["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (REPO / source).exists(), f"{name}: {source} is not in the repository"


def test_groupscope_config_is_accepted_by_the_job(raw):
    mount = next(v for v in raw["services"]["groupscope"]["volumes"] if v.endswith("/etc/groupscope/groupscope.yaml:ro"))
    settings = load_settings(str(REPO / mount.split(":")[0]))
    assert settings.metrics.port == 9308 and settings.metrics.host == "0.0.0.0"
    assert settings.delta.path == "/data/delta"
    assert settings.kafka["bootstrap.servers"] == "kafka:9092"
    # The HTTP API is on and published where Burrow's clients look for it.
    assert settings.api.enabled and settings.api.host == "0.0.0.0"
    job = raw["services"]["groupscope"]
    assert f"{settings.api.port}:{settings.api.port}" in job["ports"]


def test_prometheus_config_with_our_rules(raw, tmp_path: Path):
    promtool = require("promtool")
    prom = raw["services"]["prometheus"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in prom["volumes"] if v.startswith(".")}
    config = yaml.safe_load((REPO / mounts["/etc/prometheus/prometheus.yml"]).read_text())
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "groupscope", "the job-down alerts select job=\"groupscope\""
    assert job["static_configs"][0]["targets"] == ["groupscope:9308"]
    # Check it as Prometheus would load it inside the container: the rules directory is the mounted alerts/.
    rules_dir = REPO / mounts["/etc/prometheus/rules"]
    config["rule_files"] = [f.replace("/etc/prometheus/rules", str(rules_dir)) for f in config["rule_files"]]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    out = run([promtool, "check", "config", str(path)])
    assert out.returncode == 0, out.stdout + out.stderr
    rules = yaml.safe_load((REPO / "alerts" / "groupscope.rules.yml").read_text())
    assert f"SUCCESS: {sum(len(g['rules']) for g in rules['groups'])} rules found" in out.stdout, out.stdout


def test_grafana_provisioning(raw):
    grafana = raw["services"]["grafana"]
    mounts = {v.split(":")[1]: REPO / v.split(":")[0] for v in grafana["volumes"] if v.startswith(".")}
    provisioning = mounts["/etc/grafana/provisioning"]
    provider = yaml.safe_load((provisioning / "dashboards" / "groupscope.yaml").read_text())["providers"][0]
    dashboards_in = mounts[provider["options"]["path"]]
    assert sorted(p.name for p in dashboards_in.glob("*.json")) == ["groupscope-group.json",
                                                                    "groupscope-overview.json"]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (dashboards_in / Path(home).relative_to(provider["options"]["path"])).is_file()
    assert grafana["environment"]["GROUPSCOPE_PROMETHEUS_URL"] == "http://prometheus:9090"
    assert (provisioning / "datasources" / "prometheus.yaml").is_file()


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile(raw):
    instructions = _instructions()
    (base,) = [arg for op, arg in instructions if op == "FROM"]
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+", base), f"pin the base image exactly, not {base!r}"
    for op, arg in instructions:
        if op == "COPY":
            for source in shlex.split(arg)[:-1]:
                assert (REPO / source).exists(), f"COPY {source}: not in the repository"
    cmd = next(arg for op, arg in instructions if op == "CMD")
    assert yaml.safe_load(cmd) == RUN
    assert ("EXPOSE", "9308") in instructions
    assert any(op == "USER" for op, _ in instructions), "run unprivileged"
    assert "openjdk-17-jre-headless" in " ".join(arg for op, arg in instructions if op == "RUN")


def test_image_installs_from_what_it_copies(tmp_path: Path):
    """``pip install .`` in the image sees only the files COPYed before it: build the wheel from exactly those and
    check it carries both packages and the ``groupscope`` command the compose services run."""
    instructions = _instructions()
    install = next(i for i, (op, arg) in enumerate(instructions) if op == "RUN" and "pip install ." in arg)
    context = tmp_path / "context"
    context.mkdir()
    for op, arg in instructions[:install]:
        if op != "COPY":
            continue
        *sources, dest = shlex.split(arg)
        for source in sources:
            into_dir = dest.endswith("/") or dest == "." or len(sources) > 1
            target = context / dest / Path(source).name if into_dir else context / dest
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / source, target)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                          str(context)], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    (wheel,) = (tmp_path / "dist").glob("groupscope-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("protocol/codec.py", "streaming/commands/cli.py", "streaming/spark/job.py", "streaming/kafka/mock_cluster.py",
                   "streaming/simulator/real_consumers.py", "streaming/sinks/prometheus.py"):
        assert module in names, f"{module} missing from the image's install"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "groupscope = streaming.commands.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
