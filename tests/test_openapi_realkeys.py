"""What real specs declare and the engine must honour (issue 13): keys with a ``pattern``, Stripe-like
constant envelope fields, Swagger 2.0 converted with swagger2openapi, and the verifier dropping
tools whose ids cannot be discovered. Real specs of the corpus (Twilio, Stripe, Slack, Netlify)
are synthesized and verified in real process sandboxes, one module-scoped run per spec.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file
from envkernel_openapi.spec import load
from envkernel_probe import Probe, ToolProbe, unreachable
from envkernel_runtime import executor
from envkernel_schemas import to_builtins

process = pytest.importorskip("envkernel_process")

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
SID = "^MG[0-9a-fA-F]{32}$"
MESSAGE = {"type": "object", "required": ["sid", "body"], "properties": {
    "sid": {"type": "string", "pattern": SID, "minLength": 34, "maxLength": 34, "readOnly": True},
    "body": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "sent"]}}}
LIST = {"type": "object", "required": ["object", "data", "has_more", "url"], "properties": {
    "object": {"type": "string", "enum": ["list"]}, "data": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}},
    "has_more": {"type": "boolean"}, "url": {"type": "string", "pattern": "^/v1/messages"}}}


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _spec(tmp_path: Path) -> Path:
    ref = {"$ref": "#/components/schemas/Message"}
    sid = [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string", "pattern": SID}}]
    body = {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": {
        "type": "object", "required": ["body"], "properties": {"body": {"type": "string"}}}}}}
    doc = {"openapi": "3.0.3", "info": {"title": "messages"}, "components": {"schemas": {"Message": MESSAGE}}, "paths": {
        "/v1/messages": {"get": {"operationId": "ListMessages", "responses": _ok({"$ref": "#/components/schemas/List"})},
                         "post": {"operationId": "CreateMessage", "requestBody": body, "responses": _ok(ref)}},
        "/v1/messages/{sid}": {"get": {"operationId": "FetchMessage", "parameters": sid, "responses": _ok(ref)}}}}
    doc["components"]["schemas"]["List"] = LIST
    f = tmp_path / "messages.json"
    f.write_text(json.dumps(doc))
    return f


class Box:
    """The real executor, in this process, over one environment."""

    def __init__(self, env: Any) -> None:
        self.ex = executor.Executor()
        assert self.req({"op": "load", "env": to_builtins(env), "seed": 0})["ok"]

    def req(self, r: dict[str, Any]) -> dict[str, Any]:
        return json.loads(self.ex.handle_line(json.dumps(r)))

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return self.req({"op": "call", "tool": tool, "arguments": args})


def test_new_keys_fit_the_declared_pattern_and_envelopes_carry_their_constants(tmp_path: Path) -> None:
    env, _ = synthesize_file(_spec(tmp_path), settings=OpenAPISettings(validate=False))
    tools = {t.name: t for t in env.tools}
    assert {"create_message", "list_messages", "fetch_message"} <= set(tools), sorted(tools)
    res = env.behaviour.model["resources"]["messages"]
    assert len(res["new_keys"]) == 32 and all(re.fullmatch(SID[1:-1], k) for k in res["new_keys"])
    box = Box(env)
    made = [box.call("create_message", body=f"hello {i}") for i in range(3)]
    assert all(m["ok"] for m in made), made
    sids = [m["value"]["sid"] for m in made]
    assert len(set(sids)) == 3 and all(re.fullmatch(SID[1:-1], s) for s in sids)  # not msg_0009
    jsonschema.validate(made[0]["value"], tools["create_message"].returns)
    assert box.call("fetch_message", sid=sids[1])["value"]["body"] == "hello 1"
    page = box.call("list_messages")["value"]
    assert page["object"] == "list" and page["url"] == "/v1/messages" and page["has_more"] is False
    assert sids[2] in [r["sid"] for r in page["data"]]
    jsonschema.validate(page, tools["list_messages"].returns)


def test_an_env_whose_list_tools_were_all_dropped_is_rejected(tmp_path: Path) -> None:
    env, _ = synthesize_file(_spec(tmp_path), settings=OpenAPISettings(validate=False))
    # the only list tool failed: no id can be learnt, every tool goes (the environment is rejected)
    probes = [ToolProbe(tool=t.name, kept=t.name != "list_messages") for t in env.tools]
    unreachable(env, probes)
    assert all(not p.kept and "no list tool" in p.reason for p in probes if p.tool != "list_messages")
    # the list kept: the rest stays
    probes = [ToolProbe(tool=t.name, kept=t.name != "create_message") for t in env.tools]
    unreachable(env, probes)
    assert {p.tool for p in probes if p.kept} == {t.name for t in env.tools} - {"create_message"}


SWAGGER = {"swagger": "2.0", "info": {"title": "pets", "version": "1"}, "basePath": "/v1", "paths": {
    "/pets": {"get": {"operationId": "listPets", "produces": ["application/json"],
                      "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}},
              "post": {"operationId": "createPet", "consumes": ["application/json"], "produces": ["application/json"],
                       "parameters": [{"in": "body", "name": "pet", "required": True, "schema": {"$ref": "#/definitions/Pet"}}],
                       "responses": {"201": {"description": "made", "schema": {"$ref": "#/definitions/Pet"}}}}},
    "/pets/{petId}": {"get": {"operationId": "getPet", "produces": ["application/json"],
                              "parameters": [{"in": "path", "name": "petId", "required": True, "type": "string"}],
                              "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}}}}},
    "definitions": {"Pet": {"type": "object", "required": ["name"], "properties": {
        "id": {"type": "string", "readOnly": True}, "name": {"type": "string"}, "tag": {"type": "string"}}}}}


def test_swagger_2_is_converted_or_refused_with_the_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shutil.which("swagger2openapi"), "scripts/install-swagger2openapi.sh installs it"
    f = tmp_path / "pets.json"
    f.write_text(json.dumps(SWAGGER))
    env, warnings = synthesize_file(f, settings=OpenAPISettings(validate=True))
    assert any("Swagger 2.0 converted to OpenAPI 3" in w for w in warnings)
    assert {"list_pets", "create_pet", "get_pet"} <= {t.name for t in env.tools}
    monkeypatch.setenv("ENVKERNEL_SWAGGER2OPENAPI", str(tmp_path / "no-such-converter"))
    with pytest.raises(SpecError, match="convert it to OpenAPI 3"):
        load(f)


async def _verify(envs: list[Any]) -> dict[str, Any]:
    runner = process.ProcessRunner()
    try:
        return {e.id: await Probe().verify(e, RunnerContext(runner, component="probe")) for e in envs}
    finally:
        await runner.aclose()


@pytest.fixture(scope="module")
def verified() -> dict[str, tuple[Any, Any]]:
    """Four real specs of different shapes, synthesized and verified once."""
    files = ["twilio-messaging-v1.json", "stripe-api-2020-10.yaml", "slack-web-api.json", "netlify-api.yaml"]
    envs = [synthesize_file(CORPUS / f, settings=OpenAPISettings(validate=False))[0] for f in files]
    reports = asyncio.run(_verify(envs))
    return {e.id: (e, reports[e.id]) for e in envs}


def test_twilio_creates_keep_their_sid_pattern(verified: dict[str, tuple[Any, Any]]) -> None:
    env, report = verified["twilio-messaging-v1"]
    creates = [n for n, o in env.behaviour.model["operations"].items() if o["kind"] == "create"]
    assert creates and set(creates) <= set(report.tools_kept), report.tools_dropped
    assert report.kept


def test_stripe_lists_answer_with_their_envelope_constants(verified: dict[str, tuple[Any, Any]]) -> None:
    env, report = verified["stripe-api-2020-10"]
    lists = {n: o for n, o in env.behaviour.model["operations"].items() if o["kind"] == "list" and not o.get("parents")}
    assert any((o.get("output") or {}).get("constants", {}).get("object") == "list" for o in lists.values())
    assert set(lists) & set(report.tools_kept), report.tools_dropped
    assert report.kept


def test_swagger_specs_of_the_corpus_become_environments(verified: dict[str, tuple[Any, Any]]) -> None:
    for eid in ("slack-web-api", "netlify-api"):
        env, report = verified[eid]
        assert len(env.tools) >= 10 and len(report.tools_kept) >= 8, (eid, report.tools_dropped)
