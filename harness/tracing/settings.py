"""Whether to trace, where to, and whether content goes along: one setting each.

Off by default. ``HARNESS_TRACE`` (or the command line's ``--trace``) turns traces on:
``1`` sends them where the standard OTLP variables say
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT``, else the
OTLP/HTTP default ``http://localhost:4318/v1/traces``), a URL sends them there. Content (the
prompt, the replies, tool input and output) stays out of every span unless
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, the switch OpenTelemetry's own
GenAI instrumentations read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness.tracing.names import CAPTURE_CONTENT_ENV, TRACE_ENV

_ON = {"1", "true", "yes", "on"}
_OFF = {"", "0", "false", "no", "off"}
TRACES_PATH = "/v1/traces"
"""Where an OTLP/HTTP receiver takes spans, under its base URL (the OTLP specification)."""


class TraceSettingError(ValueError):
    """A trace setting that is neither on, off, nor an http(s) URL."""


@dataclass(frozen=True)
class TraceSettings:
    """What the switches say: trace or not, to which endpoint, with content or not."""

    enabled: bool = False
    endpoint: str | None = None
    """The full URL spans are posted to; ``None``: the standard OTLP variables decide."""
    capture_content: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, flag: str | None = None) -> TraceSettings:
        """Read ``HARNESS_TRACE`` and the content switch from ``env``; ``flag`` (the command
        line's ``--trace`` value, ``"1"`` when given without one) wins over the variable.

        Raises :class:`TraceSettingError` for a value that is none of the three kinds.
        """
        value = flag if flag is not None else env.get(TRACE_ENV, "")
        enabled, endpoint = parse_trace(value)
        return cls(enabled=enabled, endpoint=endpoint, capture_content=capture_content(env))


def capture_content(env: Mapping[str, str]) -> bool:
    """Whether ``env`` turns content capture on (``true``, as OpenTelemetry's own GenAI
    instrumentations read it)."""
    return env.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def parse_trace(value: str) -> tuple[bool, str | None]:
    """``"0"`` → off; ``"1"`` → on, standard endpoint; a URL → on, that endpoint.

    A URL without a path is a receiver's base URL, so ``/v1/traces`` is added (as the SDK
    adds it to ``OTEL_EXPORTER_OTLP_ENDPOINT``): ``http://localhost:6006`` works.
    """
    text = value.strip()
    if text.lower() in _OFF:
        return False, None
    if text.lower() in _ON:
        return True, None
    problem = _url_problem(text)
    if problem:
        raise TraceSettingError(
            f"{TRACE_ENV} (or --trace) is {text!r}: {problem}. Use 1 (the standard OTLP "
            "endpoint), 0, or an http(s) URL such as http://localhost:6006/v1/traces"
        )
    parts = urlsplit(text)
    if parts.path in ("", "/"):
        text = text.rstrip("/") + TRACES_PATH
    return True, text


def _url_problem(text: str) -> str:
    """What makes ``text`` a URL no exporter could post to, or ``""``."""
    if not text.isprintable() or any(c.isspace() for c in text):
        return "a URL has no spaces or control characters"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - read for its check: a port past 65535 raises ValueError
    except ValueError as error:  # an unclosed [ of an IPv6 address, a port out of range
        return f"not a URL ({error})"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host"
    return ""
