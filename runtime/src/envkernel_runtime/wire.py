"""The host's typed side of the executor protocol: every request as a msgspec tagged union.

The executor (:mod:`envkernel_runtime.executor`) is standard library only, so the union lives
here, on the host, and nothing of it runs in a sandbox. Each request encodes (:func:`encode`) to
exactly the JSON object the executor reads: ``"op"`` first, then the fields in the order below,
without the fields left at their default where the executor has its own (``clock``).
``tests`` check the bytes against the hand-written objects the executor's docstring lists.

Replies stay the executor's JSON lines: ``{"ok":true,...}`` or ``{"ok":false,"error":{...}}``
(the executor writes ``"ok"`` first, which the call log relies on); :data:`reply_dec` reads one
into :class:`Reply`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel_schemas import EnvSpec

__all__ = [
    "Call",
    "Close",
    "Dump",
    "Load",
    "Patch",
    "Ping",
    "Recycle",
    "Reply",
    "ReplyError",
    "Request",
    "Restore",
    "Snapshot",
    "encode",
    "reply_dec",
]


class _Op(msgspec.Struct, tag_field="op", omit_defaults=True, kw_only=True):
    """Base of every request: its tag (``"op"``, written first) names the operation."""


class Load(_Op, tag="load"):
    """Load an environment and its seed state."""

    env: EnvSpec
    seed: int
    timeout: float
    clock: str | None = None


class Call(_Op, tag="call"):
    """Call a tool."""

    tool: str
    arguments: dict[str, Any]
    timeout: float


class Snapshot(_Op, tag="snapshot"):
    """Save the state (the reply's value is the executor's handle)."""


class Restore(_Op, tag="restore"):
    """Return to a saved state."""

    snapshot: str


class Dump(_Op, tag="dump"):
    """Every table of the state."""


class Patch(_Op, tag="patch"):
    """Insert rows, all or none."""

    rows: list[dict[str, Any]]


class Ping(_Op, tag="ping"):
    """Control op: protocol, loaded, confinement."""


class Close(_Op, tag="close"):
    """Control op: answer, then exit 0."""


class Recycle(_Op, tag="recycle"):
    """Control op (a nest's session): answer, then end the session (exit 75)."""


Request = Load | Call | Snapshot | Restore | Dump | Patch | Ping | Close | Recycle
"""A request to the executor."""

_enc = msgspec.json.Encoder()


def encode(request: Request) -> bytes:
    """The request as the executor reads it (one JSON object, no newline)."""
    return _enc.encode(request)


class ReplyError(msgspec.Struct):
    """What failed: the executor's code and message."""

    code: str = "error"
    message: str = ""


class Reply(msgspec.Struct):
    """One executor reply (``direct``: a snapshot's count of calls taken over the lane)."""

    ok: bool
    value: Any = None
    error: ReplyError | None = None
    direct: int = 0


reply_dec = msgspec.json.Decoder(Reply)
"""Reads one executor reply line."""
