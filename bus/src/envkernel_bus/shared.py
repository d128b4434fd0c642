"""Decode each event once per process, however many of its subscribers live there.

In ``envkernel run`` the coordinator reads every event of the run and the run's own workers read
the ones they handle: a rollout request, a finished rollout (with its trajectory and final state)
or a scored group used to be decoded two or more times in the same process (~9 % of its CPU). The
first reader decodes it and keeps ``(bytes, event)`` under its ``Nats-Msg-Id`` until a second
reader of the same message takes that event (when the bytes are identical, so it is exactly what
decoding them gives) instead of decoding again, or until ``KEEP`` newer events push it out. Readers must treat events as read-only,
which role methods already do.
"""

from __future__ import annotations

from typing import Any

from envkernel_schemas import decode

from .bus import MSG_ID

__all__ = ["decode_shared", "stats"]

KEEP = 1024
"""Events kept for their other readers (oldest dropped first; a reader that comes later decodes again)."""

_kept: dict[str, tuple[bytes, Any]] = {}
stats = {"decoded": 0, "shared": 0}
"""Messages decoded, and messages whose event was taken from an earlier reader."""


def decode_shared(msg: Any, keep: bool = True) -> Any:
    """The event of a bus message (``envkernel_schemas.decode`` of ``msg.data``, which raises the same
    ``DecodeError``), decoded once per process. ``keep=False``: no other reader will ask for it."""
    data: bytes = msg.data
    headers = msg.headers
    mid = headers.get(MSG_ID) if headers else None
    if mid is not None and (got := _kept.pop(mid, None)) is not None and got[0] == data:
        stats["shared"] += 1  # taken by its second reader, so no longer kept (a third decodes it again)
        return got[1]
    ev = decode(data)
    stats["decoded"] += 1
    if mid is not None and keep:
        _kept[mid] = (data, ev)
        if len(_kept) > KEEP:
            del _kept[next(iter(_kept))]
    return ev
