"""pytest fixtures for plugin authors, loaded through the ``pytest11`` entry point ``envkernel``.

Every fixture name starts with ``envkernel_`` so none clashes with a project's own fixtures, and
this module imports nothing heavy until a fixture is used:

- ``envkernel_nats``: the URL of a real nats-server (JetStream on) on a free loopback port;
- ``envkernel_context``: a run-like :class:`~envkernel_kit.testing.FakeContext` whose ``out_dir``
  is the test's ``tmp_path``;
- ``envkernel_shop``: the shipped sample environment ``shop-v1`` (an ``EnvSpec``);
- ``envkernel_runner``: the ``process`` sandbox runner (real sandboxes), closed after the test;
- ``envkernel_openai_server``: a scripted OpenAI-compatible server on loopback (it stands in for a
  model); call it with a script, it returns the started server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def envkernel_nats(tmp_path: Path) -> Iterator[str]:
    """URL of a fresh nats-server (JetStream on, its store in ``tmp_path / "nats"``)."""
    from envkernel_bus import EmbeddedServer

    server = EmbeddedServer(tmp_path / "nats")
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def envkernel_context(tmp_path: Path) -> Any:
    """A run-like context for calling role methods directly (``out_dir`` is ``tmp_path``)."""
    from .testing import FakeContext

    return FakeContext(out_dir=tmp_path)


@pytest.fixture
def envkernel_shop() -> Any:
    """The shipped sample environment ``shop-v1``, from the ``sample`` synthesizer."""
    from .checks import sample_env

    return sample_env()


@pytest.fixture
async def envkernel_runner() -> AsyncIterator[Any]:
    """The ``process`` sandbox runner (loaded through its entry point), closed after the test."""
    from .checks import process_runner

    runner = process_runner()
    try:
        yield runner
    finally:
        await runner.aclose()


@pytest.fixture
def envkernel_openai_server() -> Iterator[Callable[..., Any]]:
    """Start a scripted OpenAI-compatible server: ``envkernel_openai_server(script, **kw)``
    returns it started (``.base_url``); every server is stopped after the test."""
    from .scripted import ScriptedServer

    started: list[Any] = []

    def start(script: Any, **kw: Any) -> Any:
        server = ScriptedServer(script, **kw).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
