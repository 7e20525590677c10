"""The read-only HTTP API the driver serves beside ``/metrics`` (docs/http-api.md).

Two families of paths over the same state:

- ``/v3/kafka/...``: Burrow's v3 paths and JSON shapes (cluster, consumer and topic lists, consumer detail,
  ``/status`` and ``/lag``, its error envelope and 404s), so tools written for Burrow read groupscope unchanged.
  groupscope's statuses are mapped onto Burrow's names (``burrow.py`` says how and why).
- ``/v1/...``: groupscope's own shapes for what Burrow has no field for (KIP-848 state and epochs, lag in seconds,
  rebalance verdicts, data-loss risk), described by ``openapi.json`` (served at ``/v1/openapi.json``).

The data is what the metrics feed already holds on the driver: one ``StateView`` per cluster
(``streaming.sinks.state_store``), holding the typed read model of ``streaming.schema.read_model``. Modules: ``source.py`` (a
cluster's name, connection facts and view), ``burrow.py`` and ``native.py`` (a view in, plain dicts out: testable
without HTTP), ``routes.py`` (a path in, a status and a body out) and ``server.py`` (the threaded HTTP server).

May use ``streaming.sinks.state_store`` (the state), ``streaming.sinks.http_server`` (the HTTP server it shares with
``/metrics``), ``streaming.schema`` and ``streaming.model``; never ``commands``,
``job``, ``spark`` or ``kafka``: the job wires the API in, not the other way round.
"""

from streaming.api.routes import Reply, route
from streaming.api.server import ApiPortInUse, ApiServer
from streaming.api.source import ClusterInfo, ClusterSource

__all__ = ["ApiPortInUse", "ApiServer", "ClusterInfo", "ClusterSource", "Reply", "route"]
