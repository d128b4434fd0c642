"""What real specs declare and the engine must honour (issue 13): keys with a ``pattern``,
Stripe-like constant envelope fields, keys named like Stripe's ``{customer}``, page indexes from 0,
Swagger 2.0 converted with swagger2openapi, and the verifier rejecting an env whose list tools were
all dropped. The corpus's real specs (Twilio, Stripe, Slack, Netlify, ...) are checked in
``test_openapi_realspecs.py`` and ``_2.py``, on their verification of the corpus (one half each).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from envkernel_kit.argsgen import ID_HINT, ArgumentBuilder
from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file
from envkernel_openapi.spec import load
from envkernel_probe import ToolProbe, unreachable
from envkernel_runtime import executor
from envkernel_schemas import to_builtins

SID = "^MG[0-9a-fA-F]{32}$"
MESSAGE = {
    "type": "object",
    "required": ["sid", "body"],
    "properties": {
        "sid": {
            "type": "string",
            "pattern": SID,
            "minLength": 34,
            "maxLength": 34,
            "readOnly": True,
        },
        "body": {"type": "string"},
        "status": {"type": "string", "enum": ["queued", "sent"]},
    },
}
LIST = {
    "type": "object",
    "required": ["object", "data", "has_more", "url"],
    "properties": {
        "object": {"type": "string", "enum": ["list"]},
        "data": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}},
        "has_more": {"type": "boolean"},
        "url": {"type": "string", "pattern": "^/v1/messages"},
    },
}


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _spec(tmp_path: Path) -> Path:
    ref = {"$ref": "#/components/schemas/Message"}
    sid = [
        {
            "name": "sid",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": SID},
        }
    ]
    body = {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "required": ["body"],
                    "properties": {"body": {"type": "string"}},
                }
            }
        },
    }
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "messages"},
        "components": {"schemas": {"Message": MESSAGE}},
        "paths": {
            "/v1/messages": {
                "get": {
                    "operationId": "ListMessages",
                    "responses": _ok({"$ref": "#/components/schemas/List"}),
                },
                "post": {
                    "operationId": "CreateMessage",
                    "requestBody": body,
                    "responses": _ok(ref),
                },
            },
            "/v1/messages/{sid}": {
                "get": {"operationId": "FetchMessage", "parameters": sid, "responses": _ok(ref)}
            },
        },
    }
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


def test_new_keys_fit_the_declared_pattern_and_envelopes_carry_their_constants(
    tmp_path: Path,
) -> None:
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
    assert all(
        not p.kept and "no list tool" in p.reason for p in probes if p.tool != "list_messages"
    )
    # the list kept: the rest stays
    probes = [ToolProbe(tool=t.name, kept=t.name != "create_message") for t in env.tools]
    unreachable(env, probes)
    assert {p.tool for p in probes if p.kept} == {t.name for t in env.tools} - {"create_message"}


SWAGGER = {
    "swagger": "2.0",
    "info": {"title": "pets", "version": "1"},
    "basePath": "/v1",
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "produces": ["application/json"],
                "responses": {
                    "200": {
                        "description": "ok",
                        "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}},
                    }
                },
            },
            "post": {
                "operationId": "createPet",
                "consumes": ["application/json"],
                "produces": ["application/json"],
                "parameters": [
                    {
                        "in": "body",
                        "name": "pet",
                        "required": True,
                        "schema": {"$ref": "#/definitions/Pet"},
                    }
                ],
                "responses": {
                    "201": {"description": "made", "schema": {"$ref": "#/definitions/Pet"}}
                },
            },
        },
        "/pets/{petId}": {
            "get": {
                "operationId": "getPet",
                "produces": ["application/json"],
                "parameters": [{"in": "path", "name": "petId", "required": True, "type": "string"}],
                "responses": {
                    "200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}
                },
            }
        },
    },
    "definitions": {
        "Pet": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "id": {"type": "string", "readOnly": True},
                "name": {"type": "string"},
                "tag": {"type": "string"},
            },
        }
    },
}


def test_swagger_2_is_converted_or_refused_with_the_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("swagger2openapi"), "scripts/install-swagger2openapi.sh installs it"
    f = tmp_path / "pets.json"
    f.write_text(json.dumps(SWAGGER))
    env, warnings = synthesize_file(f, settings=OpenAPISettings(validate=True))
    assert any("Swagger 2.0 converted to OpenAPI 3" in w for w in warnings)
    assert {"list_pets", "create_pet", "get_pet"} <= {t.name for t in env.tools}
    monkeypatch.setenv("ENVKERNEL_SWAGGER2OPENAPI", str(tmp_path / "no-such-converter"))
    with pytest.raises(SpecError, match="convert it to OpenAPI 3"):
        load(f)


CUS = "^cus_[A-Za-z0-9]{14}$"


def _nested(tmp_path: Path) -> Path:
    customer = {
        "type": "object",
        "required": ["id", "name"],
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
    }
    card = {
        "type": "object",
        "required": ["id", "brand"],
        "properties": {
            "id": {"type": "string"},
            "brand": {"type": "string"},
            "customer": {"type": "string"},
        },
    }
    cus = {
        "name": "customer",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": CUS},
    }
    page = [
        {
            "name": "PageSize",
            "in": "query",
            "schema": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        {"name": "Page", "in": "query", "schema": {"type": "integer", "minimum": 0}},
        {"name": "PageToken", "in": "query", "schema": {"type": "string"}},
    ]
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "cards"},
        "components": {"schemas": {"Customer": customer, "Card": card}},
        "paths": {
            "/v1/customers": {
                "get": {
                    "responses": _ok(
                        {
                            "type": "object",
                            "properties": {
                                "data": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/Customer"},
                                }
                            },
                        }
                    )
                }
            },
            "/v1/customers/{customer}": {
                "get": {
                    "parameters": [cus],
                    "responses": _ok({"$ref": "#/components/schemas/Customer"}),
                }
            },
            "/v1/customers/{customer}/cards": {
                "get": {
                    "parameters": [cus, *page],
                    "responses": _ok(
                        {
                            "type": "object",
                            "properties": {
                                "cards": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/Card"},
                                },
                                "meta": {"type": "object"},
                            },
                        }
                    ),
                }
            },
            "/v1/customers/{customer}/cards/{card}": {
                "get": {
                    "parameters": [
                        cus,
                        {
                            "name": "card",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": _ok({"$ref": "#/components/schemas/Card"}),
                }
            },
        },
    }
    f = tmp_path / "cards.json"
    f.write_text(json.dumps(doc))
    return f


def test_keys_named_like_stripe_take_their_parameter_pattern_and_nested_arguments_belong_together(
    tmp_path: Path,
) -> None:
    env, warnings = synthesize_file(_nested(tmp_path), settings=OpenAPISettings(validate=False))
    model = env.behaviour.model
    tools = {t.name: t for t in env.tools}
    get_customer = next(
        n
        for n, o in model["operations"].items()
        if o["kind"] == "get" and o["resource"] == "customers"
    )
    assert (
        tools[get_customer].returns["properties"]["id"]["pattern"] == CUS
    )  # the key takes its path parameter's pattern
    assert all(re.fullmatch(CUS[1:-1], r["id"]) for r in model["seed"]["customers"])
    get_card = next(
        n for n, o in model["operations"].items() if o["kind"] == "get" and o["resource"] == "cards"
    )
    list_cards = next(
        n
        for n, o in model["operations"].items()
        if o["kind"] == "list" and o["resource"] == "cards"
    )
    props = tools[get_card].parameters["properties"]
    assert props["customer"][ID_HINT] == {
        "table": "customers",
        "column": "id",
        "via": ["cards", "customer"],
    }
    box = Box(env)
    state = box.req({"op": "dump"})["value"]
    sets = ArgumentBuilder(state).candidates(tools[get_card], random.Random(0), 4)
    assert len(sets) >= 2 and all(box.call(get_card, **a)["ok"] for a in sets), (
        sets
    )  # parent and key from one row
    # Twilio-style paging: Page is an index from 0; PageToken is left out (the answer carries no
    # token)
    op = model["operations"][list_cards]
    assert op["page"] == {"limit": "page_size", "page": "page", "first": 0, "default_limit": 20}
    assert "page_token" not in tools[list_cards].parameters["properties"] and any(
        "page_token" in w and "left out" in w for w in warnings
    )
    owner = next(r["customer"] for r in state["cards"])
    mine = [r["id"] for r in state["cards"] if r["customer"] == owner]
    pages = [
        box.call(list_cards, customer=owner, page_size=1, page=i)["value"]["cards"]
        for i in range(len(mine))
    ]
    assert [p[0]["id"] for p in pages] == mine


def _stripe_shapes(tmp_path: Path) -> Path:
    """Stripe's shapes behind its dropped tools: a person's required ``account`` that only one of
    its two creates names in the path, and update fields that are commands, unions or looser items
    (``billing_cycle_anchor: "now"`` on an integer stamp, ``cancel_at: integer | ""``,
    ``phases``)."""

    def obj(req: list[str], **props: Any) -> dict[str, Any]:
        return {"type": "object", "required": req, "properties": props}

    def lst(item: str, url: str) -> dict[str, Any]:
        return obj(
            ["object", "data", "has_more", "url"],
            object={"type": "string", "enum": ["list"]},
            data={"type": "array", "items": {"$ref": f"#/components/schemas/{item}"}},
            has_more={"type": "boolean"},
            url={"type": "string", "pattern": f"^{url}"},
        )

    def form(req: list[str], **props: Any) -> dict[str, Any]:
        return {"content": {"application/x-www-form-urlencoded": {"schema": obj(req, **props)}}}

    s = {"type": "string", "maxLength": 5000}
    account, person, sub = (
        {"$ref": f"#/components/schemas/{n}"} for n in ("Account", "Person", "Subscription")
    )
    p_account = [{"name": "account", "in": "path", "required": True, "schema": s}]
    p_sub = [{"name": "subscription", "in": "path", "required": True, "schema": s}]
    schemas = {
        "Account": obj(
            ["id", "object"], id=s, object={"type": "string", "enum": ["account"]}, email=s
        ),
        "Person": obj(
            ["id", "account", "object"],
            id=s,
            account=s,
            object={"type": "string", "enum": ["person"]},
            first_name=s,
        ),
        "Subscription": obj(
            ["id", "billing_cycle_anchor", "object"],
            id=s,
            object={"type": "string", "enum": ["subscription"]},
            billing_cycle_anchor={"type": "integer", "format": "unix-time"},
            cancel_at={"type": "integer", "format": "unix-time", "nullable": True},
            phases={
                "type": "array",
                "items": obj(["start_date"], start_date={"type": "integer"}, note=s),
            },
        ),
        "AccountList": lst("Account", "/v1/accounts"),
        "PersonList": lst("Person", "/v1/account/people"),
        "SubscriptionList": lst("Subscription", "/v1/subscriptions"),
    }
    ref = lambda n: {"$ref": f"#/components/schemas/{n}"}  # noqa: E731
    paths = {
        "/v1/accounts": {
            "get": {"operationId": "GetAccounts", "responses": _ok(ref("AccountList"))}
        },
        "/v1/accounts/{account}": {
            "get": {
                "operationId": "GetAccountsAccount",
                "parameters": p_account,
                "responses": _ok(account),
            }
        },
        "/v1/accounts/{account}/people": {
            "get": {
                "operationId": "GetAccountsAccountPeople",
                "parameters": p_account,
                "responses": _ok(ref("PersonList")),
            },
            "post": {
                "operationId": "PostAccountsAccountPeople",
                "parameters": p_account,
                "requestBody": form([], first_name=s),
                "responses": _ok(person),
            },
        },
        "/v1/account/people": {
            "get": {"operationId": "GetAccountPeople", "responses": _ok(ref("PersonList"))},
            "post": {
                "operationId": "PostAccountPeople",
                "requestBody": form([], account=s, first_name=s),
                "responses": _ok(person),
            },
        },
        "/v1/subscriptions": {
            "get": {"operationId": "GetSubscriptions", "responses": _ok(ref("SubscriptionList"))}
        },
        "/v1/subscriptions/{subscription}": {
            "get": {
                "operationId": "GetSubscriptionsSubscription",
                "parameters": p_sub,
                "responses": _ok(sub),
            },
            "post": {
                "operationId": "PostSubscriptionsSubscription",
                "parameters": p_sub,
                "responses": _ok(sub),
                "requestBody": form(
                    [],
                    billing_cycle_anchor={"type": "string", "enum": ["now", "unchanged"]},
                    cancel_at={"anyOf": [{"type": "integer"}, {"type": "string", "enum": [""]}]},
                    phases={
                        "type": "array",
                        "items": obj([], start_date={"type": "integer"}, note=s),
                    },
                ),
            },
        },
    }
    f = tmp_path / "stripe-shapes.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "stripe shapes"},
                "paths": paths,
                "components": {"schemas": schemas},
            }
        )
    )
    return f


def test_stripe_creates_without_the_parent_and_command_fields_keep_the_answer_schema(
    tmp_path: Path,
) -> None:
    env, warnings = synthesize_file(
        _stripe_shapes(tmp_path), settings=OpenAPISettings(validate=False)
    )
    tools = {t.name: t for t in env.tools}
    model = env.behaviour.model
    box = Box(env)
    accounts = [r["id"] for r in model["seed"]["accounts"]]
    made = box.call("post_account_people", first_name="Ada")  # no account named: the first one
    assert made["ok"], made
    jsonschema.validate(made["value"], tools["post_account_people"].returns)
    assert made["value"]["account"] == accounts[0]
    under = box.call("post_accounts_account_people", account=accounts[1], first_name="Bo")["value"]
    assert under["account"] == accounts[1]  # the path's parent still wins over the fill value
    page = box.call("get_account_people")
    assert page["ok"], page
    jsonschema.validate(page["value"], tools["get_account_people"].returns)
    update = tools["post_subscriptions_subscription"].parameters["properties"]
    assert (
        "billing_cycle_anchor" not in update
    )  # "now" is a command, not the integer it would overwrite
    assert any(
        "'billing_cycle_anchor' is one of ['now', 'unchanged']" in w and "left out" in w
        for w in warnings
    ), warnings
    assert [m.get("type") for m in update["cancel_at"]["anyOf"]] == [
        "integer"
    ]  # the "" member is gone
    assert "phases" not in update  # a phase written without the start_date every shown phase has
    assert any("'phases' writes items without ['start_date']" in w for w in warnings), warnings
    sid = model["seed"]["subscriptions"][0]["id"]
    changed = box.call("post_subscriptions_subscription", subscription=sid, cancel_at=1_700_000_000)
    assert changed["ok"], changed
    got = box.call("get_subscriptions_subscription", subscription=sid)["value"]
    jsonschema.validate(got, tools["get_subscriptions_subscription"].returns)
    assert got["cancel_at"] == 1_700_000_000


def test_an_argument_with_an_id_hint_walks_its_rows_whatever_its_name() -> None:
    """Stripe's ``{invoice}`` is no id-like name: its candidates walk the invoices in row order (the
    first rows may be in a status an action refuses) instead of drawing free text after the
    first."""
    from envkernel_schemas import ToolSpec

    rows = [
        {"id": f"in_{i:04d}", "status": s}
        for i, s in enumerate(["deleted", "void", "draft", "open", "paid"], 1)
    ]
    tool = ToolSpec(
        name="post_invoices_invoice_mark_uncollectible",
        description="Mark an invoice uncollectible.",
        mutates=True,
        parameters={
            "type": "object",
            "required": ["invoice"],
            "properties": {
                "invoice": {
                    "type": "string",
                    "maxLength": 5000,
                    ID_HINT: {"table": "invoices", "column": "id"},
                }
            },
        },
    )
    got = [
        a["invoice"]
        for a in ArgumentBuilder({"invoices": rows}).candidates(tool, random.Random(1), 5)
    ]
    assert got == [r["id"] for r in rows], got


def _twilio_like(tmp_path: Path) -> Path:
    """Twilio's shape: accounts keyed by ``sid`` (no ``id`` anywhere) owning queues, in envelopes
    named after the resource (``{"accounts": [...], "page": 0}``)."""
    acc = {
        "type": "object",
        "properties": {
            "sid": {"type": "string", "pattern": "^AC[0-9a-f]{32}$"},
            "friendly_name": {"type": "string"},
            "status": {"type": "string", "enum": ["active", "suspended", "closed"]},
        },
    }
    queue = {
        "type": "object",
        "properties": {
            "sid": {"type": "string", "pattern": "^QU[0-9a-f]{32}$"},
            "account_sid": {"type": "string", "pattern": "^AC[0-9a-f]{32}$"},
            "friendly_name": {"type": "string"},
            "max_size": {"type": "integer", "minimum": 1, "maximum": 5000},
        },
    }

    def sid(name: str, p: str) -> dict[str, Any]:
        return {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": p},
        }

    def env_of(key: str, ref: str) -> dict[str, Any]:
        return _ok(
            {
                "type": "object",
                "properties": {
                    key: {"type": "array", "items": {"$ref": ref}},
                    "page": {"type": "integer"},
                },
            }
        )

    a, q = "#/components/schemas/Account", "#/components/schemas/Queue"
    paths = {
        "/2010-04-01/Accounts.json": {
            "get": {"operationId": "ListAccount", "responses": env_of("accounts", a)}
        },
        "/2010-04-01/Accounts/{Sid}.json": {
            "get": {
                "operationId": "FetchAccount",
                "parameters": [sid("Sid", "^AC[0-9a-f]{32}$")],
                "responses": _ok({"$ref": a}),
            }
        },
        "/2010-04-01/Accounts/{AccountSid}/Queues.json": {
            "get": {
                "operationId": "ListQueue",
                "parameters": [sid("AccountSid", "^AC[0-9a-f]{32}$")],
                "responses": env_of("queues", q),
            }
        },
        "/2010-04-01/Accounts/{AccountSid}/Queues/{Sid}.json": {
            "get": {
                "operationId": "FetchQueue",
                "parameters": [
                    sid("AccountSid", "^AC[0-9a-f]{32}$"),
                    sid("Sid", "^QU[0-9a-f]{32}$"),
                ],
                "responses": _ok({"$ref": q}),
            }
        },
    }
    f = tmp_path / "twilio-like.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.1",
                "info": {"title": "twilio like"},
                "paths": paths,
                "components": {"schemas": {"Account": acc, "Queue": queue}},
            }
        )
    )
    return f


def test_rows_keyed_by_sid_are_found_in_answers_so_nested_tools_chain(tmp_path: Path) -> None:
    """Twilio v2010 gave 5 one-call tasks: its rows have ``sid`` but no ``id``, so the sampler saw
    no row in any answer and no nested tool could get its ``account_sid``. The tables' own keys mark
    rows."""
    import asyncio

    from envkernel_chains import Chains, ChainsSettings
    from envkernel_chains.links import extract_elements
    from envkernel_kit.testing import RunnerContext
    from envkernel_process import ProcessRunner

    env, _ = synthesize_file(_twilio_like(tmp_path), settings=OpenAPISettings(validate=False))
    page = Box(env).call("list_account")["value"]
    assert (
        extract_elements(page, "list_account", ["accounts", "queues"], 0) == []
    )  # no id-like name: no row
    assert len(extract_elements(page, "list_account", ["accounts", "queues"], 0, {"sid"})) == len(
        page["accounts"]
    )

    async def sample() -> list[Any]:
        runner = ProcessRunner()
        try:
            ctx = RunnerContext(runner, component="chains", out_dir=tmp_path / "out")
            return [t async for t in Chains(ChainsSettings(tasks_per_env=8)).sample(env, ctx)]
        finally:
            await runner.aclose()

    tasks = asyncio.run(sample())
    chained = [t for t in tasks if [c.name for c in t.calls][:2] == ["list_account", "list_queue"]]
    assert chained, [(t.request, [c.name for c in t.calls]) for t in tasks]
    accounts = {r["sid"] for r in env.behaviour.model["seed"]["accounts"]}
    assert all(t.calls[1].arguments["account_sid"] in accounts for t in chained)


def _fhir_like(tmp_path: Path) -> Path:
    """NHS personal demographics' shapes: POST /Patient answers 201 with the patient and 200 with an
    OperationOutcome ("a match was found"); a patient's required fields sit five objects deep; a
    date-time must match a ``+00:00`` pattern; extensions are unions of named schemas, and the
    create body allows a kind (``Authority``) that no patient answer may hold."""

    def obj(req: list[str], **props: Any) -> dict[str, Any]:
        return {"type": "object", "required": req, "properties": props}

    ref = lambda n: {"$ref": f"#/components/schemas/{n}"}  # noqa: E731
    coding = obj(
        ["code"], code={"type": "string", "enum": ["MTH", "FTH"]}, system={"type": "string"}
    )
    ext = lambda url, **p: obj(["url", *p], url={"type": "string", "enum": [url]}, **p)  # noqa: E731
    when = "^([12]\\d{3}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T\\d{2}:\\d{2}:\\d{2}\\+00:00)$"
    schemas = {
        "Pharmacy": ext(
            "pharmacy",
            valueReference=obj(
                ["identifier"],
                identifier=obj(["value"], value={"type": "string", "pattern": "^[A-Z0-9]{3,10}$"}),
            ),
        ),
        "Language": ext("language", valueCode={"type": "string", "enum": ["en", "cy"]}),
        "Authority": ext("authority", valueCode={"type": "string"}),
        "Patient": obj(
            ["id"],
            id={"type": "string", "pattern": "^\\d{10}$"},
            gender={"type": "string", "enum": ["male", "female"]},
            deceasedDateTime={"type": "string", "format": "date-time", "pattern": when},
            contact={
                "type": "array",
                "items": obj(
                    ["relationship"],
                    relationship={
                        "type": "array",
                        "minItems": 1,
                        "items": obj(
                            ["coding"],
                            coding={
                                "type": "array",
                                "minItems": 1,
                                "items": obj(["detail"], detail=coding),
                            },
                        ),
                    },
                ),
            },
            extension={"type": "array", "items": {"anyOf": [ref("Pharmacy"), ref("Language")]}},
        ),
        "PatientCreate": obj(
            ["gender", "extension"],
            gender={"type": "string", "enum": ["male", "female"]},
            extension={"type": "array", "items": {"anyOf": [ref("Authority"), ref("Language")]}},
        ),
        "OperationOutcome": obj(
            ["resourceType", "issue"],
            resourceType={"type": "string"},
            issue={"type": "array", "items": obj(["code"], code={"type": "string"})},
        ),
        "Bundle": obj(
            ["entry"], total={"type": "integer"}, entry={"type": "array", "items": ref("Patient")}
        ),
    }
    fhir = lambda n: {"content": {"application/fhir+json": {"schema": ref(n)}}}  # noqa: E731
    pid = [
        {
            "name": "id",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": "^\\d{10}$"},
        }
    ]
    paths = {
        "/Patient": {
            "get": {
                "operationId": "search-patient",
                "responses": {"200": {"description": "ok", **fhir("Bundle")}},
            },
            "post": {
                "operationId": "create-patient",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("PatientCreate")}},
                },
                "responses": {
                    "200": {"description": "a match", **fhir("OperationOutcome")},
                    "201": {"description": "made", **fhir("Patient")},
                },
            },
        },
        "/Patient/{id}": {
            "get": {
                "operationId": "get-patient",
                "parameters": pid,
                "responses": {"200": {"description": "ok", **fhir("Patient")}},
            }
        },
    }
    f = tmp_path / "fhir-like.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "fhir like"},
                "paths": paths,
                "components": {"schemas": schemas},
            }
        )
    )
    return f


def test_fhir_shapes_seed_rows_and_creates_keep_the_answer_schema(tmp_path: Path) -> None:
    """NHS personal demographics kept 4 of 7 tools and gave 8 tasks: its patient was built from the
    create's 200 OperationOutcome, deep required fields were left empty, a ``+00:00`` date-time
    pattern was broken, and a create wrote extensions the patient answer refuses."""
    env, warnings = synthesize_file(_fhir_like(tmp_path), settings=OpenAPISettings(validate=False))
    tools = {t.name: t for t in env.tools}
    fields = env.behaviour.model["resources"]["patient"]["fields"]
    assert (
        "deceased_date_time" in fields and "issue" not in fields
    )  # 201 Created is the create's answer
    rows = env.behaviour.model["seed"]["patient"]
    for row in rows:  # every seed row as the get answers it, five levels deep included
        jsonschema.validate(
            Box(env).call("get_patient", id=row["id"])["value"], tools["get_patient"].returns
        )
    assert all(
        c["relationship"][0]["coding"][0]["detail"]["code"]
        for r in rows
        for c in r.get("contact") or []
    )
    assert all(
        r["deceased_date_time"].endswith("+00:00") for r in rows if r.get("deceased_date_time")
    )
    members = tools["create_patient"].parameters["properties"]["extension"]["items"]["anyOf"]
    assert [m["properties"]["url"]["enum"] for m in members] == [["language"]]  # Authority is cut
    assert any("'Authority'" in w and "left out" in w for w in warnings), warnings
    box = Box(env)
    sets = ArgumentBuilder(box.req({"op": "dump"})["value"]).candidates(
        tools["create_patient"], random.Random(0), 3
    )
    assert any(a.get("extension") for a in sets), sets
    for args in sets:
        assert all(e["url"] == "language" for e in args.get("extension") or []), (
            args
        )  # a member, not {}
        made = box.call("create_patient", **args)
        assert made["ok"], made
        jsonschema.validate(made["value"], tools["create_patient"].returns)
        jsonschema.validate(
            box.call("get_patient", id=made["value"]["id"])["value"], tools["get_patient"].returns
        )


def _kratos_like(tmp_path: Path) -> Path:
    """Ory Kratos's shapes: ``GET /self-service/recovery/flows?id=...`` answers with one flow (which
    holds a list of messages), and ``GET /self-service/recovery/api`` starts one (no id asked)."""
    msg = {
        "type": "object",
        "required": ["id", "text"],
        "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
    }
    flow = {
        "type": "object",
        "required": ["id", "expires_at"],
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "expires_at": {"type": "string", "format": "date-time"},
            "state": {
                "type": "string",
                "enum": ["choose_method", "sent_email", "passed_challenge"],
            },
            "messages": {"type": "array", "items": msg},
        },
    }
    ident = {
        "type": "object",
        "required": ["id", "schema_id"],
        "properties": {
            "id": {"type": "string", "format": "uuid4"},
            "schema_id": {"type": "string"},
        },
    }
    ref = lambda n: {"$ref": f"#/components/schemas/{n}"}  # noqa: E731
    paths = {
        "/identities": {
            "get": {
                "operationId": "listIdentities",
                "responses": _ok({"type": "array", "items": ref("identity")}),
            },
            "post": {
                "operationId": "createIdentity",
                "responses": _ok(ref("identity")),
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["schema_id"],
                                "properties": {"schema_id": {"type": "string"}},
                            }
                        }
                    }
                },
            },
        },
        "/identities/{id}": {
            "get": {
                "operationId": "getIdentity",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": _ok(ref("identity")),
            }
        },
        "/self-service/recovery/flows": {
            "get": {
                "operationId": "getSelfServiceRecoveryFlow",
                "responses": _ok(ref("recoveryFlow")),
                "parameters": [
                    {"name": "id", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
            }
        },
        "/self-service/recovery/api": {
            "get": {
                "operationId": "initializeSelfServiceRecoveryViaAPIFlow",
                "responses": _ok(ref("recoveryFlow")),
            }
        },
    }
    f = tmp_path / "kratos-like.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "kratos like"},
                "paths": paths,
                "components": {"schemas": {"recoveryFlow": flow, "identity": ident}},
            }
        )
    )
    return f


def test_a_get_by_query_id_is_a_get_and_an_item_with_a_list_inside_is_no_list(
    tmp_path: Path,
) -> None:
    """Ory Kratos was rejected (11 of 15 tools): its flow gets (``?id=``) were lists whose items
    were the flow's messages, so the probe asked for a flow by a message's integer id."""
    env, warnings = synthesize_file(
        _kratos_like(tmp_path), settings=OpenAPISettings(validate=False)
    )
    ops = env.behaviour.model["operations"]
    tools = {t.name: t for t in env.tools}
    get_flow = ops["get_self_service_recovery_flow"]
    assert get_flow["kind"] == "get" and get_flow["key"] == "id", get_flow
    assert (
        get_flow["resource"] == "recovery_flows"
    )  # the answer is a recoveryFlow: /recovery/flows names it, not "flows"
    assert "initialize_self_service_recovery_via_apiflow" not in tools
    assert any(
        "initializeSelfServiceRecoveryViaAPIFlow" in w and "no array of items" in w
        for w in warnings
    ), warnings
    box = Box(env)
    sets = ArgumentBuilder(box.req({"op": "dump"})["value"]).candidates(
        tools["get_self_service_recovery_flow"], random.Random(0), 3
    )
    flows = {r["id"] for r in env.behaviour.model["seed"][get_flow["resource"]]}
    assert sets and all(a["id"] in flows for a in sets), sets
    for a in sets:
        got = box.call("get_self_service_recovery_flow", **a)
        assert got["ok"] and got["value"]["id"] == a["id"], got
        jsonschema.validate(got["value"], tools["get_self_service_recovery_flow"].returns)
    made = box.call("create_identity", schema_id="default")["value"]
    assert (
        str(uuid.UUID(made["id"])) == made["id"]
    )  # format uuid4: a new identity's id is a UUID like the seeds', not ide_0001


def _amadeus_like(tmp_path: Path) -> Path:
    """Amadeus hotel list's shapes: three ways to look hotels up (``/hotels/by-hotels``,
    ``/hotels/by-city``), each filtering by plural array parameters (``hotelIds``,
    ``chainCodes``)."""
    hotel = {
        "type": "object",
        "properties": {
            "hotelId": {"type": "string", "pattern": "^[A-Z0-9]{8}$"},
            "chainCode": {"type": "string", "pattern": "^[A-Z]{2}$"},
            "name": {"type": "string"},
            "iataCode": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "timeZoneName": {"type": "string"},
        },
    }
    answer = _ok(
        {
            "type": "object",
            "properties": {
                "data": {"type": "array", "items": {"$ref": "#/components/schemas/Hotel"}}
            },
        }
    )

    def arr(name: str, req: bool) -> dict[str, Any]:
        return {
            "name": name,
            "in": "query",
            "required": req,
            "schema": {"type": "array", "items": {"type": "string"}, "minItems": 1 if req else 0},
        }

    paths = {
        "/reference-data/locations/hotels/by-hotels": {
            "get": {
                "operationId": "get-hotels-by-hotels",
                "parameters": [arr("hotelIds", True)],
                "responses": answer,
            }
        },
        "/reference-data/locations/hotels/by-city": {
            "get": {
                "operationId": "get-hotels-by-city",
                "parameters": [
                    {
                        "name": "cityCode",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    arr("chainCodes", False),
                ],
                "responses": answer,
            }
        },
    }
    f = tmp_path / "amadeus-like.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "amadeus like"},
                "paths": paths,
                "components": {"schemas": {"Hotel": hotel}},
            }
        )
    )
    return f


def test_lookups_by_a_way_share_their_collection_and_plural_arrays_filter_by_any_of(
    tmp_path: Path,
) -> None:
    """Amadeus gave 3 one-call tasks: each /by-X path was a resource of its own, ``hotelIds`` and
    ``chainCodes`` were not understood, and the sampler could not fill an array filter."""
    import asyncio

    from envkernel_chains import Chains, ChainsSettings
    from envkernel_kit.testing import RunnerContext
    from envkernel_process import ProcessRunner

    env, _ = synthesize_file(_amadeus_like(tmp_path), settings=OpenAPISettings(validate=False))
    ops = env.behaviour.model["operations"]
    assert {o["resource"] for o in ops.values()} == {"hotels"}, ops
    assert ops["get_hotels_by_hotels"]["filters"]["hotel_ids"] == {"field": "hotel_id", "op": "in"}
    assert ops["get_hotels_by_city"]["filters"]["chain_codes"] == {
        "field": "chain_code",
        "op": "in",
    }
    rows = env.behaviour.model["seed"]["hotels"]
    assert all(
        r["iata_code"]
        in {
            "LHR",
            "CDG",
            "JFK",
            "SFO",
            "SIN",
            "HND",
            "FRA",
            "AMS",
            "LIS",
            "PRG",
            "YYZ",
            "SYD",
            "MAD",
            "MUC",
            "OSL",
        }
        for r in rows
    )
    assert all(
        "/" in r["time_zone_name"] or r["time_zone_name"] == "UTC" for r in rows
    )  # a zone, not a hotel's name
    got = Box(env).call(
        "get_hotels_by_hotels", hotel_ids=[rows[1]["hotel_id"], rows[2]["hotel_id"]]
    )["value"]["data"]
    assert [h["hotel_id"] for h in got] == [rows[1]["hotel_id"], rows[2]["hotel_id"]]

    async def sample() -> list[Any]:
        runner = ProcessRunner()
        try:
            return [
                t
                async for t in Chains(ChainsSettings(tasks_per_env=10)).sample(
                    env, RunnerContext(runner, component="chains", out_dir=tmp_path / "out")
                )
            ]
        finally:
            await runner.aclose()

    tasks = asyncio.run(sample())
    filtered = [
        c.arguments
        for t in tasks
        for c in t.calls
        if c.arguments.get("hotel_ids") or c.arguments.get("chain_codes")
    ]
    assert len(tasks) >= 5 and filtered, [
        (t.request, [c.arguments for c in t.calls]) for t in tasks
    ]
    assert all(isinstance(v, list) for a in filtered for v in a.values())


def test_rfc_2822_times_phone_numbers_and_a_filter_of_another_format(tmp_path: Path) -> None:
    """Twilio v2010 kept 62 of 64 tools: its times are ``format: date-time-rfc-2822`` (seeded as
    words like "harbor willow") while its ``StartTime`` filter is a ``date-time``, so no stored
    value was one the filter accepts; its calls' ``to`` and ``from`` were seeded as e-mail
    addresses."""
    import email.utils

    rfc = {"type": "string", "format": "date-time-rfc-2822", "nullable": True}
    call = {
        "type": "object",
        "properties": {
            "sid": {"type": "string", "pattern": "^CA[0-9a-f]{32}$"},
            "date_created": rfc,
            "date_updated": rfc,
            "start_time": rfc,
            "to": {"type": "string", "description": "The phone number that received this call."},
            "status": {"type": "string", "enum": ["queued", "ringing", "completed"]},
        },
    }
    q = lambda name, fmt: {"name": name, "in": "query", "schema": {"type": "string", "format": fmt}}  # noqa: E731
    paths = {
        "/2010-04-01/Calls.json": {
            "get": {
                "operationId": "ListCall",
                "parameters": [q("StartTime", "date-time"), q("To", "phone-number")],
                "responses": _ok(
                    {
                        "type": "object",
                        "properties": {
                            "calls": {
                                "type": "array",
                                "items": {"$ref": "#/components/schemas/Call"},
                            }
                        },
                    }
                ),
            }
        }
    }
    f = tmp_path / "calls.json"
    f.write_text(
        json.dumps(
            {
                "openapi": "3.0.1",
                "info": {"title": "calls"},
                "paths": paths,
                "components": {"schemas": {"Call": call}},
            }
        )
    )
    env, warnings = synthesize_file(f, settings=OpenAPISettings(validate=False))
    op = env.behaviour.model["operations"]["list_call"]
    assert "start_time" not in op["parameters"]["properties"] and "start_time" not in (
        op.get("filters") or {}
    )
    assert any("'StartTime' is a date-time" in w and "left out" in w for w in warnings), warnings
    for row in env.behaviour.model["seed"]["calls"]:
        created, updated = (
            email.utils.parsedate_to_datetime(row[c]) for c in ("date_created", "date_updated")
        )
        assert created <= updated, row
        assert re.fullmatch(r"\+[\d ]+", row["to"]), row  # a phone number, not an e-mail address
