"""``OpenAIPolicy.apply_update``: following ``openai-model/1`` policy updates, over real loopback
HTTP.

The policy talks to :class:`envkernel_kit.scripted.ScriptedServer`, which answers
``load_lora_adapter`` as vLLM does and, with ``served``, refuses a model it does not serve (so a
LoRA adapter used before it is loaded is a 404 the test sees).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import structlog

from envkernel_kit.scripted import (
    ByTurn,
    Reply,
    ScriptedServer,
    StepContext,
    completion,
    error,
    lora_loaded,
    run_policy,
    stall,
    tool_call,
)
from envkernel_openai import OpenAIPolicy, OpenAISettings, PolicyUpdateError, parse_update
from envkernel_schemas import Outcome, PolicyUpdate, Task, ToolCall, ToolResult, ToolSpec

SECRET = "sk-update-secret"
TOOLS = [
    ToolSpec(
        name="get_product",
        description="Get a product.",
        parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}},
    )
]
TASK = Task(
    id="t1",
    env_id="toy",
    request="What does the chair cost?",
    calls=[ToolCall(name="get_product", arguments={"product_id": 2})],
    outcome=Outcome(mutates=False, answer_facts=["149"]),
)


class Sandbox:
    """All that a rollout of these tests needs of a sandbox."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(ok=True, value={"id": 2, "price": 149})

    async def state(self) -> dict[str, Any]:
        return {}


class Ctx(StepContext):
    """A context whose log records what the policy logged (to check no secret is in it)."""

    def __init__(self) -> None:
        super().__init__()
        self.logged: list[dict[str, Any]] = []

        def keep(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
            self.logged.append(dict(event))
            raise structlog.DropEvent

        # its own wrapper class: a filtering one configured by an earlier test in the same
        # process (warnings only) would drop the info events this context records
        self.log = structlog.wrap_logger(
            None, processors=[keep], wrapper_class=structlog.BoundLogger
        )


def policy(srv: ScriptedServer, **overrides: Any) -> OpenAIPolicy:
    fields = {
        "base_url": srv.base_url,
        "api_key": SECRET,
        "model": "base",
        "backoff": 0.01,
        "backoff_max": 0.02,
        "request_timeout": 5.0,
        "rollout_timeout": 20.0,
        **overrides,
    }
    return OpenAIPolicy(OpenAISettings(**fields))


def update(data: Any, fmt: str = "openai-model/1") -> PolicyUpdate:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return PolicyUpdate(format=fmt, data=raw, metrics={"loss": 0.5})


async def roll(p: OpenAIPolicy, ctx: Ctx | None = None) -> Any:
    return await run_policy(p, TASK, Sandbox(), TOOLS, ctx=ctx or Ctx())


def answer(request: dict[str, Any], n: int) -> dict[str, Any]:
    return completion("149")


def test_a_model_update_switches_the_next_requests_model() -> None:
    async def go(srv: ScriptedServer) -> None:
        p = policy(srv)
        try:
            await roll(p)
            await p.apply_update(update({"model": "base-v2"}), Ctx())
            assert p.model == "base-v2"
            traj = await roll(p)
            assert traj.termination == "answer"
        finally:
            await p.aclose()

    with ScriptedServer(answer, served=["base", "base-v2"]) as srv:
        asyncio.run(go(srv))
        assert srv.models == ["base", "base-v2"]
        assert srv.lora_requests == []


def test_a_lora_update_loads_the_adapter_then_rolls_out_with_it() -> None:
    async def go(srv: ScriptedServer) -> Ctx:
        p = policy(srv)
        ctx = Ctx()
        try:
            await p.apply_update(
                update({"lora_name": "run1-iter-0", "lora_path": "/shared/adapters/run1/iter-0"}),
                ctx,
            )
            traj = await roll(p)
            assert traj.termination == "answer", traj.error
        finally:
            await p.aclose()
        return ctx

    with ScriptedServer(answer, served=["base"]) as srv:
        ctx = asyncio.run(go(srv))
        assert srv.lora_requests == [
            {"lora_name": "run1-iter-0", "lora_path": "/shared/adapters/run1/iter-0"}
        ]
        assert srv.lora_authorizations == [f"Bearer {SECRET}"]
        assert srv.adapters == {"run1-iter-0": "/shared/adapters/run1/iter-0"}
        assert srv.models == ["run1-iter-0"]
    applied = [e for e in ctx.logged if e.get("event") == "model switched"]
    assert applied and applied[0]["model"] == "run1-iter-0" and applied[0]["lora"] == "loaded"
    assert SECRET not in json.dumps(ctx.logged, default=str)


def test_the_server_refuses_an_adapter_that_was_not_loaded() -> None:
    """The check the previous test relies on: without the load, the adapter's name is a 404."""

    async def go(srv: ScriptedServer) -> Any:
        p = policy(srv, load_lora=False, max_retries=0)
        try:
            await p.apply_update(
                update({"lora_name": "never-loaded", "lora_path": "/nowhere"}), Ctx()
            )
            return await roll(p)
        finally:
            await p.aclose()

    with ScriptedServer(answer, served=["base"]) as srv:
        traj = asyncio.run(go(srv))
        assert srv.lora_requests == []  # load_lora=false: nothing posted
    assert traj.termination == "error" and "404" in traj.error and "never-loaded" in traj.error


def test_load_lora_off_switches_to_an_adapter_the_server_already_serves() -> None:
    async def go(srv: ScriptedServer) -> None:
        p = policy(srv, load_lora=False)
        try:
            await p.apply_update(update({"lora_name": "static", "lora_path": "/x"}), Ctx())
            assert (await roll(p)).termination == "answer"
        finally:
            await p.aclose()

    with ScriptedServer(answer, served=["base", "static"]) as srv:
        asyncio.run(go(srv))
        assert srv.lora_requests == [] and srv.models == ["static"]


def test_base_url_switches_the_endpoint_for_the_load_and_the_rollouts() -> None:
    async def go(one: ScriptedServer, two: ScriptedServer) -> None:
        p = policy(one)
        try:
            await roll(p)
            await p.apply_update(
                update({"lora_name": "a1", "lora_path": "/a1", "base_url": two.base_url}), Ctx()
            )
            await roll(p)
            assert p.client.base_url == two.base_url
        finally:
            await p.aclose()

    with (
        ScriptedServer(answer, served=["base"]) as one,
        ScriptedServer(answer, served=["base"]) as two,
    ):
        asyncio.run(go(one, two))
        assert one.models == ["base"] and one.lora_requests == []
        assert two.models == ["a1"] and two.adapters == {"a1": "/a1"}


def test_an_adapter_another_process_loaded_is_used() -> None:
    """Two workers serving the policy load the same adapter into one vLLM server: vLLM answers the
    second with 400 "already been loaded", which is not a failure."""

    async def go(srv: ScriptedServer) -> tuple[Ctx, Ctx]:
        p1, p2 = policy(srv), policy(srv)
        c1, c2 = Ctx(), Ctx()
        upd = update({"lora_name": "iter-1", "lora_path": "/shared/iter-1"})
        try:
            await p1.apply_update(upd, c1)
            await p2.apply_update(upd, c2)
            assert (await roll(p2)).termination == "answer"
        finally:
            await p1.aclose()
            await p2.aclose()
        return c1, c2

    with ScriptedServer(answer, served=["base"]) as srv:
        _c1, c2 = asyncio.run(go(srv))
        assert srv.lora_calls == 2 and srv.models == ["iter-1"]
    assert any("already loaded" in str(e.get("event")) for e in c2.logged)


@pytest.mark.parametrize(
    ("upd", "words"),
    [
        (
            update({"model": "m"}, fmt="reinforce-weights/1"),
            ["openai-model/1", "'reinforce-weights/1'", "make the trainer return"],
        ),
        (update({"model": "m"}, fmt=""), ["openai-model/1", "got ''"]),
        (update(b"{not json"), ["not valid JSON", "lora_name"]),
        (update(b""), ["no data"]),
        (update(["model", "m"]), ["must be a JSON object", "list"]),
        (update({"lora_path": "/a"}), ["names no model"]),
        (update({"model": "m", "lora_path": "/a"}), ["lora_path '/a'", "no lora_name"]),
        (update({"model": "m", "lora_pth": "/a"}), ["not valid", "lora_pth"]),
        (update({"model": 3}), ["not valid", "$.model"]),
        (update({"model": "m", "base_url": "host:8000"}), ["http(s) URL"]),
    ],
)
def test_a_bad_update_is_a_clear_error_and_changes_nothing(
    upd: PolicyUpdate, words: list[str]
) -> None:
    with pytest.raises(PolicyUpdateError) as exc:
        parse_update(upd)
    for w in words:
        assert w in str(exc.value), str(exc.value)

    async def go(srv: ScriptedServer) -> None:
        p = policy(srv)
        try:
            with pytest.raises(PolicyUpdateError):
                await p.apply_update(upd, Ctx())
            assert p.model == "base"
            await roll(p)
        finally:
            await p.aclose()

    with ScriptedServer(answer) as srv:
        asyncio.run(go(srv))
        assert srv.models == ["base"] and srv.lora_requests == []


@pytest.mark.parametrize(
    ("replies", "words", "attempts"),
    [
        (
            [error(500, "Loading lora /bad failed: No adapter found")] * 4,
            ["HTTP 500", "No adapter found", "--max-lora-rank", "gave up after 4"],
            4,
        ),
        (
            [error(404, "Not Found")],
            ["HTTP 404", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "load_lora=false"],
            1,
        ),
        (
            [error(400, "Both 'lora_name' and 'lora_path' must be provided.")],
            ["HTTP 400", "lora_path exists"],
            1,
        ),
    ],
)
def test_a_failed_load_is_a_clear_error_and_keeps_the_old_model(
    replies: list[Reply], words: list[str], attempts: int
) -> None:
    async def go(srv: ScriptedServer) -> str:
        p = policy(srv)
        try:
            with pytest.raises(PolicyUpdateError) as exc:
                await p.apply_update(update({"lora_name": "bad", "lora_path": "/bad"}), Ctx())
            assert p.model == "base"
            await roll(p)
            return str(exc.value)
        finally:
            await p.aclose()

    with ScriptedServer(answer, lora=replies, served=["base"]) as srv:
        msg = asyncio.run(go(srv))
        assert srv.lora_calls == attempts and srv.adapters == {} and srv.models == ["base"]
    for w in ["'bad'", "'/bad'", srv.base_url, *words]:
        assert w in msg, msg
    assert SECRET not in msg


def test_an_unreachable_server_is_a_clear_error() -> None:
    with ScriptedServer(answer) as srv:
        p = policy(srv, max_retries=0, connect_timeout=1.0)
    # the server is gone now
    with pytest.raises(PolicyUpdateError, match="could not be reached"):
        asyncio.run(p.apply_update(update({"lora_name": "x", "lora_path": "/x"}), Ctx()))


def test_a_load_is_retried_like_a_model_call() -> None:
    async def go(srv: ScriptedServer) -> None:
        p = policy(srv)
        try:
            await p.apply_update(update({"lora_name": "a", "lora_path": "/a"}), Ctx())
            assert p.model == "a"
        finally:
            await p.aclose()

    with ScriptedServer(answer, lora=[error(503, "busy"), None]) as srv:
        asyncio.run(go(srv))
        assert srv.lora_calls == 2 and srv.adapters == {"a": "/a"}


def test_a_rollout_in_flight_keeps_its_model_and_new_ones_take_the_update() -> None:
    """An update applied while a rollout is between turns does not switch that rollout halfway."""
    script = ByTurn(
        [
            stall(0.4, completion("", [tool_call("get_product", {"product_id": 2})])),
            completion("149"),
        ]
    )

    async def go(srv: ScriptedServer) -> None:
        p = policy(srv)
        try:
            first = asyncio.create_task(roll(p))
            while not srv.requests:
                await asyncio.sleep(0.01)
            await p.apply_update(update({"model": "v2"}), Ctx())
            second = await roll(p)
            done = await first
            assert done.termination == "answer" and second.termination == "answer"
        finally:
            await p.aclose()

    with ScriptedServer(script, served=["base", "v2"]) as srv:
        asyncio.run(go(srv))
        # two turns each: had the first rollout switched halfway, "v2" would be named three times
        assert srv.requests[0]["model"] == "base"
        assert sorted(srv.models) == ["base", "base", "v2", "v2"]


def test_an_older_update_that_finishes_last_does_not_win() -> None:
    """Two applies at once (the kernel serialises them; the policy is safe anyway): the slow
    load of the older one finishes after the newer one and is skipped."""

    async def go(srv: ScriptedServer) -> Ctx:
        p = policy(srv)
        ctx = Ctx()
        try:
            slow = asyncio.create_task(
                p.apply_update(update({"lora_name": "old", "lora_path": "/old"}), ctx)
            )
            while not srv.lora_requests:
                await asyncio.sleep(0.01)
            await p.apply_update(update({"model": "new"}), ctx)
            await slow
            assert p.model == "new"
        finally:
            await p.aclose()
        return ctx

    with ScriptedServer(
        answer, lora=[Reply(body="Success", delay=0.3, content_type="text/plain")]
    ) as srv:
        ctx = asyncio.run(go(srv))
    assert any("newer policy update" in str(e.get("event")) for e in ctx.logged)


def test_load_lora_adapter_answers_like_vllm() -> None:
    """The scripted server's own LoRA route (without a script)."""
    import urllib.error
    import urllib.request

    def post(srv: ScriptedServer, body: dict[str, Any]) -> tuple[int, str]:
        req = urllib.request.Request(
            srv.base_url + "/load_lora_adapter",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req) as f:
                return f.status, f.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    with ScriptedServer(served=["base"]) as srv:
        assert post(srv, {"lora_name": "a", "lora_path": "/a"}) == (
            200,
            "Success: LoRA adapter 'a' added successfully.",
        )
        code, text = post(srv, {"lora_name": "a", "lora_path": "/a2"})
        assert code == 400 and "already been loaded" in text
        code, text = post(srv, {"lora_name": "b"})
        assert code == 400 and "must be provided" in text
        with urllib.request.urlopen(srv.base_url + "/models") as f:
            assert [m["id"] for m in json.load(f)["data"]] == ["base", "a"]
        assert srv.adapters == {"a": "/a"} and srv.lora_calls == 3 and srv.calls == 0
    assert lora_loaded("x").status == 200
