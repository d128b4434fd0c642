"""The ``openapi`` synthesizer: documents in, EnvSpecs out (no sandbox needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from envkernel_kit.testing import FakeContext
from envkernel_openapi import OpenAPISynthesizer, SpecError, corpus_files, synthesize_file
from envkernel_openapi.spec import load_text
from envkernel_schemas import EnvRequested, ModelBehaviour

MINI = {
    "openapi": "3.0.3",
    "info": {"title": "Mini", "version": "1"},
    "paths": {
        "/widgets": {
            "get": {
                "operationId": "listWidgets",
                "parameters": [{"name": "color", "in": "query", "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/Widget"},
                                }
                            }
                        },
                    }
                },
            },
            "post": {
                "operationId": "createWidget",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}
                    }
                },
                "responses": {
                    "201": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}
                        },
                    }
                },
            },
        },
        "/widgets/{widgetId}": {
            "get": {
                "parameters": [
                    {
                        "name": "widgetId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}
                        },
                    },
                    "404": {"description": "no"},
                },
            },
            "head": {"responses": {"200": {"description": "ok"}}},
        },
        "/widgets/{widgetId}/photo": {
            "put": {
                "parameters": [
                    {
                        "name": "widgetId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}
                },
                "responses": {"204": {"description": "ok"}},
            },
        },
    },
    "components": {
        "schemas": {
            "Widget": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "string", "readOnly": True},
                    "name": {"type": "string"},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "ownerEmail": {"type": "string", "format": "email"},
                    "createdAt": {"type": "string", "format": "date-time", "readOnly": True},
                },
            }
        }
    },
}


def write(tmp: Path, name: str, doc: dict | str) -> Path:
    p = tmp / name
    if isinstance(doc, str):
        p.write_text(doc)
    elif name.endswith(".json"):
        p.write_text(json.dumps(doc))
    else:
        p.write_text(yaml.safe_dump(doc))
    return p


def test_corpus_has_seven_domains_mixed_versions_and_formats() -> None:
    files = corpus_files()
    assert len(files) >= 7
    versions, suffixes, domains = set(), set(), set()
    for f in files:
        env, warnings = synthesize_file(f)
        doc, _ = load_text(f.read_text(), f.name)
        versions.add(str(doc["openapi"])[:3])
        suffixes.add(f.suffix)
        domains.add(env.domain)
        model = env.behaviour.model
        assert isinstance(env.behaviour, ModelBehaviour)
        assert len(env.tools) >= 8, f.name
        related = [
            r
            for r in model["resources"].values()
            if any(fl.get("ref") for fl in r["fields"].values())
        ]
        assert len(model["resources"]) >= 3 and related, f.name
        assert warnings == [], (f.name, warnings)
        assert env.seed_sql == ""
    assert {"3.0", "3.1"} <= versions and {".json", ".yaml"} <= suffixes
    assert len(domains) >= 7


def test_tools_names_descriptions_and_parameters(tmp_path: Path) -> None:
    env, warnings = synthesize_file(write(tmp_path, "mini.yaml", MINI))
    names = [t.name for t in env.tools]
    assert names == [
        "list_widgets",
        "create_widget",
        "get_widget",
    ]  # operationId snake_cased, else method+path
    get = env.tool("get_widget")
    assert (
        get.parameters["required"] == ["widget_id"]
        and "like wid_0001" in get.parameters["properties"]["widget_id"]["description"]
    )
    create = env.tool("create_widget")
    assert set(create.parameters["properties"]) == {
        "name",
        "color",
        "owner_email",
    }  # readOnly id/createdAt left out
    assert create.parameters["required"] == ["name"] and create.mutates
    assert env.tool("list_widgets").parameters["properties"]["color"]["enum"] == ["red", "blue"]
    # unsupported operations are skipped with a warning naming them
    assert any("HEAD /widgets/{widgetId}" in w for w in warnings)
    assert any("skipped PUT /widgets/{widgetId}/photo" in w for w in warnings)
    assert sorted(env.generated["widgets"]) == ["created_at", "id"]


def test_json_and_yaml_and_31_types(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(MINI))
    doc["openapi"] = "3.1.0"
    doc["components"]["schemas"]["Widget"]["properties"]["note"] = {"type": ["string", "null"]}
    a, _ = synthesize_file(write(tmp_path, "a.json", doc))
    b, _ = synthesize_file(write(tmp_path, "b.yaml", doc))
    assert a.behaviour.model["resources"] == b.behaviour.model["resources"]
    assert a.behaviour.model["resources"]["widgets"]["fields"]["note"]["nullable"] is True


def test_unknown_minor_version_warns(tmp_path: Path) -> None:
    doc = dict(MINI, openapi="3.9.0")
    env, warnings = synthesize_file(write(tmp_path, "future.yaml", doc))
    assert env.tools and any("3.9.0" in w and "newer" in w for w in warnings)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "openapi: 3.0.0\ninfo: {title: x}\npaths: {/a: [1, 2]}\n",
            "bad.yaml: at $.paths./a: a path item must be an object",
        ),
        (
            '{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": []}}}}',
            "bad.yaml: at $.paths./a.get.responses",
        ),
        ("swagger: '1.2'\npaths: {}\n", "bad.yaml: at $.swagger"),
        (
            "openapi: 3.0.0\npaths:\n  /a: {get: {responses: {'200': {$ref: "
            "'#/components/responses/Nope'}}}}\n",
            "points to nothing",
        ),
        ("openapi: 3.0.0\npaths: {/a: {get: [\n", "not valid YAML at line"),
        ("openapi: 3.0.0\ninfo: {title: x}\n", "bad.yaml: at $: there is no 'paths'"),
    ],
)
def test_malformed_documents_are_refused_with_file_and_path(
    tmp_path: Path, text: str, needle: str
) -> None:
    with pytest.raises(SpecError) as err:
        synthesize_file(write(tmp_path, "bad.yaml", text))
    assert needle in str(err.value)
    assert "Traceback" not in str(err.value)


def test_seed_is_deterministic_realistic_and_consistent() -> None:
    shop = next(f for f in corpus_files() if f.stem == "shop")
    a, _ = synthesize_file(shop, seed=1)
    b, _ = synthesize_file(shop, seed=1)
    c, _ = synthesize_file(shop, seed=2)
    sa, sc = a.behaviour.model["seed"], c.behaviour.model["seed"]
    assert sa == b.behaviour.model["seed"] and sa != sc
    customers, products, orders = sa["customers"], sa["products"], sa["orders"]
    emails = [r["email"] for r in customers]
    assert len(set(emails)) == len(emails) and all("@" in e for e in emails)
    assert all(
        r["name"].split()[0].lower() in r["email"] for r in customers
    )  # email follows the name
    names = [r["name"] for r in products]
    assert len(set(names)) == len(names) and "desk lamp" in " ".join(names) + " desk lamp"
    assert all(
        p["category"] in ["home office", "computer accessories", "audio", "displays"]
        for p in products
    )
    ids = {r["id"] for r in customers}
    assert all(o["customer_id"] in ids for o in orders)  # references hold
    statuses = {o["status"] for o in orders}
    assert statuses == {
        "pending",
        "confirmed",
        "shipped",
        "delivered",
        "cancelled",
    }  # every enum value appears
    # "the pending order for <product>" names exactly one row for most products
    pairs = [(o["status"], o["product_id"]) for o in orders]
    assert sum(pairs.count(p) == 1 for p in pairs) >= len(pairs) // 2


def test_synthesizer_sources(tmp_path: Path) -> None:
    synth = OpenAPISynthesizer()
    envs = synth.synthesize(
        EnvRequested(run="r", id="e", time=0.0, source_kind="openapi", source="", index=0, seed=0),
        FakeContext(component="openapi"),
    )
    assert len(envs) == len(corpus_files())
    folder = tmp_path / "specs"
    folder.mkdir()
    write(folder, "one.yaml", MINI)
    write(folder, "two.json", MINI)
    write(folder, "broken.yaml", "openapi: 3.0.0\npaths: {/a: 3}\n")
    envs = synth.synthesize(
        EnvRequested(
            run="r", id="e", time=0.0, source_kind="openapi", source=str(folder), index=0, seed=0
        ),
        FakeContext(component="openapi"),
    )
    assert sorted(e.id for e in envs) == [
        "one",
        "two",
    ]  # the broken file is refused, the others kept
    with pytest.raises(SpecError, match="broken.yaml: at"):
        synth.synthesize(
            EnvRequested(
                run="r",
                id="e",
                time=0.0,
                source_kind="openapi",
                source=str(folder / "broken.yaml"),
                index=0,
                seed=0,
            ),
            FakeContext(component="openapi"),
        )
    with pytest.raises(SpecError, match="no such file"):
        synth.synthesize(
            EnvRequested(
                run="r",
                id="e",
                time=0.0,
                source_kind="openapi",
                source=str(tmp_path / "nope.yaml"),
                index=0,
                seed=0,
            ),
            FakeContext(component="openapi"),
        )


def test_spec_strings_never_become_code(tmp_path: Path) -> None:
    """Hostile names are refused or sanitized; hostile values stay data."""
    doc = json.loads(json.dumps(MINI))
    evil = "x\"); import os; os.system('boom') #"
    doc["components"]["schemas"]["Widget"]["properties"][evil] = {
        "type": "string",
        "example": "'; DROP TABLE widgets; --",
    }
    doc["paths"]["/widgets"]["get"]["operationId"] = "list'; DROP TABLE x; --"
    env, _ = synthesize_file(write(tmp_path, "evil.json", doc))
    fields = env.behaviour.model["resources"]["widgets"]["fields"]
    import re

    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) for c in fields)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t.name) for t in env.tools)


def test_a_real_spec_synthesizes_the_same_whatever_the_hash_seed() -> None:
    """Box's real spec gave three different environments under PYTHONHASHSEED 0, 1 and 2 (a foreign
    key's target picked in set order among resources whose names end alike): each process of a run
    (and each run) could build another environment from the same document. Now the same."""
    import os
    import subprocess
    import sys

    spec = Path(__file__).resolve().parents[1] / "plugins/openapi/corpus-real/box-platform.json"
    code = (
        "import sys, hashlib, msgspec; from envkernel_openapi import synthesize_file; "
        "env, _ = synthesize_file(sys.argv[1], seed=0); "
        "print(hashlib.sha256(msgspec.json.encode(env)).hexdigest())"
    )
    digests = {
        h: subprocess.run(
            [sys.executable, "-c", code, str(spec)],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
        ).stdout.strip()  # fmt: skip
        for h in (0, 1, 2)
    }
    assert len(set(digests.values())) == 1, digests
    assert all(len(d) == 64 for d in digests.values()), digests  # each process printed a digest
