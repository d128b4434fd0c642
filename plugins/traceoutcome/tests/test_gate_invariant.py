"""Cross-plugin check of the gate invariant on sampled tasks: reference = 1, do-nothing = 0.

Skipped unless the probe, chains and baselines plugins are importable too.
"""

from __future__ import annotations

import asyncio

import pytest

testing = pytest.importorskip("envkernel_kit.testing")
chains = pytest.importorskip("envkernel_chains")
baselines = pytest.importorskip("envkernel_baselines")

from envkernel_schemas import CallRecord, RolloutRequested, Task, ToolCall, Trajectory  # noqa: E402
from envkernel_traceoutcome import Settings, TraceOutcome  # noqa: E402


class RecordingEnv:
    """Like the kernel's RecordingToolEnv: forwards to the sandbox and records each call."""

    def __init__(self, sb, tools) -> None:  # type: ignore[no-untyped-def]
        self.sb, self.tools, self.records = sb, tools, []

    async def call(self, name, arguments):  # type: ignore[no-untyped-def]
        res = await self.sb.call(name, arguments)
        self.records.append(CallRecord(call=ToolCall(name=name, arguments=arguments), result=res))
        return res


async def _rollout(policy, name: str, task: Task, env_spec, factory) -> Trajectory:  # type: ignore[no-untyped-def]
    sb = factory()
    await sb.patch(
        task.seed_patch()
    )  # what the kernel does first: the task's initial state (seed plus planted rows)
    env = RecordingEnv(sb, env_spec.tools)
    req = RolloutRequested(run="r", id="x", task=task, policy=name, purpose="gate")
    traj = await policy.rollout(req, env, None)
    # what the kernel does after a rollout
    import msgspec

    return msgspec.structs.replace(traj, calls=env.records, final_state=await sb.state())


def test_reference_one_nothing_zero_on_sampled_tasks() -> None:
    env, factory = testing.toy_shop()
    ctx = testing.FakeContext(component="chains", sandboxes={env.id: factory})

    async def go() -> list[tuple[float, float]]:
        tasks = [
            t
            async for t in chains.Chains(chains.Settings(tasks_per_env=40, attempts=400)).sample(
                env, ctx
            )
        ]
        # the toy shop has fewer good chains than asked for once re-reads are dropped and each
        # kind of change is capped (chains.kind_share)
        assert len(tasks) >= 30, len(tasks)
        out = []
        for tau in (0.1, 0.5, 0.9):
            rm = TraceOutcome(Settings(tau=tau))
            for t in tasks:
                ref = await _rollout(baselines.Reference(), "reference", t, env, factory)
                nothing = await _rollout(baselines.Nothing(), "nothing", t, env, factory)
                out.append((rm.score(t, ref, ctx).score, rm.score(t, nothing, ctx).score))
        return out

    for ref, nothing in asyncio.run(go()):
        assert ref == 1.0
        assert nothing == 0.0


def test_reference_one_nothing_zero_on_the_real_shop() -> None:
    """The same invariant over the ``sample`` shop in ``process`` sandboxes (skipped without
    them)."""
    sample = pytest.importorskip("envkernel_sample")
    process = pytest.importorskip("envkernel_process")

    env = sample.shop_env()
    runner = process.ProcessRunner()

    def Ctx() -> testing.RunnerContext:
        return testing.RunnerContext(runner, component="chains")

    async def go() -> list[tuple[float, float]]:
        try:
            tasks = [
                t
                async for t in chains.Chains(
                    chains.Settings(tasks_per_env=24, attempts=300)
                ).sample(env, Ctx())
            ]
            lengths = {len(t.calls) for t in tasks}
            # 0 calls: a request the domain policy says to refuse, or to confirm first
            assert len(tasks) == 24 and lengths <= set(range(0, 7)) and len(lengths) >= 3
            rm = TraceOutcome()
            out = []
            for t in tasks:
                pair = []
                for policy, name in (
                    (baselines.Reference(), "reference"),
                    (baselines.Nothing(), "nothing"),
                ):
                    async with Ctx().sandbox(env) as sb:
                        await sb.patch(t.seed_patch())
                        rec = RecordingEnv(sb, env.tools)
                        traj = await policy.rollout(
                            RolloutRequested(run="r", id="x", task=t, policy=name, purpose="gate"),
                            rec,
                            None,
                        )
                        import msgspec

                        traj = msgspec.structs.replace(
                            traj, calls=rec.records, final_state=await sb.state()
                        )
                    pair.append(rm.score(t, traj, Ctx()).score)
                out.append((pair[0], pair[1]))
            return out
        finally:
            await runner.aclose()

    for ref, nothing in asyncio.run(go()):
        assert (ref, nothing) == (1.0, 0.0)
