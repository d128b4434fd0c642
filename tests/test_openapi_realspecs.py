"""The real-spec corpus (``plugins/openapi/corpus-real``: 36 public specs) through the synthesizer
and the ``probe`` verifier: no traceback on any spec, and a floor on the environments kept.

The floor is what the synthesizer achieves today (see ``benchmarks/bench_realspecs.py`` for the
whole pipeline, tasks included); raise it as the synthesizer gets better.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file
from envkernel_openapi.spec import load, load_text
from envkernel_probe import Probe

process = pytest.importorskip("envkernel_process")
pytestmark = pytest.mark.timeout(1200)  # one synthesis and verification of 35 real specs, on 2 shared cores

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
SOURCES = json.loads((CORPUS / "sources.json").read_text())
KEPT_FLOOR = 28
"""Environments the verifier keeps, of the 36 specs (the pipeline kept 32 on 2026-12-01; one spec is
refused: NHS booking has no list operation to discover ids with)."""


def test_corpus_is_real_and_documented() -> None:
    assert len(SOURCES) >= 30
    for s in SOURCES:
        assert (CORPUS / s["file"]).is_file(), s["file"]
        assert s["repo"] and s["commit"] and s["path"], s["file"]
    assert (CORPUS / "SOURCES.md").is_file() and any((CORPUS / "licenses").iterdir())
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    assert size < 30_000_000


def test_quirks_of_real_specs_are_read() -> None:
    # a $ref to a Markdown file inside x-codeSamples / a tag description does not refuse the spec
    doc, _ = load(CORPUS / "dropbox-sign-api" / "openapi.yaml", validate=False)
    assert len(doc["paths"]) > 30
    # the whole `paths` is one $ref to another file
    doc, _ = load(CORPUS / "google-maps-platform" / "index.yml", validate=False)
    assert any(p.startswith("/") for p in doc["paths"])
    # SendGrid: each component map is one $ref to a whole file
    doc, _ = load(CORPUS / "sendgrid-v3" / "oas_v3.json", validate=False)
    assert len(doc["components"]["schemas"]) > 50
    # Asana's unquoted integer response codes become strings; the validator's findings are warnings
    doc, warnings = load(CORPUS / "xero-accounting.yaml")
    assert any("validator" in w for w in warnings) and doc["paths"]
    doc, _ = load(CORPUS / "asana-api.yaml", validate=False)
    assert all(isinstance(c, str) for item in doc["paths"].values() for op in item.values() if isinstance(op, dict) for c in op.get("responses", {}))
    # Mollie's impossible date in an example (2024-04-31) stays a string instead of breaking YAML
    doc, _ = load_text("openapi: 3.0.0\ninfo: {title: x}\npaths:\n  /a: {get: {responses: {200: {description: ok, x-when: 2024-04-31T12:50:14+00:00}}}}\n", "m.yaml")
    assert doc["paths"]["/a"]["get"]["responses"]["200"]["x-when"] == "2024-04-31T12:50:14+00:00"
    # Swagger 2.0 is converted (test_openapi_realkeys.py checks the refusal without a converter)
    doc, warnings = load(CORPUS / "slack-web-api.json", validate=False)
    assert doc["openapi"].startswith("3.0") and any("converted" in w for w in warnings)


async def _verify_all(envs: list[Any]) -> dict[str, Any]:
    runner = process.ProcessRunner()
    out: dict[str, Any] = {}
    try:
        for env in envs:
            for attempt in range(3):
                try:
                    out[env.id] = await Probe().verify(env, RunnerContext(runner, component="probe"))
                    break
                except process.SandboxError as exc:
                    if attempt == 2:
                        out[env.id] = exc
    finally:
        await runner.aclose()
    return out


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Every spec of the corpus synthesized and verified once: (envs, refusals, reports) by env id / file."""
    envs, refused = {}, {}
    for s in SOURCES:
        try:
            env, _warnings = synthesize_file(CORPUS / s["file"], settings=OpenAPISettings(validate=False))
        except SpecError as exc:  # a refusal is an answer; any other exception fails the test
            refused[s["file"]] = str(exc)
            continue
        envs[env.id] = env
    return envs, refused, asyncio.run(_verify_all(list(envs.values())))


def test_real_specs_synthesize_and_verify_without_a_traceback(corpus: tuple[dict[str, Any], dict[str, str], dict[str, Any]]) -> None:
    envs, refused, reports = corpus
    for env in envs.values():
        assert env.tools and len(env.tools) <= OpenAPISettings().max_tools, env.id
    # the two Swagger 2.0 specs are converted (swagger2openapi); a refusal says why the spec gives
    # no useful environment: no list operation to discover ids with
    assert not {"slack-web-api.json", "netlify-api.yaml"} & set(refused), refused
    assert all("no list operation" in why for why in refused.values()), refused
    assert len(refused) <= 2, refused
    unloadable = {k: str(v) for k, v in reports.items() if isinstance(v, Exception)}
    assert not unloadable, unloadable
    kept = sorted(k for k, r in reports.items() if r.kept)
    assert len(kept) >= KEPT_FLOOR, (kept, {k: r.tools_dropped for k, r in reports.items() if not r.kept})


def test_real_shapes_are_kept(corpus: tuple[dict[str, Any], dict[str, str], dict[str, Any]]) -> None:
    envs, _refused, reports = corpus
    ops = {eid: e.behaviour.model["operations"] for eid, e in envs.items()}
    # Twilio: creates mint sids that fit ^MG[0-9a-fA-F]{32}$ and friends, and pages are walked by index
    creates = [n for n, o in ops["twilio-messaging-v1"].items() if o["kind"] == "create" and n != "create_channel_sender"]
    assert len(creates) >= 5 and set(creates) <= set(reports["twilio-messaging-v1"].tools_kept), reports["twilio-messaging-v1"].tools_dropped
    # Stripe: lists answer {object: "list", data, has_more, url}; {customer}-style keys get customer ids
    stripe = reports["stripe-api-2020-10"]
    lists = [n for n, o in ops["stripe-api-2020-10"].items() if o["kind"] == "list" and (o.get("output") or {}).get("constants", {}).get("object") == "list"]
    assert len(set(lists) & set(stripe.tools_kept)) >= 5 and stripe.kept, stripe.tools_dropped
    assert "get_invoices_invoice" in stripe.tools_kept, stripe.tools_dropped  # {invoice}: no _id in its name
    # Swagger 2.0, converted: Slack's RPC methods and Netlify's REST paths
    for eid in ("slack-web-api", "netlify-api"):
        assert reports[eid].kept and len(reports[eid].tools_kept) >= 20, (eid, reports[eid].tools_dropped)
    # SCIM: the Resources array beside the schemas array; Amadeus: hotelId keeps its own pattern
    assert reports["pagerduty-scim"].kept and reports["amadeus-hotel-list"].kept
