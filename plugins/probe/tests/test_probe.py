"""Unit tests of the probe verifier: probing a fake shop and the real one (the vocabulary it uses
is tested with the kit, kit/tests/test_vocabulary.py)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from envkernel_kit.testing import SHOP_TOOLS, FakeContext, RunnerContext, toy_shop
from envkernel_probe import Probe, Settings, build_report, register_verifiers
from envkernel_schemas import ToolSpec


def _tool(name: str) -> ToolSpec:
    return next(t for t in SHOP_TOOLS if t.name == name)


def test_probe_keeps_working_tools_and_drops_broken() -> None:
    env, factory = toy_shop(broken=True)
    ctx = FakeContext(component="probe", sandboxes={env.id: factory})
    report = asyncio.run(Probe().verify(env, ctx))
    assert report.verifier == "probe"
    assert set(report.tools_kept) == {t.name for t in SHOP_TOOLS}
    assert list(report.tools_dropped) == ["broken_report"]
    assert "crashed: division by zero" in report.tools_dropped["broken_report"]
    assert report.kept  # 8/9 >= 0.8
    assert report.checks >= len(env.tools)
    assert ctx.opened and ctx.opened[0].closed
    # cancel_order needs a pending order: the first order is pending, so one call sufficed
    sb = ctx.opened[0]
    assert any(name == "cancel_order" for name, _ in sb.calls)


def test_probe_restores_between_tools() -> None:
    env, factory = toy_shop()
    ctx = FakeContext(component="probe", sandboxes={env.id: factory})
    asyncio.run(Probe().verify(env, ctx))
    sb = ctx.opened[0]
    final = asyncio.run(sb.state())
    assert final == asyncio.run(factory().state())


def test_probe_rejects_below_share() -> None:
    env, factory = toy_shop(broken=True)
    ctx = FakeContext(component="probe", sandboxes={env.id: factory})
    report = asyncio.run(Probe(Settings(min_tool_share=0.95)).verify(env, ctx))
    assert not report.kept
    assert any("tools passed" in f for f in report.failures)


def test_report_with_no_tools() -> None:
    r = build_report("probe", [], 0.8, 0.0)
    assert not r.kept and r.failures == ["the environment has no tools"]


def test_settings_forbid_unknown() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"min_tool_shar": 1}, Settings)
    assert msgspec.convert({}, Settings).min_tool_share == 0.8


def test_registration() -> None:
    got: dict[str, object] = {}
    register_verifiers(lambda name, factory: got.__setitem__(name, factory))
    assert got == {"probe": Probe}


def test_probe_real_shop() -> None:
    """Every tool of the ``sample`` shop passes in a ``process`` sandbox (skipped without them)."""
    sample = pytest.importorskip("envkernel_sample")
    process = pytest.importorskip("envkernel_process")

    runner = process.ProcessRunner()
    env = sample.shop_env()

    async def go():  # type: ignore[no-untyped-def]
        try:
            return await Probe().verify(env, RunnerContext(runner, component="probe"))
        finally:
            await runner.aclose()

    report = asyncio.run(go())
    assert (
        report.kept
        and report.tools_dropped == {}
        and set(report.tools_kept) == {t.name for t in env.tools}
    )
