"""Fixtures of envkernel-bus's own tests: a real nats-server (envkernel-kit's pytest plugin)."""

from __future__ import annotations

import pytest


@pytest.fixture
def nats_server(envkernel_nats: str) -> str:
    """The URL of a real nats-server with JetStream on a free loopback port, for this test only."""
    return envkernel_nats
