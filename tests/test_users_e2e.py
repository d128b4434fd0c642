"""The ``openai`` policy holds a multi-turn conversation with the simulated user (a scripted
OpenAI-compatible server plays a careful model that asks first), and a run with ``+users`` records
the reference's conversations in its rollouts and SFT rows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from envkernel.config import RunConfig
from envkernel_kit.scripted import Oracle, ScriptedServer, StepContext, run_policy
from envkernel_kit.testing import SHOP_TOOLS, toy_shop
from envkernel_kit.users import user_for
from envkernel_schemas import Outcome, Task, ToolCall

pytest.importorskip("envkernel_users")
pytest.importorskip("envkernel_openai")
from envkernel_openai import OpenAIPolicy, OpenAISettings
from envkernel_users import SimulatedUser


def test_the_openai_policy_talks_with_the_simulated_user() -> None:
    env, factory = toy_shop()
    task = Task(
        id="t2",
        env_id=env.id,
        request="This is Ann Lee. Please cancel some of my orders.",
        hidden=["Only the pending one."],
        calls=[
            ToolCall(name="find_customer", arguments={"email": "ann@example.com"}),
            ToolCall(name="cancel_order", arguments={"order_id": 1}),
        ],
        outcome=Outcome(mutates=True, answer="Done: I cancelled your pending order."),
    )
    cfg = RunConfig(
        run_id="users-openai", selected=["users"], components={"user": ["simulated", "llm-user"]}
    )
    ctx = StepContext("openai", config=cfg)
    assert isinstance(user_for(ctx), SimulatedUser)  # the first active user
    with ScriptedServer(Oracle([task], ask=True)) as server:
        policy = OpenAIPolicy(OpenAISettings(base_url=server.base_url, model="m", max_retries=0))

        async def go() -> Any:
            try:
                return await run_policy(policy, task, factory(), list(SHOP_TOOLS), ctx=ctx)
            finally:
                await policy.aclose()

        traj = asyncio.run(go())
    roles = [m["role"] for m in traj.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ], roles
    assert (
        traj.messages[2]["content"] == Oracle.ASK
        and traj.messages[3]["content"] == "Only the pending one."
    )
    assert [c.call.name for c in traj.calls] == ["find_customer", "cancel_order"]
    assert (
        traj.final_answer == "Done: I cancelled your pending order."
        and traj.termination == "answer"
    )
    assert [s[1]["role"] for s in ctx.steps].count(
        "user"
    ) == 1  # the user's turn is published as a step too
    assert next(r for r in traj.final_state["orders"] if r["id"] == 1)["status"] == "cancelled"
