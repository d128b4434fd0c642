"""Real specs nobody here tuned for (``plugins/openapi/corpus-real-2``, issue #31): the shapes they
use that the first real corpus lacks, each on its real file.

- a dangling local ``$ref`` (HubSpot's HubDB names a ``HubDbTableRowV3Wrapper`` it never defines)
  skips only the operations that reach it;
- a leading path parameter keys the collection the server URL ends with (Vonage's
  ``https://api.nexmo.com/accounts`` + ``/{api_key}/subaccounts``);
- body fields that carry the caller's API key in every call (Mandrill's ``key``) are auth, not
  data: never a tool argument, never an item's id.

The whole corpus through the pipeline is ``benchmarks/bench_realspecs.py --corpus
plugins/openapi/corpus-real-2``; its figures are in ``docs/openapi-realspecs.md``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from envkernel_openapi import OpenAPISettings, synthesize_file
from envkernel_openapi.infer import Builder
from envkernel_openapi.seedschema import conform
from envkernel_openapi.spec import UNRESOLVED, load

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real-2"
SOURCES = json.loads((CORPUS / "sources.json").read_text())


def test_new_corpus_is_real_and_documented() -> None:
    assert len(SOURCES) >= 12
    for s in SOURCES:
        assert (CORPUS / s["file"]).is_file(), s["file"]
        assert s["repo"].startswith("github:") and len(s["commit"]) == 40 and s["path"], s["file"]
        assert s["source_url"].startswith("https://github.com/") and s["repo_license"], s["file"]
        if s["repo_license_file"]:
            assert (CORPUS / s["repo_license_file"]).is_file(), s["repo_license_file"]
    names = (CORPUS / "SOURCES.md").read_text()
    assert all(f"`{s['file']}`" in names for s in SOURCES)


def _builder(name: str) -> Builder:
    doc, _warnings = load(CORPUS / name, validate=False)
    return Builder(doc, name)


def test_a_dangling_ref_skips_only_the_operations_that_reach_it() -> None:
    env, warnings = synthesize_file(
        CORPUS / "hubspot-cms-hubdb-v3.json", settings=OpenAPISettings(validate=False)
    )
    ref = "'#/components/schemas/HubDbTableRowV3Wrapper'"
    dangling = [w for w in warnings if "skipped" in w and ref in w and "cannot be resolved" in w]
    # the row lists (published and draft) answer a collection of the missing schema ...
    assert any("GET /cms/v3/hubdb/tables/{tableIdOrName}/rows " in w for w in dangling), dangling
    assert any("/rows/draft " in w for w in dangling), dangling
    # ... and said once, as a warning of its own, not a refusal
    assert sum(ref in w and "operations that reach it are skipped" in w for w in warnings) == 1
    # the tables and the single rows are still tools
    assert len(env.tools) >= 10 and len(dangling) <= 4
    names = {t.name for t in env.tools}
    assert any("table" in n for n in names), names
    model = env.behaviour.model
    assert UNRESOLVED not in json.dumps(model["operations"])


def test_a_leading_path_parameter_keys_the_collection_the_server_url_names() -> None:
    b = _builder("vonage-subaccounts.yml")  # servers: https://api.nexmo.com/accounts
    b.classify()
    assert not [w for w in b.warnings if "does not follow a collection name" in w]
    by_path = {(o.method, o.path): o for o in b.ops}
    one = by_path[("get", "/{api_key}/subaccounts/{subaccount_key}")]
    assert (one.kind, one.resource, one.key_param) == ("get", "subaccounts", "subaccount_key")
    assert one.parents == [("accounts", "api_key")]
    transfer = by_path[("post", "/{api_key}/credit-transfers")]
    assert (transfer.kind, transfer.resource, transfer.parents) == (
        "create",
        "credit_transfers",
        [("accounts", "api_key")],
    )


def test_body_credentials_are_auth_not_data() -> None:
    env, warnings = synthesize_file(
        CORPUS / "mailchimp-transactional.json", settings=OpenAPISettings(validate=False)
    )
    assert any("'key' carry the caller's credentials" in w for w in warnings)
    assert not [w for w in warnings if "body field 'key'" in w]
    for tool in env.tools:
        assert "key" not in (tool.parameters.get("properties") or {}), tool.name
    ops = env.behaviour.model["operations"]
    # the item of an RPC call is the one natural key it requires, not the API key
    assert "key" not in {o.get("key") for o in ops.values()}
    tags = {o["kind"]: o for o in ops.values() if o.get("resource") == "tags"}
    assert tags["delete"]["key"] == "tag" and tags["get"]["key"] == "tag", tags
    assert tags["delete"]["parameters"]["required"] == ["tag"]


def test_seed_items_keep_a_union_of_constraints_on_their_object() -> None:
    # Apideck's CustomField: an object with properties and anyOf [{required: [id]}, {required:
    # [name]}]; its members add constraints, they are not other types (seeds were word pairs)
    env, _warnings = synthesize_file(
        CORPUS / "apideck-crm.yml", settings=OpenAPISettings(validate=False)
    )
    doc, _ = load(CORPUS / "apideck-crm.yml", validate=False)
    item = doc["components"]["schemas"]["CustomField"]
    rows = env.behaviour.model["seed"]["companies"]
    fields = [f for row in rows for f in row.get("custom_fields") or []]
    assert fields and all(isinstance(f, dict) for f in fields), fields[:3]
    assert all(("id" in f or "name" in f) and set(f) <= set(item["properties"]) for f in fields)


def test_seed_items_merge_their_all_of() -> None:
    # Lob's tracking_events items are allOf [tracking_event_base, {type, name, details: null}]
    env, _warnings = synthesize_file(
        CORPUS / "lob-api-bundled.yml", settings=OpenAPISettings(validate=False)
    )
    events = [
        e
        for row in env.behaviour.model["seed"]["postcards"]
        for e in row.get("tracking_events") or []
    ]
    assert events and all(isinstance(e, dict) and e.get("type") == "normal" for e in events)
    assert all(e.get("details") is None for e in events)


def test_a_timestamp_in_another_form_than_the_engines_is_not_stamped_and_seeds_keep_it() -> None:
    # Mandrill's created_at is "YYYY-MM-DD hh:mm:ss" (a pattern): the engine's ISO stamp would
    # break it, so the engine does not stamp it, and a seed time is written in that form
    spaced = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
    b = _builder("mailchimp-transactional.json")
    b.build()
    patterned = [
        (r.name, f)
        for r in b.resources.values()
        for c, f in r.fields.items()
        if c == "created_at" and f.get("pattern") == spaced
    ]
    assert patterned
    assert all(f.get("generated") is None for _, f in patterned), patterned
    unpatterned = [
        f
        for r in b.resources.values()
        for c, f in r.fields.items()
        if c == "created_at" and not f.get("pattern") and not b._written({}, r, c)
    ]
    assert any(f.get("generated") == "created" for f in unpatterned)
    moment = conform(
        "2026-01-10T08:30:00Z", {"type": "string", "pattern": spaced}, random.Random(1)
    )
    assert moment == "2026-01-10 08:30:00"


def test_an_array_sort_is_no_sort_and_a_body_of_another_structure_writes_nothing() -> None:
    # HubDB's sort=[...] (an array of column names) is not the one column the engine sorts by
    env, warnings = synthesize_file(
        CORPUS / "hubspot-cms-hubdb-v3.json", settings=OpenAPISettings(validate=False)
    )
    for op in env.behaviour.model["operations"].values():
        if op.get("sort"):
            arg = op["sort"].get("arg")
            assert not arg or op["parameters"]["properties"][arg].get("type") != "array", op
    assert any("query parameter 'sort' is not understood" in w for w in warnings)
    # HubSpot's create writes associations as an array of links; the answer keeps an object
    env, warnings = synthesize_file(
        CORPUS / "hubspot-crm-contacts-v3.json", settings=OpenAPISettings(validate=False)
    )
    assert any("body field 'associations' is an array but 'contacts' keeps" in w for w in warnings)
    for op in env.behaviour.model["operations"].values():
        assert "associations" not in (op.get("body") or {}).values(), op


def test_third_corpus_is_real_documented_and_brings_the_real_specs_to_sixty() -> None:
    third = CORPUS.parent / "corpus-real-3"
    sources = json.loads((third / "sources.json").read_text())
    first = json.loads((CORPUS.parent / "corpus-real" / "sources.json").read_text())
    assert len(first) + len(SOURCES) + len(sources) >= 60
    names = (third / "SOURCES.md").read_text()
    for s in sources:
        assert (third / s["file"]).is_file() and f"`{s['file']}`" in names, s["file"]
        assert s["repo"].startswith("github:") and len(s["commit"]) == 40, s["file"]
        assert s["source_url"].startswith("https://github.com/") and s["repo_license"], s["file"]
        assert (third / s["repo_license_file"]).is_file(), s["repo_license_file"]
