"""envkernel-bus: the embedded nats-server, the JetStream stream, the consume loop, the tap."""

from . import discovery, subjects
from .bus import (
    MSG_ID,
    REDACTED,
    SECRET,
    Bus,
    BusError,
    ResponderGone,
    StoreFullError,
    credentials,
    env_seconds,
    redact,
    without_secrets,
)
from .consumer import Consumer, Done, Output, Redeliver, last_delivery
from .feed import Feed
from .logs import on_signals
from .server import EmbeddedServer, LocalCluster, ServerError, find_server_binary
from .shared import decode_shared, encode_shared

__all__ = [
    "Feed",
    "decode_shared",
    "encode_shared",
    "MSG_ID",
    "Bus",
    "BusError",
    "StoreFullError",
    "ResponderGone",
    "credentials",
    "env_seconds",
    "on_signals",
    "without_secrets",
    "REDACTED",
    "SECRET",
    "redact",
    "Redeliver",
    "last_delivery",
    "Consumer",
    "Done",
    "Output",
    "EmbeddedServer",
    "LocalCluster",
    "ServerError",
    "find_server_binary",
    "discovery",
    "subjects",
]
