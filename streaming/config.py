"""groupscope's configuration: one YAML file, ``GROUPSCOPE_*`` environment variables and command-line flags.

Precedence, highest first: flags, environment, file, defaults. Environment variables name nested settings with a
double underscore (``GROUPSCOPE_METRICS__PORT=9400``); a few common ones have short aliases
(``GROUPSCOPE_KAFKA_BOOTSTRAP``, ``GROUPSCOPE_METRICS_PORT``, ``GROUPSCOPE_DELTA_PATH``). The ``kafka`` section is
passed to librdkafka verbatim (security, SASL, SSL...), and is redacted wherever the configuration is shown.

Validation reports every bad setting as one line (:func:`format_errors`), never a traceback, naming the
environment variable when the value came from one. A ``GROUPSCOPE_*`` variable that names no setting is an error
too: a misspelt section would otherwise be ignored without a word, and the job would run on defaults.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from streaming.model.step_config import StepConfig
from streaming.model.knobs import settings_of

__all__ = ["Settings", "ConfigError", "load_settings", "redacted", "format_errors"]

_SECRET = re.compile(r"(password|secret|token|credential|private|sasl\.jaas|\.key$|key\.pem|keystore)", re.I)


class ConfigError(ValueError):
    """Bad configuration: ``lines`` holds one message per problem."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("; ".join(lines))


def _setting_strings(value: Any) -> Any:
    """librdkafka and Spark take every setting as a string, and booleans as ``true``/``false`` (YAML gives
    ``True``), so ``spark.python.worker.reuse: true`` is written as in Spark's own documentation."""
    if isinstance(value, dict):
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HeartbeatSettings(_Section):
    topic: str = "groupscope-heartbeat"
    interval_seconds: float = Field(5.0, gt=0, le=3600)
    include_topics: str = ".*"  # regex of the topics whose end offsets are listed
    exclude_topics: str = "^__(?!consumer_offsets$)|^_confluent|^groupscope-heartbeat$"
    retention_ms: int = Field(24 * 3600 * 1000, gt=0)
    chunk_partitions: int = Field(5000, gt=0)
    # Read the topic's configuration and correct it (retention, cleanup policy) where it differs. Off for a broker
    # that cannot describe topic configurations (the demo's embedded one): the topic is then used as it is, and
    # nothing is said about it.
    check_topic_config: bool = True
    enabled: bool = True
    # Read the last offsets of partitions that carry transactions once their end stops moving, so a consumer that
    # read everything before an aborted transaction is not shown behind by the aborted records (needs read access
    # to those topics; docs/design-notes.md#lag-lessons). Every other partition gets one look at its last offset.
    # At most tail_probe_partitions tails per tick, the last tail_probe_window offsets of each.
    probe_transaction_tails: bool = True
    tail_probe_window: int = Field(1000, gt=0, le=1_000_000)
    tail_probe_partitions: int = Field(200, gt=0)
    # Read the timestamp of the oldest record each lagging consumer has not processed (the first one delivered at
    # or after its committed offset), so lag seconds are measured, not only interpolated (needs read access to
    # those topics; streaming.kafka.oldest_probe). At most oldest_record_partitions and
    # oldest_record_budget_seconds of reading per tick, the oldest first.
    probe_oldest_records: bool = True
    oldest_record_partitions: int = Field(100, gt=0)
    oldest_record_budget_seconds: float = Field(1.0, gt=0, le=60)

    @field_validator("include_topics", "exclude_topics")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


class SourceSettings(_Section):
    offsets_topic: str = "__consumer_offsets"
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    # Records per catch-up batch. Each shard step holds its own share of a batch (a 50-partition offsets topic: a
    # fiftieth), so the bound is on the step's memory; 5M in one batch caught up sooner than 2M, 2M and 1M.
    max_offsets_per_trigger: int | None = Field(5_000_000, gt=0)
    read_tasks: int = Field(2, gt=0, le=1024)
    read_timeout_seconds: float = Field(300.0, gt=0)
    # How read tasks read Kafka: "fetch" sends Fetch requests itself and decodes the record batches column-wise
    # (plaintext listeners; TLS or SASL fall back to the consumer), "consumer" uses librdkafka's consumer.
    reader: Literal["fetch", "consumer"] = "fetch"
    # Where __consumer_offsets records are read: by each shard's step, from the range the source planned (its
    # records never pass through Spark's JVM), or by the source's read tasks and shuffled to the steps.
    read_in_steps: bool = True
    builtin_kafka_source: bool = False  # use Spark's own "kafka" source (needs its jar on the classpath)


class SparkSettings(_Section):
    master: str = "local[2]"
    app_name: str = "groupscope"
    trigger_seconds: float = Field(1.0, ge=0)
    checkpoint: str = "groupscope-data/checkpoint"
    shuffle_partitions: int = Field(4, gt=0, le=10000)
    driver_memory: str = "2g"
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("conf", mode="before")
    @classmethod
    def _conf_strings(cls, value: Any) -> Any:
        return _setting_strings(value)

    # The driver's JVM maps the classes an earlier run loaded from an archive in ~/.cache/groupscope/jvm (recorded
    # by the first run that stops in order): the session starts ~1 s sooner (streaming.spark.class_archive).
    class_archive: bool = True


class DeltaMaintenanceSettings(_Section):
    """Compaction, checkpoint, vacuum and log cleanup of the Delta tables.

    Every micro-batch appends a few small files to each table; without compaction a table gains thousands of files
    a day and every reader (``groupscope status``, Spark, Trino) pays for listing and opening them. The job runs
    maintenance on a background thread every ``every_batches`` batches or ``every_seconds`` seconds, whichever comes
    first; ``groupscope maintain`` runs it once."""

    enabled: bool = True
    every_batches: int = Field(500, gt=0)
    every_seconds: float = Field(3600.0, gt=0)
    target_file_size_mb: int = Field(128, gt=0)
    # Files a compaction replaced stay on disk this long, so readers of older versions (time travel, a slow
    # reader mid-scan) keep working; Delta's default is 7 days.
    vacuum_retention_hours: int = Field(168, ge=0)
    # Transaction-log entries older than this (and older than the newest checkpoint) are deleted; Delta's default
    # is 30 days. The job's per-batch app transactions live on in the checkpoint.
    log_retention_hours: int = Field(720, ge=0)


class DeltaSettings(_Section):
    path: str = "groupscope-data/delta"
    writer: Literal["deltalake", "delta-spark"] = "deltalake"
    storage_options: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    # The bulk tables (commits; lag unless per-partition metrics need its rows on the driver) are written as data
    # files by the executors that computed them, and the driver only commits them: the driver stays small however
    # many executors there are. Applies to the deltalake writer on paths the executors reach without
    # storage_options (a local or shared file system); otherwise the driver writes everything.
    write_on_executors: bool = True
    maintenance: DeltaMaintenanceSettings = Field(default_factory=DeltaMaintenanceSettings)


class MetricsSettings(_Section):
    host: str = "0.0.0.0"
    port: int = Field(9308, ge=0, le=65535)
    partition_metrics: bool = False
    enabled: bool = True
    # Series under the names and labels of other exporters as well, for their dashboards and alert rules
    # (streaming/sinks/compat_catalogue.py): kafka_lag_exporter, kafka_exporter.
    compat: list[Literal["kafka_lag_exporter", "kafka_exporter"]] = []
    # /ready says 503 with the reason when no micro-batch completed for this long, or when the newest heartbeat
    # the model applied is older than this: a caught-up job whose query hangs is not ready.
    ready_max_batch_age_seconds: float = Field(300.0, gt=0)
    ready_max_heartbeat_age_seconds: float = Field(120.0, gt=0)
    # ... or when the heartbeat emitter has not reached Kafka for this long: Kafka is unreachable and every lag,
    # status and verdict is as old as that (the view is stale), which an outage of a minute must show
    ready_max_kafka_silence_seconds: float = Field(30.0, gt=0)


class ApiSettings(_Section):
    """The read-only HTTP API on the driver (Burrow's ``/v3`` paths and groupscope's ``/v1``; docs/http-api.md).

    Off by default: it is one more listening port, and it makes the driver keep every group's partitions, which
    the Prometheus endpoint alone keeps only with ``metrics.partition_metrics``."""

    enabled: bool = False
    host: str = "0.0.0.0"
    port: int = Field(8000, ge=0, le=65535)  # Burrow's default port, so its clients only change the host


def _model_section() -> type[_Section]:
    """The ``model:`` section, derived from the knobs the model declares (streaming.model.knobs): each knob's
    setting name, type, default and bounds in the user's units (seconds for a duration the model holds in ms), and
    its meaning as the field's description. A knob added to the model is a setting here without another line."""
    fields: dict[str, Any] = {
        s.name: (s.type, Field(s.default, description=f"{s.meaning} ({s.unit})" if s.unit else s.meaning,
                               **dict(s.bounds)))
        for s in settings_of(StepConfig)}
    return create_model("ModelSettings", __base__=_Section, __module__=__name__, **fields)


ModelSettings = _model_section()


_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ClusterSettings(_Section):
    """One cluster of a deployment that watches several (``clusters:``). Each section given here is merged over the
    top-level one of the same name, so shared settings (security, thresholds) are written once and a cluster names
    only what differs. ``checkpoint`` and ``delta_path`` default to a folder named after the cluster under the
    top-level ``spark.checkpoint`` and ``delta.path``."""

    kafka: dict[str, str] = Field(default_factory=dict)
    source: dict[str, Any] = Field(default_factory=dict)
    heartbeat: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    checkpoint: str | None = None
    delta_path: str | None = None

    @field_validator("kafka", mode="before")
    @classmethod
    def _kafka_strings(cls, value: Any) -> Any:
        return _setting_strings(value)

    @field_validator("kafka")
    @classmethod
    def _own_servers(cls, value: dict[str, str]) -> dict[str, str]:
        # Servers are what tells clusters apart: never inherited (a forgotten one would watch localhost's Kafka).
        if not value.get("bootstrap.servers"):
            raise ValueError("bootstrap.servers is required: each cluster names its own servers")
        return value


class Settings(BaseSettings):
    """Everything ``groupscope run`` needs."""

    model_config = SettingsConfigDict(env_prefix="GROUPSCOPE_", env_nested_delimiter="__", extra="forbid")

    cluster: str = "default"
    kafka: dict[str, str] = Field(default_factory=lambda: {"bootstrap.servers": "localhost:9092"})
    source: SourceSettings = Field(default_factory=SourceSettings)
    heartbeat: HeartbeatSettings = Field(default_factory=HeartbeatSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    delta: DeltaSettings = Field(default_factory=DeltaSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    # Several clusters watched by one job: name -> what differs from the sections above (ClusterSettings). Empty:
    # one cluster, named by ``cluster`` and described by the sections above.
    clusters: dict[str, ClusterSettings] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _api_needs_metrics(self) -> Settings:
        if self.api.enabled and not self.metrics.enabled:
            raise ValueError("api.enabled needs metrics.enabled: the API serves the state the metrics feed keeps")
        return self

    @field_validator("clusters")
    @classmethod
    def _cluster_names(cls, value: dict[str, ClusterSettings]) -> dict[str, ClusterSettings]:
        for name in value:
            if not _CLUSTER_NAME.match(name):
                raise ValueError(f"cluster name {name!r}: letters, digits, '.', '_' and '-' only (it names a "
                                 "folder and a metric label), at most 64 characters")
        return value

    def cluster_settings(self) -> list[Settings]:
        """One complete :class:`Settings` per watched cluster, in the order the config names them: ``[self]`` for a
        single-cluster config. Raises :class:`ConfigError` naming ``clusters.NAME.…`` for a bad merged setting."""
        if not self.clusters:
            return [self]
        base = self.model_dump(exclude={"clusters"})
        base["kafka"].pop("bootstrap.servers", None)  # each cluster names its own
        out = []
        for name, over in self.clusters.items():
            data = _deep_merge(base, {
                "cluster": name,
                "kafka": over.kafka, "source": over.source, "heartbeat": over.heartbeat, "model": over.model,
                "spark": {"checkpoint": over.checkpoint or _child(self.spark.checkpoint, name)},
                "delta": {"path": over.delta_path or _child(self.delta.path, name)},
            })
            try:
                out.append(Settings.model_validate(data))
            except ValidationError as exc:
                raise ConfigError(format_errors(exc, f"clusters.{name}")) from None
        return out

    @property
    def partition_rows_on_driver(self) -> bool:
        """Whether every batch brings each re-evaluated group's partition rows to the driver: per-partition series
        and the HTTP API need them."""
        return self.metrics.enabled and (self.metrics.partition_metrics or self.api.enabled)

    @field_validator("kafka", mode="before")
    @classmethod
    def _kafka_strings(cls, value: Any) -> Any:
        return _setting_strings(value)

    @model_validator(mode="after")
    def _bootstrap(self) -> Settings:
        # With several clusters the top-level kafka section holds what they share; each cluster names its servers.
        if not self.clusters and not self.kafka.get("bootstrap.servers"):
            raise ValueError("kafka: bootstrap.servers is required")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings, _AliasEnv(settings_cls), env_settings, _FileSource(settings_cls))


class _FileSource(PydanticBaseSettingsSource):
    """The YAML file named by the private ``_config_file`` context (lowest precedence above defaults)."""

    path: Path | None = None

    def get_field_value(self, field, field_name):  # pragma: no cover - not used, __call__ returns everything
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_VALUES)


class _AliasEnv(PydanticBaseSettingsSource):
    """Short environment names for the settings people set most."""

    ALIASES = {
        "GROUPSCOPE_KAFKA_BOOTSTRAP": ("kafka", "bootstrap.servers"),
        "GROUPSCOPE_METRICS_PORT": ("metrics", "port"),
        "GROUPSCOPE_DELTA_PATH": ("delta", "path"),
        "GROUPSCOPE_CHECKPOINT": ("spark", "checkpoint"),
        "GROUPSCOPE_CLUSTER": ("cluster", None),
    }

    def get_field_value(self, field, field_name):  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for env, (section, key) in self.ALIASES.items():
            value = os.environ.get(env)
            if value is None:
                continue
            if key is None:
                out[section] = value
            else:
                base = dict(_FILE_VALUES.get(section, {})) if section == "kafka" else {}
                out.setdefault(section, base)[key] = value
        return out


_FILE_VALUES: dict[str, Any] = {}


def _child(path: str, name: str) -> str:
    """``name`` under a folder or URI (``s3://b/delta`` -> ``s3://b/delta/eu``)."""
    return path.rstrip("/") + "/" + name


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# GROUPSCOPE_* variables read by other parts of the product (the demo's folder, Grafana's data source, the
# test suite's extra recordings), not settings.
_NOT_SETTINGS = frozenset({"GROUPSCOPE_DEMO_DIR", "GROUPSCOPE_PROMETHEUS_URL", "GROUPSCOPE_VERDICT_RECORDINGS"})


def _environment_variable(loc: tuple, environ: Any = None) -> str | None:
    """The ``GROUPSCOPE_*`` variable that set the setting at ``loc``, if one did (names are case-insensitive)."""
    environ = os.environ if environ is None else environ
    present = {k.upper(): k for k in environ if k.upper().startswith("GROUPSCOPE_")}
    nested = "GROUPSCOPE_" + "__".join(str(p).upper() for p in loc)
    if nested in present:
        return present[nested]
    for alias, (section, key) in _AliasEnv.ALIASES.items():
        if alias in present and tuple(loc[:2]) == ((section, key) if key else (section,)):
            return present[alias]
    return None


def unknown_environment(environ: Any = None) -> list[str]:
    """One line per ``GROUPSCOPE_*`` variable that names no setting, with the nearest section it may mean."""
    environ = os.environ if environ is None else environ
    sections = sorted(Settings.model_fields)
    lines = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith("GROUPSCOPE_") or upper in _NOT_SETTINGS or upper in _AliasEnv.ALIASES:
            continue
        section = upper.removeprefix("GROUPSCOPE_").split("__", 1)[0].lower()
        if section in sections:
            continue
        # The nearest short name (GROUPSCOPE_BOOTSTRAP: GROUPSCOPE_KAFKA_BOOTSTRAP), else the nearest section.
        near_alias = difflib.get_close_matches(upper, list(_AliasEnv.ALIASES), n=1, cutoff=0.75)
        near = difflib.get_close_matches(section, sections, n=1)
        if near_alias:
            hint = f" (did you mean {near_alias[0]}?)"
        elif near:
            hint = f" (did you mean GROUPSCOPE_{near[0].upper()}{upper[len('GROUPSCOPE_') + len(section):]}?)"
        else:
            hint = f" (sections: {', '.join(sections)}; short names: {', '.join(_AliasEnv.ALIASES)})"
        lines.append(f"environment: {name}: no setting {section!r}{hint}")
    return lines


def _nearest_setting(loc: tuple) -> str | None:
    """The setting beside ``loc`` whose name is nearest its last part (a misspelt key), if one is near."""
    model: Any = Settings
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    near = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
    return near[0] if near else None


def format_errors(exc: ValidationError, origin: str = "config") -> list[str]:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if where == "(top level)" and ": " in msg:  # a check across sections names the setting itself
            where, msg = msg.split(": ", 1)
        variable = _environment_variable(tuple(err["loc"])) if origin != "flag" else None
        if err["type"] == "extra_forbidden":
            msg = "unknown setting"
            near = _nearest_setting(tuple(err["loc"]))
            if near is not None:
                loc = (*err["loc"][:-1], near)
                msg += (f" (did you mean GROUPSCOPE_{'__'.join(str(p).upper() for p in loc)}?)" if variable
                        else f" (did you mean {'.'.join(str(p) for p in loc)}?)")
        lines.append(f"environment: {variable}: {where}: {msg}" if variable else f"{origin}: {where}: {msg}")
    return lines


def load_settings(path: str | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Reads the file (if any), the environment and ``overrides`` (from flags). Raises :class:`ConfigError`."""
    global _FILE_VALUES
    unknown = unknown_environment()  # said together with the other bad settings, every one in one line
    file_values: dict[str, Any] = {}
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError([f"config file {path}: {exc.strerror or exc}"]) from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise ConfigError([f"config file {path}: not valid YAML{where}"]) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError([f"config file {path}: expected a mapping of settings at the top level"])
        file_values = loaded
    _FILE_VALUES = file_values
    try:
        settings = Settings(**(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(unknown + format_errors(exc, path or "config")) from None
    finally:
        _FILE_VALUES = {}
    if unknown:
        raise ConfigError(unknown)
    try:
        clusters = settings.cluster_settings()  # every cluster's merged settings are valid, or one line per bad one
    except ConfigError as exc:
        raise ConfigError([f"{path or 'config'}: {line}" for line in exc.lines]) from None
    problems = [line for s in clusters for line in _librdkafka_problems(s, several=bool(settings.clusters))]
    if problems:
        raise ConfigError([f"{path or 'config'}: {line}" for line in problems])
    return settings


def _librdkafka_problems(settings: Settings, *, several: bool) -> list[str]:
    """What librdkafka says of the ``kafka`` section (an unknown property, a bad value, a SASL mechanism this
    build lacks, an unreadable certificate), found now rather than as a raw client error once the job starts.

    librdkafka checks a configuration when a client is created; the check here creates one without
    ``bootstrap.servers``, so it connects nowhere, and drops it."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    conf = {k: v for k, v in settings.kafka.items() if k != "bootstrap.servers"}
    where = f"clusters.{settings.cluster}.kafka" if several else "kafka"
    try:
        AdminClient({**conf, "log_level": "0"})
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        text = error.str() if hasattr(error, "str") else str(exc)
        return [f"{where}: {text.removeprefix('Failed to create admin client: ')}"]
    return []


def redacted(settings: Settings) -> dict[str, Any]:
    """The settings as a dict with secrets masked, for logs and ``groupscope config``."""
    data = settings.model_dump()
    data["kafka"] = _masked(data["kafka"])
    data["delta"]["storage_options"] = _masked(data["delta"]["storage_options"])
    for cluster in data.get("clusters", {}).values():
        cluster["kafka"] = _masked(cluster["kafka"])
    return data


def _masked(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the values of secret-looking keys replaced by ``***``."""
    return {k: ("***" if _SECRET.search(k) else v) for k, v in settings.items()}
