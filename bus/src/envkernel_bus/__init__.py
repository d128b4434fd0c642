"""envkernel-bus: the embedded nats-server, the JetStream stream, the consume loop, the tap."""

from .bus import MSG_ID, Bus, BusError
from .consumer import Consumer, Done, Output
from .server import EmbeddedServer, ServerError, find_server_binary
from . import discovery, subjects

__all__ = [
    "MSG_ID",
    "Bus",
    "BusError",
    "Consumer",
    "Done",
    "Output",
    "EmbeddedServer",
    "ServerError",
    "find_server_binary",
    "discovery",
    "subjects",
]
