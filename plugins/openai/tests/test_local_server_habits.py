"""The ``openai`` policy copes with a small local server's habits (as measured with SmolLM2 on
llama-cpp-python's server): ``tool_choice: "required"`` answered with HTTP 500, calls written as
text instead of ``tool_calls``, HTML-escaped arguments.

:class:`envkernel_kit.scripted.ScriptedServer` stands in for that server (no such model runs in
the test suite); the client is the real ``openai`` client over a socket.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from envkernel_kit import testing
from envkernel_kit.lenient import calls_in_text, unescape_arguments
from envkernel_kit.scripted import (
    ScriptedServer,
    StepContext,
    completion,
    error,
    run_policy,
    tool_call,
)
from envkernel_openai import OpenAIPolicy, OpenAISettings
from envkernel_schemas import Outcome, Task, ToolCall

ENV, SANDBOX = testing.toy_shop()
TASK = Task(
    id="t-cancel",
    env_id=ENV.id,
    request="Please cancel Bo's pending order.",
    calls=[
        ToolCall(name="find_customer", arguments={"email": "bo@example.com"}),
        ToolCall(name="cancel_order", arguments={"order_id": 3}),
    ],
    outcome=Outcome(mutates=True),
)


def llama_like(request: dict[str, Any], n: int) -> Any:
    """Answers as llama-cpp-python's server did with SmolLM2 (chatml-function-calling)."""
    if request.get("tool_choice") == "required":
        return error(500, "Internal Server Error")
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:  # the call as text, in the content
        return completion(
            '<tool_call>\n{"name": "find_customer", "arguments": {"email": '
            '"bo@example.com"}}\n</tool_call>'
        )
    if turn == 1:  # a proper call, HTML-escaped
        return completion(None, [tool_call("cancel_order", "{&quot;order_id&quot;: 3}")])
    return completion("Bo&#39;s order 3 is cancelled.")


def test_refused_tool_choice_text_calls_and_escaped_arguments() -> None:
    async def go() -> tuple[list[Any], list[dict[str, Any]]]:
        with ScriptedServer(llama_like) as srv:
            p = OpenAIPolicy(
                OpenAISettings(
                    base_url=srv.base_url,
                    model="smollm2",
                    tool_choice="required",
                    backoff=0.01,
                    request_timeout=5.0,
                )
            )
            trajs = [
                await run_policy(p, TASK, SANDBOX(), ENV.tools, ctx=StepContext()) for _ in range(2)
            ]
            await p.aclose()
            return trajs, list(srv.requests)

    trajs, requests = asyncio.run(go())
    choices = [r.get("tool_choice") for r in requests]
    assert choices.count("required") == 1, "the refusal must be remembered, not retried"
    assert all(c == "auto" for c in choices[1:])
    for t in trajs:
        assert [c.call.name for c in t.calls] == ["find_customer", "cancel_order"]
        assert t.calls[1].call.arguments == {"order_id": 3} and t.calls[1].result.ok
        assert t.termination == "answer" and t.format_errors == 1  # the text call
        assert t.final_answer == "Bo&#39;s order 3 is cancelled."  # answers are kept verbatim
    assert trajs[0].final_state["orders"][2]["status"] == "cancelled"


def test_text_calls_off_end_the_rollout_as_an_answer() -> None:
    async def go() -> Any:
        with ScriptedServer(llama_like) as srv:
            p = OpenAIPolicy(
                OpenAISettings(
                    base_url=srv.base_url,
                    model="smollm2",
                    recover_text_calls=False,
                    request_timeout=5.0,
                )
            )
            t = await run_policy(p, TASK, SANDBOX(), ENV.tools, ctx=StepContext())
            await p.aclose()
            return t

    t = asyncio.run(go())
    assert t.termination == "answer" and not t.calls and t.format_errors == 0


@pytest.mark.parametrize(
    ("raw", "want", "changed"),
    [
        ('{"name": "O&#39;Brien"}', {"name": "O'Brien"}, True),
        ("{&quot;order_id&quot;: 3}", {"order_id": 3}, True),
        ('{"q": "a & b"}', {"q": "a & b"}, False),
    ],
)
def test_unescape_arguments(raw: str, want: dict[str, Any], changed: bool) -> None:
    assert unescape_arguments(raw) == (want, changed)


def test_calls_in_text() -> None:
    names = {"get_order", "cancel_order"}
    assert calls_in_text(
        '```json\n{"name": "get_order", "arguments": {"order_id": 1}}\n```', names
    ) == [("get_order", {"order_id": 1})]
    assert calls_in_text(
        'I will call {"function": "cancel_order", "parameters": {"order_id": 2}} now', names
    ) == [("cancel_order", {"order_id": 2})]
    assert calls_in_text('{"name": "drop_tables", "arguments": {}}', names) == []
    assert calls_in_text("no call here", names) == []
    assert calls_in_text(
        json.dumps([{"name": "get_order", "arguments": '{"order_id": 5}'}]), names
    ) == [("get_order", {"order_id": 5})]
