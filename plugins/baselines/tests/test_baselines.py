"""Unit tests of the baseline policies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from envkernel_baselines import (
    NOTHING_ANSWER,
    Mutant,
    Nothing,
    Reference,
    Settings,
    Sometimes,
    compact,
    register_policies,
    result_content,
)
from envkernel_schemas import (
    Outcome,
    RolloutRequested,
    Task,
    ToolCall,
    ToolError,
    ToolResult,
    ToolSpec,
)


class ScriptedEnv:
    """A ToolEnv answering from a script, recording calls."""

    def __init__(self, results: dict[str, ToolResult]) -> None:
        self.tools = [ToolSpec(name=n) for n in results]
        self.results = results
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return self.results[name]


TASK = Task(
    id="t1",
    env_id="shop",
    request="Hi, my email is ann@example.com. What is my tier?",
    calls=[
        ToolCall(name="find_customer", arguments={"email": "ann@example.com"}),
        ToolCall(name="get_customer", arguments={"customer_id": 1}),
    ],
    outcome=Outcome(mutates=False, answer_facts=["gold", "Ann Lée"]),
)
RESULTS = {
    "find_customer": ToolResult(ok=True, value={"id": 1}),
    "get_customer": ToolResult(
        ok=True, value={"id": 1, "name": "Ann Lée", "tier": "gold", "balance": 12.5}
    ),
}


def _req(policy: str, index: int = 0) -> RolloutRequested:
    return RolloutRequested(
        run="r", id="e1", task=TASK, policy=policy, index=index, group_size=2, purpose="gate"
    )


def test_reference_replays_and_answers_with_facts() -> None:
    env = ScriptedEnv(RESULTS)
    traj = asyncio.run(Reference().rollout(_req("reference", 1), env, None))
    assert env.calls == [
        ("find_customer", {"email": "ann@example.com"}),
        ("get_customer", {"customer_id": 1}),
    ]
    assert (
        traj.task_id == "t1"
        and traj.policy == "reference"
        and traj.index == 1
        and traj.termination == "answer"
    )
    assert all(f in traj.final_answer for f in TASK.outcome.answer_facts)
    m = traj.messages
    assert [x["role"] for x in m] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert m[1]["content"] == TASK.request
    tc = m[2]["tool_calls"][0]
    assert tc["type"] == "function" and tc["function"]["name"] == "find_customer"
    assert json.loads(tc["function"]["arguments"]) == {"email": "ann@example.com"}
    assert m[3]["tool_call_id"] == tc["id"] and json.loads(m[3]["content"]) == {"id": 1}
    assert m[4]["tool_calls"][0]["id"] != tc["id"]
    assert m[-1] == {"role": "assistant", "content": traj.final_answer}
    json.dumps(m)  # JSON-serialisable


def test_reference_reports_a_failed_last_call() -> None:
    env = ScriptedEnv(
        {
            **RESULTS,
            "get_customer": ToolResult(
                ok=False, error=ToolError(code="not_found", message="no customer 1")
            ),
        }
    )
    traj = asyncio.run(Reference().rollout(_req("reference"), env, None))
    assert "not_found" in traj.final_answer
    assert json.loads(traj.messages[-2]["content"]) == {
        "error": {"code": "not_found", "message": "no customer 1"}
    }


def test_nothing_makes_no_calls() -> None:
    env = ScriptedEnv(RESULTS)
    traj = asyncio.run(Nothing().rollout(_req("nothing"), env, None))
    assert env.calls == []
    assert traj.final_answer == NOTHING_ANSWER and traj.policy == "nothing"
    assert [x["role"] for x in traj.messages] == ["system", "user", "assistant"]
    assert not any(f.lower() in traj.final_answer.lower() for f in TASK.outcome.answer_facts)


def test_system_prompt_setting_and_helpers() -> None:
    traj = asyncio.run(
        Nothing(Settings(system_prompt="Be brief.")).rollout(
            _req("nothing"), ScriptedEnv(RESULTS), None
        )
    )
    assert traj.messages[0] == {"role": "system", "content": "Be brief."}
    assert compact({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert result_content(ToolResult(ok=True, value=None)) == "null"


def test_registration() -> None:
    got: dict[str, object] = {}
    register_policies(lambda n, f: got.__setitem__(n, f))
    assert got == {
        "reference": Reference,
        "nothing": Nothing,
        "mutant": Mutant,
        "sometimes": Sometimes,
    }


def test_sometimes_solves_a_known_share_of_attempts() -> None:
    from envkernel_baselines import SometimesSettings, solves

    task = _req("sometimes").task
    wins = [solves(f"t{i}", j, 0.3) for i in range(200) for j in range(5)]
    assert 0.25 < sum(wins) / len(wins) < 0.35  # the share, by hash
    pol = Sometimes(SometimesSettings(share=1.0))
    traj = asyncio.run(pol.rollout(_req("sometimes"), ScriptedEnv(RESULTS), None))
    assert (
        len([m for m in traj.messages if m["role"] == "tool"]) == len(task.calls)
        and traj.policy == "sometimes"
    )
    never = asyncio.run(
        Sometimes(SometimesSettings(share=0.0)).rollout(
            _req("sometimes"), ScriptedEnv(RESULTS), None
        )
    )
    assert never.final_answer == NOTHING_ANSWER
