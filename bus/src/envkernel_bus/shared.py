"""Decode each event once per process, however many of its subscribers live there.

In ``envkernel run`` the coordinator reads every event of the run and the run's own workers read
the ones they handle: a rollout request, a finished rollout (with its trajectory and final state)
or a scored group used to be decoded two or more times in the same process (~9 % of its CPU). The
first reader decodes it and keeps ``(bytes, event)`` under its ``Nats-Msg-Id`` until a second
reader of the same message takes that event (when the bytes are identical, so it is exactly what
decoding them gives) instead of decoding again, or until ``KEEP`` newer events push it out. Readers
must treat events as read-only, which role methods already do.

An event produced in the same process is kept the same way when it is encoded
(:func:`encode_shared`): its first reader here (the run's coordinator reads every event it
published or its workers emitted) takes the producer's own object instead of decoding the bytes
again, and keeps it for a second reader as a decoding would. A producer does not change an event
once it is encoded (it is on the wire), and an event's fields hold what decoding gives (lists, dicts
with string keys, plain values): ``decode(encode(ev)) == ev``, which ``tests/test_decode_shared.py``
checks on a real run's events (``CHECK``).
"""

from __future__ import annotations

import os
from typing import Any

import structlog

from envkernel_schemas import decode, encode

from .bus import MSG_ID

__all__ = ["decode_shared", "encode_shared", "stats"]

KEEP = 1024
"""Events kept for their other readers (oldest dropped first; a reader that comes later decodes
again)."""

CHECK = os.environ.get("ENVKERNEL_SHARED_CHECK") == "1"
"""Check every event kept by its producer against decoding its bytes (``ENVKERNEL_SHARED_CHECK=1``,
for tests): one that differs is logged and not kept, so its readers decode it; a kept event changed
since (by its producer or a reader) is logged when taken, and the taker gets the decoded bytes."""

log = structlog.get_logger("envkernel.bus")
_kept: dict[str, tuple[bytes, Any, bool]] = {}
"""Message id -> (its bytes, its event, whether its producer kept it: then its first reader keeps it
for a second)."""
stats = {"decoded": 0, "shared": 0, "own": 0}
"""Messages decoded, messages whose event was taken from an earlier reader, and events kept by their
producer."""


def decode_shared(msg: Any, keep: bool = True) -> Any:
    """The event of a bus message (``envkernel_schemas.decode`` of ``msg.data``, which raises the
    same ``DecodeError``), decoded once per process. ``keep=False``: no other reader will ask for
    it."""
    data: bytes = msg.data
    headers = msg.headers
    mid = headers.get(MSG_ID) if headers else None
    if mid is not None and (got := _kept.pop(mid, None)) is not None and got[0] == data:
        stats["shared"] += (
            1  # taken by its second reader, so no longer kept (a third decodes it again)
        )
        if CHECK and decode(data) != got[1]:
            log.error("a kept event was changed after it was encoded or decoded", event_id=mid)
            return decode(data)
        if (
            got[2] and keep
        ):  # its producer's: this first reader keeps it for a second, as if it had decoded it
            _keep(mid, data, got[1])
        return got[1]
    ev = decode(data)
    stats["decoded"] += 1
    if mid is not None and keep:
        _keep(mid, data, ev)
    return ev


def encode_shared(ev: Any, keep: bool = True) -> bytes:
    """``envkernel_schemas.encode(ev)``, with ``ev`` kept under its id for its first reader in this
    process (``keep=False``: nobody here reads it, e.g. a standalone worker's outputs). Publish the
    bytes with ``Nats-Msg-Id`` = ``ev.id``, as the bus does."""
    data = encode(ev)
    if keep and CHECK and decode(data) != ev:
        log.error(
            "an event differs from what decoding its bytes gives; not kept for its readers",
            kind=ev.kind,
            event_id=ev.id,
        )
        return data
    if keep:
        stats["own"] += 1
        _keep(ev.id, data, ev, own=True)
    return data


def _keep(mid: str, data: bytes, ev: Any, own: bool = False) -> None:
    _kept[mid] = (data, ev, own)
    if len(_kept) > KEEP:
        del _kept[next(iter(_kept))]
