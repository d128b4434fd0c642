"""Subject names: events on ``envk.ev.<run>.<kind>[.<plugin>]``, services on ``envk.svc.…``."""

from __future__ import annotations

EVENTS_PREFIX = "envk.ev"
"""Every pipeline event is published under this prefix (captured by the stream)."""
SERVICES_PREFIX = "envk.svc"
"""Request/reply services live here; no stream captures it."""
STREAM = "ENVK"
"""The JetStream stream holding every event."""
RUNS_BUCKET = "envk_runs"
"""KV bucket: run id -> resolved config (JSON)."""
OBJECTS_BUCKET = "envk_objects"
"""Object store for large artifacts (environments, policy updates)."""


def event_subject(run: str, kind: str, plugin: str | None = None) -> str:
    """Subject of an event of ``kind`` in ``run``, naming its target plugin for work dispatch."""
    base = f"{EVENTS_PREFIX}.{run}.{kind}"
    return f"{base}.{plugin}" if plugin else base


def kind_filter(kind: str, plugin: str | None = None, run: str = "*") -> str:
    """Consumer filter for one kind (and plugin) across runs (``*``) or one run."""
    return event_subject(run, kind, plugin)


def parse_event_subject(subject: str) -> tuple[str, str]:
    """Return (run, rest) of an event subject; ``rest`` is the kind plus the plugin token, if
    any."""
    parts = subject.split(".", 3)
    if len(parts) < 4 or f"{parts[0]}.{parts[1]}" != EVENTS_PREFIX:
        raise ValueError(f"not an envkernel event subject: {subject!r}")
    return parts[2], parts[3]


def sandbox_open_subject(runner: str) -> str:
    """Where a runner listens for open requests (queue group per runner)."""
    return f"{SERVICES_PREFIX}.sandbox.{runner}.open"


def sandbox_op_subject(sandbox_id: str, op: str) -> str:
    """Where one sandbox answers ``op`` (call, snapshot, restore, state, close)."""
    return f"{SERVICES_PREFIX}.sandbox.{sandbox_id}.{op}"


def durable_name(kind: str, plugin: str) -> str:
    """Durable consumer name for (kind, plugin): shared by every process serving that plugin."""
    return f"{kind.replace('.', '_')}__{plugin}"
