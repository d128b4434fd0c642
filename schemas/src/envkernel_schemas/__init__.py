"""envkernel-schemas: the event and record types of envkernel, as msgspec Structs.

This package does no I/O, so a trainer or a third-party plugin can decode events without the
kernel.
"""

from .codec import (
    DecodeError,
    decode,
    encode,
    event_id,
    from_json,
    is_token,
    json_schemas,
    to_builtins,
    to_json,
)
from .events import *  # noqa: F403
from .events import EVENT_TYPES, KINDS, AnyEvent, Event
from .records import *  # noqa: F403

__all__ = [
    "DecodeError",
    "decode",
    "encode",
    "event_id",
    "from_json",
    "is_token",
    "json_schemas",
    "to_builtins",
    "to_json",
    "EVENT_TYPES",
    "KINDS",
    "AnyEvent",
    "Event",
]
