"""The sandbox service's wire format on the bus: what a client sends a runner's process
(:class:`OpenRequest`, then :class:`OpRequest` per operation) and what comes back (:class:`Reply`,
or a tool call's result as the executor wrote it, JSON). The kernel's ``envkernel.sandbox`` speaks
it."""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel_schemas import EnvSpec, ToolResult

__all__ = [
    "OpRequest",
    "OpenRequest",
    "Reply",
    "enc",
    "op_dec",
    "open_dec",
    "reply_dec",
    "result_dec",
]


class OpenRequest(msgspec.Struct, kw_only=True):
    """Ask a runner for a sandbox holding ``env``."""

    env: EnvSpec
    """The environment to load."""
    seed: int = 0
    """Its seed."""
    run: str = ""
    """The run it is for."""
    lifetime: float = 3600.0
    """Seconds after which the runner closes it, whatever the client does."""


class OpRequest(msgspec.Struct, kw_only=True):
    """One operation on an open sandbox."""

    tool: str = ""
    """``call``: the tool."""
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    """``call``: its arguments."""
    snapshot: str = ""
    """``restore``: the snapshot handle."""
    rows: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """``patch``: the rows to insert (``{"table": ..., "row": {...}}`` each)."""


class Reply(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A service reply: a value, or an error saying what went wrong."""

    ok: bool = True
    """False when the operation failed."""
    value: Any = None
    """What it returned."""
    error: str = ""
    """Why it failed."""
    lane: list[Any] = msgspec.field(default_factory=list)
    """An open reply's offer of the sandbox's direct lane, for a client on the same host (see
    :mod:`envkernel_runtime.lane`); a snapshot's reply: the executor's own handle of it, while a
    lane is out."""


enc = msgspec.msgpack.Encoder()
"""Encodes requests and replies (msgpack)."""
open_dec = msgspec.msgpack.Decoder(OpenRequest)
"""Decodes an :class:`OpenRequest`."""
op_dec = msgspec.msgpack.Decoder(OpRequest)
"""Decodes an :class:`OpRequest`."""
reply_dec = msgspec.msgpack.Decoder(Reply)
"""Decodes a :class:`Reply`."""
result_dec = msgspec.json.Decoder(ToolResult)
"""Decodes a tool call's result relayed as the executor wrote it (JSON)."""
