"""The kit's pytest11 plugin: its fixtures work, and loading it imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from envkernel_kit.scripted import completion


def test_loading_the_plugin_is_cheap() -> None:
    code = (
        "import sys, envkernel_kit.pytest_plugin; "
        "heavy = [m for m in ('openai', 'httpx', 'envkernel_bus', 'nats', 'pyarrow', "
        "'pandas', 'envkernel.run') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_the_chat_client_imports_openai_only_when_used() -> None:
    code = (
        "import sys, envkernel_kit.chat, envkernel_kit.checks; print([m for m in ('openai', "
        "'httpx') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_the_plugin_is_registered_under_pytest11(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.has_plugin("envkernel")


async def test_envkernel_nats_is_a_real_server(envkernel_nats: str) -> None:
    import nats

    nc = await nats.connect(envkernel_nats)
    try:
        assert nc.is_connected and envkernel_nats.startswith("nats://127.0.0.1:")
    finally:
        await nc.close()


def test_envkernel_context_is_run_like(envkernel_context: Any, tmp_path: Any) -> None:
    assert envkernel_context.out_dir == tmp_path and envkernel_context.iteration == 0
    assert envkernel_context.config.run_id == envkernel_context.run_id
    assert envkernel_context.rng("a").random() == envkernel_context.rng("a").random()


async def test_envkernel_runner_opens_the_shop(envkernel_runner: Any, envkernel_shop: Any) -> None:
    pytest.importorskip("envkernel_process")
    session = await envkernel_runner.open(envkernel_shop, 0)
    try:
        result = await session.call("get_product", {"product_id": "prd_0001"})
        assert result.ok and result.value["name"] == "desk lamp"
    finally:
        await session.close()


def test_envkernel_openai_server_answers(envkernel_openai_server: Any) -> None:
    import json
    import urllib.request

    server = envkernel_openai_server(lambda body, i: completion("Hello."))
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps({"model": "m", "messages": []}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert json.loads(resp.read())["choices"][0]["message"]["content"] == "Hello."
