"""The sandbox service's wire format on the bus, protocol :data:`PROTOCOL`.

Every message a client and a runner's process exchange is one member of :data:`Message`, a msgspec
tagged union (tag field ``"t"``) encoded as msgpack and read by one decoder, :data:`dec`:

- requests: :class:`Open` (on ``envk.svc.sandbox.<runner>.open``), then one of :class:`Call`,
  :class:`Patch`, :class:`Snapshot`, :class:`Restore`, :class:`State`, :class:`Close` and
  :class:`Kill` per operation (on ``envk.svc.sandbox.<id>.<op>``);
- replies: :class:`Opened` (an open), :class:`Snapshotted` (a snapshot), :class:`Result` (a tool
  call: its result as one JSON line, exactly as the executor wrote it, relayed without decoding),
  :class:`Value` (every other operation) or :class:`Failed` (any operation that failed).

Control ops: ``close`` ends the sandbox (the service replies before it closes); ``kill`` stops the
current executor (a call over the direct lane hung past its timeout; the next operation starts a
replacement that rebuilds the state); ``alive`` (``envk.svc.sandbox.<runner>-<process>.alive``) is
the runner process's liveness subject a waiting client watches. The executor's own control ops
(``ping``, ``recycle``, ``session``, ``exit``) never cross the bus: see ``docs/sandbox-stack.md``.

Protocol 1 (before 2026-12-04) had untagged, all-optional ``OpRequest`` and ``Reply`` structs and a
call's result told apart by its first byte; protocol 2 is this union. :class:`Open` carries the
client's protocol, and a service refuses an open of another one with a :class:`Failed` that says
so. The kernel's ``envkernel.sandbox`` speaks it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel_schemas import EnvSpec, ToolResult

__all__ = [
    "PROTOCOL",
    "Call",
    "Close",
    "Failed",
    "Kill",
    "Message",
    "Open",
    "Opened",
    "Patch",
    "Reply",
    "Request",
    "Restore",
    "Result",
    "Snapshot",
    "Snapshotted",
    "State",
    "Value",
    "dec",
    "enc",
    "result_dec",
]

PROTOCOL = 2
"""The version of this wire (see the module's docstring for what changed)."""


class _Msg(msgspec.Struct, kw_only=True, tag_field="t", omit_defaults=True):
    """Base of every message: its tag (``"t"``) names its kind."""


class Open(_Msg, tag="open"):
    """Ask a runner for a sandbox holding ``env``."""

    env: EnvSpec
    """The environment to load."""
    seed: int = 0
    """Its seed."""
    run: str = ""
    """The run it is for."""
    lifetime: float = 3600.0
    """Seconds after which the runner closes it, whatever the client does."""
    protocol: int = PROTOCOL
    """The wire protocol the client speaks."""


class Call(_Msg, tag="call"):
    """Call a tool."""

    tool: str
    """The tool."""
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    """Its arguments."""


class Patch(_Msg, tag="patch"):
    """Insert rows before an episode (all or none)."""

    rows: list[dict[str, Any]]
    """The rows (``{"table": ..., "row": {...}}`` each)."""


class Snapshot(_Msg, tag="snapshot"):
    """Save the state."""


class Restore(_Msg, tag="restore"):
    """Return to a saved state."""

    snapshot: str
    """The snapshot's name (from :class:`Snapshotted`)."""


class State(_Msg, tag="state"):
    """Dump every table of the state."""


class Close(_Msg, tag="close"):
    """Close the sandbox (control op: the reply comes before the close)."""


class Kill(_Msg, tag="kill"):
    """Stop the current executor (control op: a call over the direct lane hung)."""


class Opened(_Msg, tag="opened"):
    """An open's reply: the sandbox's id and maybe its direct lane."""

    sandbox: str
    """The new sandbox's id."""
    lane: list[Any] = msgspec.field(default_factory=list)
    """The offer of the sandbox's direct lane, for a client on the same host (see
    :mod:`envkernel_runtime.lane`); empty when there is none."""


class Snapshotted(_Msg, tag="snapshotted"):
    """A snapshot's reply: its name, and the executor's own handle of it while a lane is out."""

    snapshot: str
    """The name to restore."""
    lane: list[Any] = msgspec.field(default_factory=list)
    """``[the executor's handle]`` while a client holds the direct lane, else empty."""


class Result(_Msg, tag="result"):
    """A tool call's reply: its :class:`~envkernel_schemas.ToolResult` as one JSON line."""

    json: bytes
    """The result, as the executor wrote it (decode with :data:`result_dec`)."""


class Value(_Msg, tag="value"):
    """The reply of patch, restore, state, close and kill: what the operation returned."""

    value: Any = None
    """What it returned (the patched row count, the state, or nothing)."""


class Failed(_Msg, tag="failed"):
    """The reply of an operation that failed."""

    error: str
    """Why it failed."""
    code: str = "sandbox"
    """The ``SandboxError`` code the runner raised with (``sandbox`` when it raised another
    error)."""


Request = Open | Call | Patch | Snapshot | Restore | State | Close | Kill
"""A client's message."""
Reply = Opened | Snapshotted | Result | Value | Failed
"""A service's message."""
Message = Request | Reply
"""Any message on the sandbox wire."""

enc = msgspec.msgpack.Encoder()
"""Encodes any :data:`Message` (msgpack)."""
dec: msgspec.msgpack.Decoder[Message] = msgspec.msgpack.Decoder(Message)
"""The one decoder of the wire: any :data:`Message`."""
result_dec = msgspec.json.Decoder(ToolResult)
"""Decodes the JSON line a :class:`Result` carries."""
