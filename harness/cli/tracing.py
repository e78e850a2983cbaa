"""The command line's traces (chapter 15): ``--trace [URL]`` or ``HARNESS_TRACE``.

:func:`session_tracing` reads the setting once per invocation; each session the program
opens gets its own :class:`~harness.tracing.Tracing` plugin on the same provider, and
:meth:`CliTracing.close` sends what is left as the program exits. The provider sends from a
background thread and logs what fails, so a receiver that is down or an endpoint that is
wrong costs a line on stderr, never the session.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import TracerProvider

from harness.cli.assemble import Harness
from harness.events import Event
from harness.tracing import TraceSettingError, TraceSettings, Tracing, exporting_provider

FLAG_HELP = (
    "send an OpenTelemetry trace over OTLP/HTTP to URL (else OTEL_EXPORTER_OTLP_ENDPOINT); "
    "prompts and file contents stay out unless content capture is on"
)
"""The flag's help; the docs (and the README) say the rest: ``HARNESS_TRACE=1`` or a URL does
the same, and ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` adds content."""


@dataclass
class CliTracing:
    """The provider of one invocation, and the plugin of each session it opened."""

    settings: TraceSettings
    provider: TracerProvider
    plugins: dict[int, Tracing] = field(default_factory=dict)

    def attach(self, harness: Harness) -> Tracing:
        """Trace ``harness``'s agent (its plugin goes last: the innermost model-call layer)."""
        tracing = Tracing(
            self.provider,
            capture_content=self.settings.capture_content,
            session_id=harness.session_id,
        )
        self.plugins[id(harness.agent)] = tracing.attach(harness.agent)
        return tracing

    def run(self, harness: Harness, prompt: str) -> Generator[Event, None, None]:
        """``harness.agent.run(prompt)``, traced (attached first if it was not)."""
        tracing = self.plugins.get(id(harness.agent))
        if tracing is None or tracing not in harness.agent.plugins:  # a new session (/clear)
            tracing = self.attach(harness)
        return tracing.run(harness.agent, prompt)

    def close(self) -> None:
        """Send the spans still waiting, then stop (the exporter's timeout bounds the wait)."""
        self.provider.shutdown()


def session_tracing(flag: str | None, env: Mapping[str, str]) -> CliTracing | None:
    """The invocation's tracing, or ``None`` when it is off. A setting that is neither on,
    off nor a URL is said on stderr, and the session goes on untraced."""
    try:
        settings = TraceSettings.from_env(env, flag=flag)
    except TraceSettingError as error:
        print(f"harness: {error}; tracing is off for this session", file=sys.stderr)
        return None
    if not settings.enabled:
        return None
    return CliTracing(settings, exporting_provider(settings.endpoint))
