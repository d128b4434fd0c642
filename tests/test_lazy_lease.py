"""A rollout's sandbox is leased at its first tool call, and one that makes no call ends in the seed
state.

Real components: a nats-server (the ``envkernel_nats`` fixture), the kernel's sandbox service over
the ``process`` runner, the worker's :class:`~envkernel.sandbox.SandboxPool` and the shipped shop
environment. Half the gate's rollouts (do-nothing, the mutants that do not apply to a task) make
no call; they no longer restore a sandbox and read its state over the bus each time.
"""

from __future__ import annotations

from typing import Any

import pytest

from envkernel.context import RecordingToolEnv
from envkernel.errors import SandboxError
from envkernel.sandbox import Sandbox
from envkernel_kit.checks import sample_env


async def test_the_seed_state_is_read_once_and_a_lazy_tool_env_leases_at_its_first_call(
    served_pool: Any,
) -> None:
    env = sample_env()
    async with served_pool(per_env=2) as pool:
        seed = await pool.seed_state("process", env, run="r")
        assert seed and pool.opened == 1 and all(isinstance(rows, list) for rows in seed.values())
        assert (
            await pool.seed_state("process", env, run="r") is seed and pool.opened == 1
        )  # kept: no second read
        leased: list[Sandbox] = []

        async with pool.lease(
            "process", env, run="r"
        ) as sb:  # a fresh sandbox's state is the seed state
            assert await sb.state() == seed

        tool = env.tools[0].name
        async with pool.lease("process", env, run="r") as held:

            async def lease() -> Sandbox:
                leased.append(held)
                return held

            tool_env = RecordingToolEnv(None, env.tools, lease)
            assert tool_env.sandbox is None and not leased  # nothing leased before a call
            args: dict[str, Any] = {}
            res = await tool_env.call(tool, args)
            res2 = await tool_env.call(tool, args)
            assert len(leased) == 1 and tool_env.sandbox is held and len(tool_env.records) == 2
            assert res.ok == res2.ok and tool_env.fault is None

        async def broken() -> Sandbox:
            raise SandboxError("no sandbox to be had")

        failing = RecordingToolEnv(None, env.tools, broken)
        with pytest.raises(SandboxError, match="no sandbox to be had"):
            await failing.call(tool, {})
        assert (
            isinstance(failing.fault, SandboxError) and failing.records == []
        )  # the rollout fails as infra, not the policy's call
