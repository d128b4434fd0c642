"""Encoding and decoding: MessagePack on the wire, JSON in files. No I/O."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

from .events import EVENT_TYPES, AnyEvent, Event
from .records import Record

_MP_ENC = msgspec.msgpack.Encoder()
_MP_DEC = msgspec.msgpack.Decoder(AnyEvent)
_JSON_ENC = msgspec.json.Encoder()
_JSON_DEC = msgspec.json.Decoder(AnyEvent)


class DecodeError(ValueError):
    """Bytes that are not a known event (wrong format, unknown type, missing field)."""


def encode(event: Event) -> bytes:
    """Encode an event as MessagePack (the wire format)."""
    return _MP_ENC.encode(event)


def decode(data: bytes) -> AnyEvent:
    """Decode MessagePack bytes into an event; raise :class:`DecodeError` with the reason."""
    try:
        return _MP_DEC.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not an envkernel event: {exc}") from None


def to_json(obj: Event | Record | Any) -> bytes:
    """Encode an event or record as JSON (files, ``tap --json``)."""
    return _JSON_ENC.encode(obj)


def from_json(data: bytes | str) -> AnyEvent:
    """Decode a JSON event; raise :class:`DecodeError` with the reason."""
    try:
        return _JSON_DEC.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not an envkernel event: {exc}") from None


def to_builtins(obj: Any) -> Any:
    """Convert an event or record into plain dicts and lists."""
    return msgspec.to_builtins(obj)


def event_id(parent: str, plugin: str, index: int | str) -> str:
    """Deterministic event id: hash(parent id, plugin, index), 24 hex characters."""
    h = hashlib.blake2b(f"{parent}\x1f{plugin}\x1f{index}".encode(), digest_size=12)
    return h.hexdigest()


_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_token(value: str) -> bool:
    """True when ``value`` is usable as one NATS subject token (and as a run id or plugin name)."""
    return bool(_TOKEN.match(value))


def json_schemas() -> dict[str, Any]:
    """JSON Schema of every event type (with the records they use under ``$defs``)."""
    schemas, components = msgspec.json.schema_components(EVENT_TYPES, ref_template="#/$defs/{name}")
    return {"events": [s["$ref"].rsplit("/", 1)[-1] for s in schemas], "$defs": components}
