"""Where spans go: kept in memory (notebooks, tests), or sent over OTLP/HTTP.

Both are the OpenTelemetry SDK's own pieces, not ours: a ``TracerProvider`` with the SDK's
span processors and exporters. Sending happens on the SDK's background thread
(``BatchSpanProcessor``), so a slow or missing receiver never holds up a turn; the exporter
logs what failed (the ``opentelemetry.exporter`` logger) and never raises into the session.
"""

from __future__ import annotations

import os
import random

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

SERVICE = "harness"
"""``service.name`` of every span: how a viewer lists the program that sent them."""

EXPORT_TIMEOUT = 5.0
"""Seconds one export may take, retries included, unless ``OTEL_EXPORTER_OTLP_TIMEOUT`` says
otherwise. The SDK's default is 10 s; ours is shorter because the last export happens as the
command line exits, and a person waits for it (our choice)."""


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator: the same ids on every run, so a stored
    notebook output (or a test) that shows them does not change. Only for fake sessions:
    real ids must be random (the SDK's default), or two sessions' traces would collide."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1  # 0 is the invalid id

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def in_memory(seed: int | None = 0) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider whose finished spans stay in the returned exporter
    (``exporter.get_finished_spans()``), each as soon as it ends; ids from ``seed``
    (``None``: random ids)."""
    ids = SeededIds(seed) if seed is not None else None
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: SERVICE}), id_generator=ids)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def exporting_provider(
    endpoint: str | None = None, *, timeout: float | None = None
) -> TracerProvider:
    """A provider that sends spans over OTLP/HTTP (protobuf), in batches, in the background.

    ``endpoint`` is the full URL (``http://localhost:6006/v1/traces``); ``None`` lets the
    standard variables decide (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, then
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` plus ``/v1/traces``, then ``localhost:4318``). Call
    ``provider.shutdown()`` at exit: it sends what is left.
    """
    variables = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    if timeout is None and not any(os.environ.get(v) for v in variables):
        timeout = EXPORT_TIMEOUT
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: SERVICE}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
