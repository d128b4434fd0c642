"""Unit tests of the ``walk`` sampler (random walks over the tool graph) on the toy shop."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import msgspec
import pytest

from envkernel_chains.walk import RandomWalkSampler, Walk, WalkSettings, register_samplers
from envkernel_kit.testing import SHOP_TOOLS, FakeContext, toy_shop
from envkernel_schemas import Task


def _sample(settings: WalkSettings, seed: int = 0, out: Path | None = None) -> list[Task]:
    env, factory = toy_shop()
    ctx = FakeContext(component="walk", seed=seed, sandboxes={env.id: factory}, out_dir=out)

    async def go() -> list[Task]:
        return [t async for t in Walk(settings).sample(env, ctx)]

    return asyncio.run(go())


def test_walks_start_where_a_person_can_and_follow_data_edges(tmp_path: Path) -> None:
    tasks = _sample(WalkSettings(tasks_per_env=25), out=tmp_path)
    assert len(tasks) == 25 and len({t.id for t in tasks}) == 25
    starts = {"find_customer", "list_products"}  # no id to look up first
    names = [t.name for t in SHOP_TOOLS]
    for t in tasks:
        assert t.sampler == "walk" and t.calls[0].name in starts
        assert not any(re.search(rf"\b{n}\b", t.request) for n in names)
        for a, b in zip(t.calls, t.calls[1:], strict=False):
            assert a.name != b.name or a.arguments != b.arguments
    assert len({len(t.calls) for t in tasks}) >= 3
    stats = json.loads((tmp_path / "envs" / "toyshop" / "sampling.json").read_text())["walk"]
    assert stats["tasks"] == 25 and stats["sampler"] == "walk"


def test_walk_is_deterministic() -> None:
    a = _sample(WalkSettings(tasks_per_env=10), seed=2)
    b = _sample(WalkSettings(tasks_per_env=10), seed=2)
    assert [t.request for t in a] == [t.request for t in b]


def test_settings_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"tasks": 3}, WalkSettings)
    got: dict[str, object] = {}
    register_samplers(lambda n, f: got.__setitem__(n, f))
    assert got == {"walk": Walk}
    assert RandomWalkSampler.name == "walk"
