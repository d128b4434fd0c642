"""The chat client's retry layer and the scripted server, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import socket
import time
import urllib.request

import pytest

from envkernel_kit.scripted import ScriptedServer, completion, error, stall
from envkernel_openai import (
    ChatClient,
    check_arguments,
    parse_tool_calls,
    register_policies,
    scrub,
    tool_schema,
)
from envkernel_openai.policy import OpenAIPolicy
from envkernel_schemas import ToolSpec

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def client(srv: ScriptedServer, **kw: object) -> ChatClient:
    fields = {
        "base_url": srv.base_url,
        "api_key": "sk-x",
        "request_timeout": 2.0,
        "backoff": 0.01,
        "backoff_max": 0.05,
        **kw,
    }
    return ChatClient(**fields)  # type: ignore[arg-type]


async def call(c: ChatClient, deadline: float | None = None):  # type: ignore[no-untyped-def]
    try:
        return await c.complete(BODY, deadline=deadline)
    finally:
        await c.aclose()


def test_server_routes_usage_and_exhaustion() -> None:
    with ScriptedServer([completion("a")]) as srv:
        res = asyncio.run(call(client(srv, max_retries=0)))
        assert res.ok and res.body["usage"]["prompt_tokens"] > 0 and res.statuses == [200]
        res = asyncio.run(call(client(srv, max_retries=0)))
        assert res.condition == "http" and "no reply for call 1" in res.error and "400" in res.error
        with urllib.request.urlopen(srv.base_url + "/models") as f:
            assert b"scripted" in f.read()
        req = urllib.request.Request(srv.base_url + "/embeddings", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req)
        assert exc.value.code == 404


def test_broken_script_is_a_500() -> None:
    def script(request: dict, n: int) -> dict:
        raise RuntimeError("oops")

    with ScriptedServer(script) as srv:
        res = asyncio.run(call(client(srv, max_retries=1)))
        assert srv.calls == 2 and res.condition == "http" and "RuntimeError" in res.error


def test_retry_after_is_honoured_and_capped() -> None:
    with ScriptedServer([error(429, "wait", {"Retry-After": "0.4"}), completion("ok")]) as srv:
        t0 = time.perf_counter()
        res = asyncio.run(call(client(srv, backoff_max=1.0)))
        assert (
            res.ok and time.perf_counter() - t0 >= 0.35 and res.attempts == 2 and res.waited >= 0.35
        )
    with ScriptedServer([error(429, "wait", {"Retry-After": "60"}), completion("ok")]) as srv:
        t0 = time.perf_counter()
        res = asyncio.run(call(client(srv, backoff_max=0.1)))
        assert res.ok and time.perf_counter() - t0 < 2


def test_deadline_stops_retrying() -> None:
    with ScriptedServer([error(503, "busy", {"Retry-After": "5"})] * 5) as srv:
        t0 = time.perf_counter()
        res = asyncio.run(call(client(srv, backoff_max=5.0), deadline=time.monotonic() + 1.0))
        assert time.perf_counter() - t0 < 1.5
        assert res.condition == "http" and "no time left" in res.error and srv.calls == 1


def test_stall_times_out_and_is_retried() -> None:
    with ScriptedServer([stall(30), completion("ok")]) as srv:
        res = asyncio.run(call(client(srv, request_timeout=0.3, max_retries=1)))
        assert res.ok and res.attempts == 2


def test_connection_refused() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    c = ChatClient(
        base_url=f"http://127.0.0.1:{port}/v1", request_timeout=1.0, max_retries=2, backoff=0.01
    )
    res = asyncio.run(call(c))
    assert res.condition == "connection" and res.attempts == 3


def test_one_client_object_serves_several_event_loops() -> None:
    with ScriptedServer([completion("a"), completion("b")]) as srv:
        c = client(srv)
        assert asyncio.run(c.complete(BODY)).ok
        assert asyncio.run(c.complete(BODY)).ok


def test_timeouts_are_explicit_never_the_clients_default() -> None:
    with ScriptedServer([completion("a")]) as srv:
        c = client(srv, request_timeout=7.0, connect_timeout=3.0)

        async def go() -> None:
            oc, _sem = c._for_loop()
            assert oc.max_retries == 0
            assert oc.timeout.read == 7.0 and oc.timeout.connect == 3.0  # type: ignore[union-attr]
            await c.aclose()

        asyncio.run(go())


def test_constructor_validation_and_scrub() -> None:
    with pytest.raises(ValueError, match="base URL"):
        ChatClient(base_url="")
    with pytest.raises(ValueError):
        ChatClient(base_url="http://x", request_timeout=0)
    assert scrub("key sk-abc leaked", "sk-abc") == "key <redacted> leaked"
    assert len(scrub("x" * 1000, None, limit=50)) == 50
    assert "sk-abc" not in repr(ChatClient(base_url="http://x", api_key="sk-abc"))


def test_parse_tool_calls() -> None:
    seen: set[str] = set()
    raw = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {
            "id": "a",
            "type": "function",
            "function": {"name": "f", "arguments": ""},
        },  # duplicate id, no-argument call
        {
            "id": "b",
            "type": "function",
            "function": {"name": "f", "arguments": {"x": 2}},
        },  # object, not a string
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}},
        {"id": "d", "type": "function"},
        "garbage",
    ]
    calls = parse_tool_calls(raw, 3, seen)
    assert [c.id for c in calls] == ["a", "call_3_1", "b", "c", "d", "call_3_5"]
    assert [c.args for c in calls[:3]] == [{"x": 1}, {}, {"x": 2}]
    assert [c.code for c in calls[3:]] == ["invalid_json", "invalid_tool_call", "invalid_tool_call"]


def test_check_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "s": {"type": "string", "enum": ["a", "b"]},
            "f": {"type": ["number", "null"]},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    assert check_arguments(schema, {"n": 1}) == ""
    assert check_arguments(schema, {"n": 2.0, "f": None}) == ""
    assert "missing required" in check_arguments(schema, {})
    assert "type integer" in check_arguments(schema, {"n": True})
    assert "one of" in check_arguments(schema, {"n": 1, "s": "c"})
    assert "unknown argument" in check_arguments(schema, {"n": 1, "zz": 0})
    assert check_arguments({"type": "object"}, {"anything": [1]}) == ""


def test_tool_schema_and_registration() -> None:
    t = ToolSpec(
        name="get",
        description="Get it.",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}},
    )
    assert tool_schema([t]) == [
        {
            "type": "function",
            "function": {"name": "get", "description": "Get it.", "parameters": t.parameters},
        }
    ]
    got = {}
    register_policies(lambda name, factory: got.setdefault(name, factory))
    assert got == {"openai": OpenAIPolicy} and isinstance(OpenAIPolicy.concurrency, int)
