"""Rollouts reuse known traces (``envkernel_runtime.replay``): the same calls from the same start
state are answered from the cache, and a rollout that leaves a known trace gets a sandbox that
repeats it first.

Real components: a nats-server (the ``envkernel_nats`` fixture), the kernel's sandbox service over
the ``process`` runner, the worker's :class:`~envkernel.sandbox.SandboxPool` and the shipped shop
environment. Every result and final state a cached rollout sees is compared with what a sandbox of
its own gives for the same calls.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from envkernel.context import RecordingToolEnv
from envkernel.sandbox import Sandbox, SandboxPool
from envkernel_kit.checks import sample_env
from envkernel_runtime.replay import TraceCache
from envkernel_schemas import ToolError, ToolResult


async def _rollout(
    pool: SandboxPool,
    cache: TraceCache | None,
    env: Any,
    calls: list[tuple[str, dict[str, Any]]],
    leases: list[int],
) -> tuple[list[ToolResult], Any]:
    """What the worker's ``_rollout`` does: a lazily leased sandbox, the calls, then the final
    state."""
    replay = cache.replay(pool._key("process", env, 0), env) if cache is not None else None
    async with contextlib.AsyncExitStack() as stack:

        async def lease() -> Sandbox:
            leases.append(1)
            sb = await stack.enter_async_context(pool.lease("process", env, run="r"))
            if replay is not None:
                await replay.catch_up(sb)
            return sb

        tool_env = RecordingToolEnv(None, env.tools, lease, replay)
        results = [await tool_env.call(name, args) for name, args in calls]

        async def read() -> Any:
            return await (tool_env.sandbox or await lease()).state()

        state = (
            await replay.final(tool_env.sandbox is None, read)
            if replay is not None
            else await read()
        )
    return results, state


async def test_known_traces_answer_calls_and_a_rollout_that_leaves_one_catches_up(
    served_pool: Any,
) -> None:
    env = sample_env()
    async with served_pool(per_env=4) as pool:
        seed = await pool.seed_state("process", env, run="r")
        customer = next(rows for t, rows in seed.items() if "customer" in t)[0]["id"]
        product = next(rows for t, rows in seed.items() if "product" in t)[0]["id"]
        create = ("create_order", {"customer_id": customer, "product_id": product, "quantity": 2})
        look = ("list_orders", {"customer_id": customer})
        other = ("get_product", {"product_id": product})
        trace = [look, create, look]

        direct: dict[
            str, tuple[list[ToolResult], Any]
        ] = {}  # what sandboxes of their own give, no cache
        for name, calls in (
            ("trace", trace),
            ("prefix", trace[:2]),
            ("diverge", [look, create, other]),
        ):
            direct[name] = await _rollout(pool, None, env, calls, [])
        assert direct["trace"][1] != seed  # the order was made

        cache, leases = TraceCache(), []
        first = await _rollout(pool, cache, env, trace, leases)
        assert first == direct["trace"] and len(leases) == 1 and cache.served == 0

        again: list[
            int
        ] = []  # the same calls again: every result and the final state from the cache, no sandbox
        assert await _rollout(pool, cache, env, trace, again) == direct["trace"]
        assert again == [] and cache.served == 3

        leaves: list[
            int
        ] = []  # the first two calls known, the third not: one sandbox, which repeats the two first
        assert await _rollout(pool, cache, env, [look, create, other], leaves) == direct["diverge"]
        assert leaves == [1] and cache.repeated == 2

        shorter: list[
            int
        ] = []  # a known prefix whose final state nobody read: a sandbox repeats it for the state
        assert await _rollout(pool, cache, env, trace[:2], shorter) == direct["prefix"]
        assert shorter == [1] and cache.repeated == 4

        fresh, together = TraceCache(), []  # rollouts that start at once share one execution
        both = await asyncio.gather(
            *(_rollout(pool, fresh, env, trace, together) for _ in range(3))
        )
        assert all(r == direct["trace"] for r in both) and together == [1] and fresh.served == 6

        async def no_lease() -> Sandbox:
            raise AssertionError("a known trace needs no sandbox")

        walk = RecordingToolEnv(
            None, env.tools, no_lease, fresh.replay(pool._key("process", env, 0), env)
        )  # a policy calling tools at once
        assert (
            list(await asyncio.gather(*(walk.call(n, a) for n, a in trace[:2])))
            == direct["prefix"][0]
        )  # taken in turn


async def test_a_timeout_is_not_kept_and_replay_can_be_turned_off(monkeypatch: Any) -> None:
    cache = TraceCache()
    walk = cache.replay(("process", 0, "env"), None)
    assert walk is not None
    assert await walk.known("slow", {}, True) is None
    walk.learn(ToolResult(ok=False, error=ToolError(code="timeout", message="stopped")))
    assert walk.key == b""  # nothing after an unkept result is kept either
    assert await walk.known("next", {}, True) is None
    again = cache.replay(("process", 0, "env"), None)
    assert (
        again is not None and await again.known("slow", {}, True) is None
    )  # asked again: it is made again
    again.learn(None)  # the call failed: the others are not left waiting
    assert await cache.replay(("process", 0, "env"), None).known("slow", {}, True) is None  # type: ignore[union-attr]

    class Workspace:
        behaviour = type("B", (), {"kind": "workspace"})()

    assert cache.replay(("process", 0, "env"), Workspace()) is None
    monkeypatch.setenv("ENVKERNEL_REPLAY", "0")
    assert cache.replay(("process", 0, "env"), None) is None


async def test_the_runners_settings_are_part_of_the_start(served_pool: Any) -> None:
    """The same calls under other runner settings (a memory or response limit can change a result)
    are not answered from the cache."""
    env = sample_env()
    async with served_pool(per_env=2) as pool:
        seed = await pool.seed_state("process", env, run="r")
        product = next(rows for t, rows in seed.items() if "product" in t)[0]["id"]
        calls = [("get_product", {"product_id": product})]
        cache = TraceCache()

        async def walk(settings: Any) -> list[int]:
            leases: list[int] = []
            replay = cache.replay(pool._key("process", env, 0), env, None, settings)

            async def lease() -> Sandbox:
                leases.append(1)
                sb = await stack.enter_async_context(pool.lease("process", env, run="r"))
                await replay.catch_up(sb)  # type: ignore[union-attr]
                return sb

            async with contextlib.AsyncExitStack() as stack:
                tool_env = RecordingToolEnv(None, env.tools, lease, replay)
                for name, args in calls:
                    await tool_env.call(name, args)
            return leases

        small, large = [{"memory_mb": 256}, None], [{"memory_mb": 1024}, None]
        assert await walk(small) == [1]
        assert await walk(small) == [] and cache.served == 1  # the same settings: known
        assert await walk(large) == [1] and cache.served == 1  # other settings: made again


async def test_a_hit_is_a_copy_of_its_own(served_pool: Any) -> None:
    """A consumer that changes a result or a final state it got from the cache changes nothing for
    the next one."""
    env = sample_env()
    async with served_pool(per_env=2) as pool:
        seed = await pool.seed_state("process", env, run="r")
        customer = next(rows for t, rows in seed.items() if "customer" in t)[0]["id"]
        trace = [
            ("list_orders", {"customer_id": customer}),
            ("get_customer", {"customer_id": customer}),
        ]
        direct = await _rollout(pool, None, env, trace, [])
        cache = TraceCache()
        assert await _rollout(pool, cache, env, trace, []) == direct
        results, state = await _rollout(pool, cache, env, trace, [])  # from the cache
        assert (results, state) == direct and cache.served == 2
        results[1].value["name"] = "changed by a consumer"  # type: ignore[index]
        results[0].value.clear() if isinstance(results[0].value, (list, dict)) else None
        next(iter(state.values())).clear()
        assert await _rollout(pool, cache, env, trace, []) == direct and cache.served == 4


def test_the_cache_is_bounded_by_bytes() -> None:
    async def go() -> None:
        cache = TraceCache(results_bytes=64_000, states_bytes=64_000)
        for i in range(200):  # 200 results of ~1 KB each, from 200 starts
            walk = cache.replay(("process", 0, f"env{i}"), None)
            assert walk is not None and await walk.known("get", {}, True) is None
            walk.learn(ToolResult(ok=True, value={"i": i, "text": "x" * 1000}))
        assert cache.results.size <= 64_000 and 40 <= len(cache.results.items) <= 64
        old = cache.replay(("process", 0, "env0"), None)
        assert old is not None and await old.known("get", {}, True) is None  # the oldest went first
        old.learn(None)
        new = cache.replay(("process", 0, "env199"), None)
        assert new is not None and (await new.known("get", {}, True)).value["i"] == 199  # type: ignore[union-attr]
        big = cache.replay(("process", 0, "big"), None)
        assert big is not None and await big.known("get", {}, True) is None
        big.learn(
            ToolResult(ok=True, value="y" * 20_000)
        )  # more than an eighth of the table: not kept
        assert (
            cache.results.size <= 64_000
            and await cache.replay(("process", 0, "big"), None).known("get", {}, True) is None
        )  # type: ignore[union-attr]

    asyncio.run(go())


def test_a_result_msgpack_cannot_hold_is_not_kept_and_no_one_waits_for_it() -> None:
    """Environment code can return an integer beyond 64 bits (JSON allows it; msgpack does not).
    Such a result is not kept: the rollout that made the call goes on, and one waiting on the same
    call makes it itself instead of waiting for good."""

    async def go() -> None:
        cache = TraceCache()
        first, second = (
            cache.replay(("process", 0, "env"), None),
            cache.replay(("process", 0, "env"), None),
        )
        assert first is not None and second is not None
        assert await first.known("get", {}, True) is None  # claims the call
        waiting = asyncio.ensure_future(second.known("get", {}, True))
        await asyncio.sleep(0)
        first.learn(ToolResult(ok=True, value={"id": 10**20}))
        assert await asyncio.wait_for(waiting, 30) is None  # not kept: it makes the call itself
        second.learn(ToolResult(ok=True, value={"id": 10**20}))
        assert first.key == b"" and second.key == b""  # nothing after an unkept result is replayed
        assert await cache.replay(("process", 0, "env"), None).known("get", {}, True) is None  # type: ignore[union-attr]

    asyncio.run(go())


async def test_a_mismatch_drops_the_entry_and_the_start_falls_back_to_sandboxes(
    served_pool: Any,
) -> None:
    """A known result that a sandbox does not repeat (an earlier execution gave another one: the
    environment is not deterministic) is counted, dropped and said; that start is then answered by
    sandboxes alone."""
    env = sample_env()
    async with served_pool(per_env=2) as pool:
        seed = await pool.seed_state("process", env, run="r")
        customer = next(rows for t, rows in seed.items() if "customer" in t)[0]["id"]
        product = next(rows for t, rows in seed.items() if "product" in t)[0]["id"]
        look, other = (
            ("get_customer", {"customer_id": customer}),
            ("get_product", {"product_id": product}),
        )
        direct = await _rollout(pool, None, env, [look, other], [])
        cache = TraceCache()
        start = pool._key("process", env, 0)
        earlier = cache.replay(start, env)  # what another execution of the first call gave
        assert earlier is not None and await earlier.known(*look, True) is None
        earlier.learn(ToolResult(ok=True, value={"id": customer, "name": "someone else"}))

        walk = cache.replay(start, env)
        assert walk is not None
        assert (await walk.known(*look, True)).value["name"] == "someone else"  # type: ignore[union-attr]
        assert (
            await walk.known(*other, True) is None
        )  # the trace leaves the cache: a sandbox repeats the first call
        async with pool.lease("process", env, run="r") as sb:
            differs = await walk.catch_up(sb)
        walk.learn(None)
        assert "get_customer" in differs and "someone else" in differs
        assert cache.mismatches == 1 and cache.repeated == 1
        assert cache.replay(start, env) is None  # sandboxes alone from now on
        leases: list[int] = []
        assert await _rollout(pool, cache, env, [look, other], leases) == direct and leases == [1]
