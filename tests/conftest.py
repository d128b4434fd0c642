"""Shared fixtures: a real nats-server with JetStream on a free loopback port, per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from envkernel_bus import Bus, EmbeddedServer


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[str]:
    """URL of a fresh nats-server (JetStream on, store in tmp_path)."""
    server = EmbeddedServer(tmp_path / "nats")
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
async def bus(nats_server: str) -> AsyncIterator[Bus]:
    """A connected Bus with the envkernel stream, bucket and object store."""
    b = await Bus.connect(nats_server)
    try:
        yield b
    finally:
        await b.close()
