"""Traces of a session (chapter 15): OpenTelemetry spans you can open in a trace viewer.

* :class:`Tracing`: the plugin and the run wrapper (:mod:`harness.tracing.plugin`);
* :func:`in_memory`, :func:`exporting_provider`: where the spans go
  (:mod:`harness.tracing.providers`);
* :class:`TraceSettings`: off by default, on with ``HARNESS_TRACE`` or ``--trace``; content
  only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
  (:mod:`harness.tracing.settings`);
* :mod:`harness.tracing.names`: the GenAI semantic conventions' attribute names, and ours.

To look at a trace, start a viewer and point the harness at it::

    uvx arize-phoenix serve                     # http://localhost:6006 in your browser
    HARNESS_TRACE=http://localhost:6006 harness -p "list files"

Arize Phoenix is the viewer the course uses: it installs from PyPI and starts with one
command (no Docker, no account), keeps its data locally in SQLite, takes OTLP/HTTP at
``/v1/traces``, and reads the GenAI conventions' attributes as they are: each ``chat`` span
shows its model, its tokens split into cache reads, cache writes and output, and its cost;
``invoke_agent`` and ``execute_tool`` spans show as agent and tool steps; the conversation
id groups runs into a session. It is actively kept (releases every few weeks). Its licence
is the Elastic License 2.0: free to run yourself, not an OSI open-source licence. MLflow
(Apache 2.0, ``uvx mlflow server``) also takes OTLP traces, with one more setting
(``OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-mlflow-experiment-id=0``). Any OTLP backend works:
the spans are plain OpenTelemetry.
"""

from harness.tracing.plugin import Tracing
from harness.tracing.providers import SeededIds, exporting_provider, in_memory
from harness.tracing.settings import TraceSettingError, TraceSettings, parse_trace

__all__ = [
    "SeededIds",
    "TraceSettingError",
    "TraceSettings",
    "Tracing",
    "exporting_provider",
    "in_memory",
    "parse_trace",
]
