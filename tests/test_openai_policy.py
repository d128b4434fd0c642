"""The ``openai`` policy against a real HTTP server on loopback speaking Chat Completions.

Every test runs the real ``openai`` client (AsyncOpenAI) over a socket against
:class:`envkernel_kit.scripted.ScriptedServer`, on the toy shop's in-memory sandboxes, and
scores with the real reward models. Every run must finish, score what it can and count what
failed.
"""

from __future__ import annotations

import asyncio
import json
import time

import msgspec
import pytest

pytest.importorskip("envkernel_kit.testing")
pytest.importorskip("envkernel_chains")

import envkernel_chains as chains
import envkernel_kit.testing as testing_probe
from envkernel.config import public, settings_for
from envkernel.errors import ConfigError
from envkernel_checklist import Checklist
from envkernel_kit.scripted import (
    ByTurn,
    Oracle,
    ScriptedServer,
    Sequence,
    StepContext,
    completion,
    error,
    no_choices,
    not_json,
    run_policy,
    stall,
    tool_call,
)
from envkernel_kit.testing import FakeContext
from envkernel_openai import OpenAIPolicy, OpenAISettings
from envkernel_schemas import Outcome, Task, ToolCall
from envkernel_traceoutcome import TraceOutcome

SECRET = "sk-test-secret"
ENV, SANDBOX = testing_probe.toy_shop()

# a read-only task and a mutating task over the toy shop, grounded by hand
LOOKUP = Task(
    id="t-lookup",
    env_id=ENV.id,
    request="What does the office chair cost?",
    calls=[ToolCall(name="get_product", arguments={"product_id": 2})],
    outcome=Outcome(mutates=False, answer_facts=["149"]),
)
CANCEL = Task(
    id="t-cancel",
    env_id=ENV.id,
    request="Please cancel Bo's pending order.",
    calls=[
        ToolCall(name="find_customer", arguments={"email": "bo@example.com"}),
        ToolCall(name="cancel_order", arguments={"order_id": 3}),
    ],
    outcome=Outcome(
        mutates=True,
        initial_state={
            "orders": [
                {k: v for k, v in r.items() if k not in ("id", "created_at")}
                for r in testing_probe.SHOP_STATE["orders"]
            ]
        },
        expected_state={
            "orders": [
                {k: v for k, v in r.items() if k not in ("id", "created_at")}
                | ({"status": "cancelled"} if r["id"] == 3 else {})
                for r in testing_probe.SHOP_STATE["orders"]
            ]
        },
    ),
)


def policy(server: ScriptedServer, **overrides: object) -> OpenAIPolicy:
    fields = {
        "base_url": server.base_url,
        "api_key": SECRET,
        "model": "scripted",
        "backoff": 0.01,
        "backoff_max": 0.05,
        "request_timeout": 5.0,
        "rollout_timeout": 20.0,
        **overrides,
    }
    return OpenAIPolicy(OpenAISettings(**fields))  # type: ignore[arg-type]


async def roll(p: OpenAIPolicy, task: Task, ctx: StepContext | None = None, index: int = 0):  # type: ignore[no-untyped-def]
    try:
        return await run_policy(
            p, task, SANDBOX(), ENV.tools, ctx=ctx or StepContext(), index=index
        )
    finally:
        await p.aclose()


def no_secret(*things: object) -> None:
    for t in things:
        text = t if isinstance(t, str) else json.dumps(msgspec.to_builtins(t), default=str)
        assert SECRET not in text


def test_scripted_model_solves_sampled_tasks() -> None:
    """An oracle model solves chains-sampled tasks: reference-grade scores from both reward
    models."""
    ctx = testing_probe.FakeContext(component="chains", sandboxes={ENV.id: SANDBOX})

    async def go() -> None:
        tasks = [
            t
            async for t in chains.Chains(chains.Settings(tasks_per_env=12, attempts=300)).sample(
                ENV, ctx
            )
        ]
        assert len(tasks) == 12
        for parallel in (False, True):
            with ScriptedServer(Oracle(tasks, parallel=parallel)) as srv:
                p = policy(srv)
                for t in tasks:
                    steps = StepContext()
                    traj = await run_policy(p, t, SANDBOX(), ENV.tools, ctx=steps)
                    assert traj.termination == "answer", traj.error
                    assert traj.format_errors == 0
                    assert len(traj.calls) == len(t.calls)
                    assert (
                        TraceOutcome().score(t, traj, FakeContext(component="traceoutcome")).score
                        == 1.0
                    )
                    assert (
                        Checklist().score(t, traj, FakeContext(component="checklist")).score == 1.0
                    )
                    assert traj.usage.prompt_tokens > 0 and traj.usage.completion_tokens > 0
                    turns = 2 if parallel else len(t.calls) + 1
                    assert len(traj.latencies) == turns
                    # every assistant and tool message was published as a step, in order
                    assert [m for _, m in steps.steps] == traj.messages[2:]
                    # parallel calls: one assistant message, then one tool message per call, ids
                    # matching
                    if parallel:
                        asked = [tc["id"] for tc in traj.messages[2]["tool_calls"]]
                        answered = [m["tool_call_id"] for m in traj.messages[3 : 3 + len(asked)]]
                        assert asked == answered and len(asked) == len(t.calls)
                await p.aclose()
                assert all(a == f"Bearer {SECRET}" for a in srv.authorizations)
                sent = srv.requests[0]
                assert {tool["function"]["name"] for tool in sent["tools"]} == {
                    t.name for t in ENV.tools
                }
                assert (
                    sent["tools"][0]["type"] == "function"
                    and sent["model"] == "scripted"
                    and sent["max_tokens"] == 1024
                )

    asyncio.run(go())


def test_scripted_model_solves_hand_made_tasks() -> None:
    """The same without the sampler: a read-only and a two-step mutating task, scored 1 by all
    reward models."""

    async def go() -> None:
        with ScriptedServer(Oracle([LOOKUP, CANCEL])) as srv:
            p = policy(srv)
            for t in (LOOKUP, CANCEL):
                traj = await run_policy(p, t, SANDBOX(), ENV.tools)
                assert traj.termination == "answer" and len(traj.calls) == len(t.calls)
                assert (
                    TraceOutcome().score(t, traj, FakeContext(component="traceoutcome")).score
                    == 1.0
                )
                assert Checklist().score(t, traj, FakeContext(component="checklist")).score == 1.0
            await p.aclose()

    asyncio.run(go())


def test_answer_without_tools() -> None:
    with ScriptedServer(ByTurn([completion("Sure, it's cancelled!")])) as srv:
        traj = asyncio.run(roll(policy(srv), CANCEL))
    assert traj.termination == "answer" and traj.final_answer == "Sure, it's cancelled!"
    assert traj.calls == [] and traj.format_errors == 0
    assert TraceOutcome().score(CANCEL, traj, FakeContext(component="traceoutcome")).score == 0.0
    assert Checklist().score(CANCEL, traj, FakeContext(component="checklist")).score == 0.0


def test_malformed_tool_call_json_is_an_observation_and_a_format_error() -> None:
    script = Sequence(
        [
            completion("", [tool_call("get_product", '{"product_id": 2', id="bad")]),
            completion("", [tool_call("get_product", {"product_id": 2}, id="good")]),
            completion("The chair costs 149."),
        ]
    )
    with ScriptedServer(script) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
        second = srv.requests[1]["messages"]
    assert traj.termination == "answer" and traj.format_errors == 1
    assert [c.call.name for c in traj.calls] == [
        "get_product"
    ]  # the malformed call never reached the sandbox
    bad_obs = json.loads(traj.messages[3]["content"])
    assert traj.messages[3]["tool_call_id"] == "bad" and bad_obs["error"]["code"] == "invalid_json"
    # the trajectory keeps what the model sent; the server got a copy it can re-parse
    assert traj.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"product_id": 2'
    assert second[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    r = TraceOutcome().score(LOOKUP, traj, FakeContext(component="traceoutcome"))
    assert r.format_penalty == pytest.approx(0.05) and r.score == pytest.approx(0.95)
    assert Checklist().score(LOOKUP, traj, FakeContext(component="checklist")).score == 1.0


def test_unknown_tool_and_invalid_arguments() -> None:
    script = Sequence(
        [
            completion(
                "",
                [
                    tool_call("delete_everything", {}),  # unknown
                    tool_call("get_product", {}),  # missing required
                    tool_call("get_product", {"product_id": "two"}),  # wrong type
                    tool_call("get_product", "[2]"),  # JSON, but not an object
                    {"id": "x", "type": "function", "function": {"arguments": "{}"}},  # no name
                    tool_call("get_product", {"product_id": 2}),  # fine: parallel with the rest
                ],
            ),
            completion("149"),
        ]
    )
    with ScriptedServer(script) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
    assert traj.termination == "answer" and traj.format_errors == 5
    codes = [
        json.loads(m["content"]).get("error", {}).get("code")
        for m in traj.messages
        if m["role"] == "tool"
    ]
    assert codes == [
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
        "invalid_arguments",
        "invalid_tool_call",
        None,
    ]
    assert len(traj.calls) == 1 and traj.calls[0].result.ok
    assert TraceOutcome().score(
        LOOKUP, traj, FakeContext(component="traceoutcome")
    ).format_penalty == pytest.approx(0.25)


@pytest.mark.parametrize(
    "failure",
    [error(429, "slow down", {"Retry-After": "0"}), error(500, "boom"), error(503, "busy")],
)
def test_retry_on_429_and_5xx_then_success(failure) -> None:  # type: ignore[no-untyped-def]
    script = Sequence(
        [
            failure,
            failure,
            completion("", [tool_call("get_product", {"product_id": 2})]),
            completion("It costs 149."),
        ]
    )
    with ScriptedServer(script) as srv:
        traj = asyncio.run(roll(policy(srv, max_retries=3), LOOKUP))
        assert srv.calls == 4  # no stacking: exactly our retries, the client made none of its own
    assert traj.termination == "answer" and traj.error == ""
    assert TraceOutcome().score(LOOKUP, traj, FakeContext(component="traceoutcome")).score == 1.0


def test_retries_are_bounded_and_recorded() -> None:
    with ScriptedServer(ByTurn([error(500, "down")])) as srv:
        traj = asyncio.run(roll(policy(srv, max_retries=2), LOOKUP))
        assert srv.calls == 3
    assert (
        traj.termination == "error"
        and "HTTP 500" in traj.error
        and "gave up after 3 attempts" in traj.error
    )


def test_client_errors_are_not_retried_and_secrets_are_scrubbed() -> None:
    with ScriptedServer(ByTurn([error(401, f"Incorrect API key provided: {SECRET}")])) as srv:
        ctx = StepContext()
        traj = asyncio.run(roll(policy(srv), LOOKUP, ctx))
        assert srv.calls == 1
    assert traj.termination == "error" and "HTTP 401" in traj.error and "<redacted>" in traj.error
    no_secret(traj, ctx.steps)


def test_empty_choices_after_progress_keeps_what_was_done() -> None:
    script = Sequence(
        [completion("", [tool_call("find_customer", {"email": "bo@example.com"})]), no_choices()]
    )
    with ScriptedServer(script) as srv:
        traj = asyncio.run(roll(policy(srv), CANCEL))
    assert traj.termination == "no_choices" and "no choices" in traj.error
    assert len(traj.calls) == 1
    r = TraceOutcome().score(CANCEL, traj, FakeContext(component="traceoutcome"))
    # the trace half-matched, but the order was never cancelled: the outcome (τ 0) gives 0
    assert r.trace == 0.5 and r.score == 0.0


def test_body_that_is_not_json() -> None:
    with ScriptedServer(Sequence([not_json()])) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
    assert (
        traj.termination == "error"
        and traj.error.startswith("bad_response:")
        and "502 Bad Gateway" in traj.error
    )
    assert TraceOutcome().score(LOOKUP, traj, FakeContext(component="traceoutcome")).score == 0.0


def test_finish_reason_length() -> None:
    cut = completion("The chair costs 1", finish_reason="length")
    with ScriptedServer(Sequence([cut])) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
    assert traj.termination == "length" and "finish_reason=length" in traj.error
    assert (
        traj.final_answer == "The chair costs 1"
        and traj.messages[-1]["content"] == "The chair costs 1"
    )


def test_server_stalls_past_the_timeout() -> None:
    with ScriptedServer(ByTurn([stall(30)])) as srv:
        t0 = time.perf_counter()
        traj = asyncio.run(roll(policy(srv, request_timeout=0.3, max_retries=1), LOOKUP))
        took = time.perf_counter() - t0
        assert srv.calls == 2
    assert traj.termination == "error" and traj.error.startswith("timeout:") and took < 5


def test_rollout_deadline_bounds_a_stalled_call() -> None:
    with ScriptedServer(ByTurn([stall(30)])) as srv:
        t0 = time.perf_counter()
        traj = asyncio.run(roll(policy(srv, request_timeout=10.0, rollout_timeout=0.5), LOOKUP))
        took = time.perf_counter() - t0
    assert traj.termination == "deadline" and took < 3


def test_max_turns() -> None:
    loop = ByTurn([completion("", [tool_call("get_product", {"product_id": 1})])] * 10)
    with ScriptedServer(loop) as srv:
        traj = asyncio.run(roll(policy(srv, max_turns=3), LOOKUP))
        assert srv.calls == 3
    assert traj.termination == "max_turns" and len(traj.calls) == 3 and traj.final_answer == ""
    assert TraceOutcome().score(LOOKUP, traj, FakeContext(component="traceoutcome")).score == 0.0


def test_missing_and_duplicate_tool_call_ids_are_made_unique() -> None:
    calls = [
        {"type": "function", "function": {"name": "get_product", "arguments": '{"product_id":1}'}},
        tool_call("get_product", {"product_id": 2}, id="same"),
        tool_call("get_product", {"product_id": 3}, id="same"),
    ]
    with ScriptedServer(Sequence([completion(None, calls), completion("149")])) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
    ids = [tc["id"] for tc in traj.messages[2]["tool_calls"]]
    assert len(set(ids)) == 3 and ids[1] == "same"
    assert [m["tool_call_id"] for m in traj.messages[3:6]] == ids


def test_concurrency_semaphore_limits_requests_in_flight() -> None:
    async def go(limit: int) -> int:
        with ScriptedServer(ByTurn([stall(0.2, completion("149"))])) as srv:
            p = policy(srv, concurrency=limit)
            trajs = await asyncio.gather(
                *(run_policy(p, LOOKUP, SANDBOX(), ENV.tools, index=i) for i in range(6))
            )
            await p.aclose()
            assert all(t.termination == "answer" for t in trajs)
            return srv.max_inflight

    assert asyncio.run(go(2)) == 2
    assert asyncio.run(go(6)) == 6


def test_missing_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="base URL"):
        asyncio.run(roll(OpenAIPolicy(OpenAISettings(model="m")), LOOKUP))
    with pytest.raises(ConfigError, match="model"):
        asyncio.run(roll(OpenAIPolicy(OpenAISettings(base_url="http://127.0.0.1:9/v1")), LOOKUP))


def test_settings_from_environment_and_secret_redaction() -> None:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
        "OPENAI_API_KEY": SECRET,
        "OPENAI_MODEL": "m1",
    }
    s = settings_for("openai", OpenAISettings, {"temperature": 0.2}, environ=env)
    assert (s.base_url, s.api_key, s.model, s.temperature) == (
        "http://127.0.0.1:1/v1",
        SECRET,
        "m1",
        0.2,
    )
    assert SECRET not in repr(OpenAIPolicy(s)) and SECRET not in repr(OpenAIPolicy(s).client)
    with pytest.raises(ConfigError, match="max_turns"):
        settings_for("openai", OpenAISettings, {"max_turns": 0}, environ={})
    with pytest.raises(ConfigError, match="valid settings"):
        settings_for("openai", OpenAISettings, {"temprature": 1}, environ={})
    from envkernel.config import RunConfig

    pub = public(RunConfig(settings={"openai": {"api_key": SECRET, "model": "m1"}}))
    assert pub["settings"]["openai"]["api_key"] == "<redacted>"


def test_redacted_key_from_the_runs_bucket_falls_back_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A remote worker reads the redacted config; it must use its own OPENAI_API_KEY, never send
    '<redacted>'."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ScriptedServer(ByTurn([completion("149")])) as srv:
        asyncio.run(roll(policy(srv, api_key="<redacted>"), LOOKUP))
        assert srv.authorizations == [f"Bearer {SECRET}"]


def test_extra_body_and_optional_fields_reach_the_server() -> None:
    with ScriptedServer(ByTurn([completion("149")])) as srv:
        asyncio.run(
            roll(
                policy(
                    srv,
                    extra_body={"top_k": 5},
                    top_p=0.9,
                    parallel_tool_calls=False,
                    max_tokens=None,
                    tool_choice="",
                ),
                LOOKUP,
            )
        )
        sent = srv.requests[0]
    assert sent["top_k"] == 5 and sent["top_p"] == 0.9 and sent["parallel_tool_calls"] is False
    assert "max_tokens" not in sent and "tool_choice" not in sent and "extra_body" not in sent


def test_reasoning_content_is_kept_but_not_sent_back() -> None:
    first = completion("", [tool_call("get_product", {"product_id": 2})])
    first["choices"][0]["message"]["reasoning_content"] = "I should look the chair up."
    with ScriptedServer(Sequence([first, completion("149")])) as srv:
        traj = asyncio.run(roll(policy(srv), LOOKUP))
        sent = srv.requests[1]["messages"][2]
    assert traj.messages[2]["reasoning_content"] == "I should look the chair up."
    assert "reasoning_content" not in sent and sent["tool_calls"] == traj.messages[2]["tool_calls"]
