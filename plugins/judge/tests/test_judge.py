"""The judge reward model against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

from envkernel.config import settings_for
from envkernel.errors import ConfigError
from envkernel_judge import Judge, JudgeSettings, parse_verdict, register_reward_models, transcript
from envkernel_kit.scripted import (
    ByTurn,
    ScriptedServer,
    Sequence,
    completion,
    error,
    no_choices,
    not_json,
    stall,
)
from envkernel_kit.testing import FakeContext
from envkernel_schemas import CallRecord, Outcome, Reward, Task, ToolCall, ToolResult, Trajectory

SECRET = "sk-judge-secret"
TASK = Task(
    id="t1",
    env_id="shop",
    request="What does the office chair cost?",
    calls=[ToolCall(name="get_product", arguments={"product_id": 2})],
    outcome=Outcome(mutates=False, answer_facts=["149"]),
)
TRAJ = Trajectory(
    task_id="t1",
    policy="openai",
    messages=[
        {"role": "system", "content": "sys"},
        {"role": "user", "content": TASK.request},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "get_product", "arguments": '{"product_id":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": '{"name":"Office Chair","price":149.0}'},
        {"role": "assistant", "content": "It costs 149."},
    ],
    calls=[
        CallRecord(
            call=ToolCall(name="get_product", arguments={"product_id": 2}),
            result=ToolResult(ok=True, value={"price": 149.0}),
        )
    ],
    final_answer="It costs 149.",
)


def verdict(score: float, v: str = "complete", reason: str = "ok") -> dict:
    return completion(json.dumps({"score": score, "verdict": v, "reason": reason}))


def judge(srv: ScriptedServer, **kw: object) -> Judge:
    fields = {
        "base_url": srv.base_url,
        "api_key": SECRET,
        "model": "judge-model",
        "backoff": 0.01,
        "backoff_max": 0.02,
        "request_timeout": 5.0,
        **kw,
    }
    return Judge(JudgeSettings(**fields))  # type: ignore[arg-type]


def score(j: Judge, trajectory: Trajectory = TRAJ) -> Reward:
    async def go() -> Reward:
        try:
            return await j.score(TASK, trajectory, FakeContext(component="judge"))
        finally:
            await j.aclose()

    return asyncio.run(go())


def failed(r: Reward) -> bool:
    return (
        r.score == 0.0
        and r.error.startswith("judge failed")
        and any("judge failed" in x for x in r.reasons)
    )


def test_complete_verdict_and_what_the_judge_sees() -> None:
    with ScriptedServer(ByTurn([verdict(1.0, reason="the answer states the price")])) as srv:
        r = score(judge(srv))
        req = srv.requests[0]
    assert r.score == 1.0 and r.outcome == 1.0 and r.error == "" and r.tau == 0.0
    assert r.reasons == ["judge: complete (1): the answer states the price"]
    assert (
        req["model"] == "judge-model"
        and req["temperature"] == 0.0
        and req["response_format"] == {"type": "json_object"}
    )
    system, user = req["messages"][0]["content"], req["messages"][1]["content"]
    assert "agent_error" in system and '"score"' in system
    for needle in (
        TASK.request,
        'get_product({"product_id": 2})',
        "- 149",
        "Office Chair",
        "It costs 149.",
    ):
        assert needle in user
    assert SECRET not in json.dumps(msgspec.to_builtins(r))


def test_partial_verdict_with_prose_and_fences() -> None:
    reply = completion(
        'Here you go:\n```json\n{"score": 0.4, "verdict": "Incomplete", "reason": "half done"}\n```'
    )
    with ScriptedServer(ByTurn([reply])) as srv:
        r = score(judge(srv))
    assert r.score == pytest.approx(0.4) and "incomplete" in r.reasons[0]


def test_unparsable_reply_is_asked_again_then_accepted() -> None:
    with ScriptedServer(
        Sequence(
            [
                completion("looks good to me!"),
                verdict(0.0, "agent_error", "changed the wrong order"),
            ]
        )
    ) as srv:
        r = score(judge(srv))
        second = srv.requests[1]["messages"]
    assert (
        r.score == 0.0
        and r.error == ""
        and "agent_error" in r.reasons[0]
        and "2 attempts" in r.reasons[1]
    )
    assert (
        second[-2] == {"role": "assistant", "content": "looks good to me!"}
        and "could not be used" in second[-1]["content"]
    )


@pytest.mark.parametrize(
    "bad",
    [
        completion("no json here"),
        completion('{"score": 1.7, "verdict": "complete"}'),
        completion('{"score": "high", "verdict": "complete"}'),
        completion('{"score": 1, "verdict": "great"}'),
        completion("[1, 2]"),
        no_choices(),
    ],
)
def test_invalid_verdicts_are_errors_never_silent_zeros(bad: dict) -> None:
    with ScriptedServer(ByTurn([bad, bad, bad])) as srv:
        r = score(judge(srv))
        assert srv.calls == 2  # parse_attempts
    assert failed(r) and "no valid verdict after 2" in r.error


@pytest.mark.parametrize(
    "reply, what",
    [
        (error(500, "down"), "HTTP 500"),
        (not_json(), "bad_response"),
        (error(401, f"bad key {SECRET}"), "HTTP 401"),
    ],
)
def test_server_failures_are_errors(reply, what: str) -> None:  # type: ignore[no-untyped-def]
    with ScriptedServer(ByTurn([reply])) as srv:
        r = score(judge(srv, max_retries=1))
    assert failed(r) and what in r.error
    assert SECRET not in r.error and SECRET not in " ".join(r.reasons)


def test_retry_then_verdict() -> None:
    with ScriptedServer(
        Sequence([error(429, "slow", {"Retry-After": "0"}), error(502, "gw"), verdict(1.0)])
    ) as srv:
        r = score(judge(srv))
        assert srv.calls == 3
    assert r.score == 1.0 and r.error == ""


def test_stalled_judge_times_out() -> None:
    with ScriptedServer(ByTurn([stall(30)])) as srv:
        r = score(judge(srv, request_timeout=0.2, max_retries=0))
    assert failed(r) and "timeout" in r.error


def test_parse_verdict_rules() -> None:
    assert parse_verdict('{"score": 1, "verdict": "complete"}').score == 1.0
    assert (
        parse_verdict('{"score": "0.5", "verdict": "agent-error", "reason": ["a"]}').verdict
        == "agent_error"
    )
    for bad in (
        '{"score": true, "verdict": "complete"}',
        '{"score": NaN, "verdict": "complete"}',
        '{"verdict": "complete"}',
        "{",
    ):
        with pytest.raises(ValueError):
            parse_verdict(bad)


def test_transcript_is_cut_in_the_middle() -> None:
    long = msgspec.structs.replace(
        TRAJ,
        messages=[*TRAJ.messages, {"role": "tool", "tool_call_id": "c9", "content": "x" * 50_000}],
        termination="max_turns",
    )
    text = transcript(long, limit=3000)
    assert (
        len(text) < 3200
        and "characters cut" in text
        and text.endswith("[rollout ended: max_turns]")
    )


def test_settings_and_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "ENVKERNEL_JUDGE_BASE_URL",
        "ENVKERNEL_JUDGE_MODEL",
        "ENVKERNEL_JUDGE_API_KEY",
    ):
        monkeypatch.delenv(v, raising=False)
    s = settings_for(
        "judge", JudgeSettings, {}, environ={"ENVKERNEL_JUDGE_MODEL": "jm", "OPENAI_MODEL": "pm"}
    )
    assert s.model == "jm"
    with pytest.raises(ConfigError, match="model"):
        asyncio.run(
            Judge(JudgeSettings(base_url="http://127.0.0.1:9/v1")).score(
                TASK, TRAJ, FakeContext(component="judge")
            )
        )
    monkeypatch.setenv("OPENAI_MODEL", "policy-model")
    with ScriptedServer(ByTurn([verdict(1.0)])) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        r = score(Judge())
        assert srv.requests[0]["model"] == "policy-model" and r.score == 1.0
    with pytest.raises(ConfigError):
        settings_for("judge", JudgeSettings, {"parse_attempts": 0}, environ={})
    got = {}
    register_reward_models(lambda name, factory: got.setdefault(name, factory))
    assert got == {"judge": Judge}


def test_local_server_habits_refused_json_mode_escaped_verdict_and_tool_call() -> None:
    """As llama-cpp-python's server answered: HTTP 500 on ``response_format``, then an
    HTML-escaped verdict; and a verdict sent as a tool call's arguments."""

    def llama_like(request: dict, n: int):  # type: ignore[no-untyped-def]
        if "response_format" in request:
            return error(500, "Internal Server Error")
        if n == 1:
            return completion(
                json.dumps({"score": 1, "verdict": "complete", "reason": "Bo's order"}).replace(
                    '"', "&quot;"
                )
            )
        return completion(
            None,
            [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "verdict",
                        "arguments": json.dumps(
                            {"score": 0.5, "verdict": "incomplete", "reason": "half"}
                        ),
                    },
                }
            ],
        )

    with ScriptedServer(llama_like) as srv:
        j = judge(srv)
        first, second = score(j), score(j)
        sent = [("response_format" in r) for r in srv.requests]
    assert first.score == 1.0 and not first.error and "Bo's order" in first.reasons[0]
    assert second.score == 0.5 and not second.error
    assert sent == [True, False, False], "the refusal is remembered per server"
