"""The messages of the sandbox service on the bus (``envk.svc.sandbox.*``, see :mod:`envkernel.sandbox`)."""

from __future__ import annotations

from typing import Any

import msgspec
from envkernel_schemas import EnvSpec

__all__ = ["OpRequest", "OpenRequest", "Reply"]


class OpenRequest(msgspec.Struct, kw_only=True):
    """Ask a runner for a sandbox holding ``env``."""

    env: EnvSpec
    seed: int = 0
    run: str = ""
    lifetime: float = 3600.0


class OpRequest(msgspec.Struct, kw_only=True):
    """One operation on an open sandbox."""

    tool: str = ""
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    snapshot: str = ""


class Reply(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A service reply: a value, or an error saying what went wrong."""

    ok: bool = True
    value: Any = None
    error: str = ""
    lane: list[Any] = msgspec.field(default_factory=list)
    """An open reply's offer of the sandbox's direct lane (see :mod:`envkernel_runtime.lane`), for a client on the same host."""
