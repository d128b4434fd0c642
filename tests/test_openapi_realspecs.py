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

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
SOURCES = json.loads((CORPUS / "sources.json").read_text())
KEPT_FLOOR = 17
"""Environments the verifier keeps, of the 36 specs (two are Swagger 2.0 and refused, and three
give no list operation to discover ids with)."""


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
    # Swagger 2.0 is refused with the conversion hint
    with pytest.raises(SpecError, match="convert it to OpenAPI 3"):
        load(CORPUS / "slack-web-api.json")


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


def test_real_specs_synthesize_and_verify_without_a_traceback() -> None:
    envs, refused = [], {}
    for s in SOURCES:
        try:
            env, _warnings = synthesize_file(CORPUS / s["file"], settings=OpenAPISettings(validate=False))
        except SpecError as exc:  # a refusal is an answer; any other exception fails the test
            refused[s["file"]] = str(exc)
            continue
        assert env.tools and len(env.tools) <= OpenAPISettings().max_tools, s["file"]
        envs.append(env)
    assert {"slack-web-api.json", "netlify-api.yaml"} <= set(refused)  # the two Swagger 2.0 specs
    # every other refusal says why the spec gives no useful environment: no list operation to discover ids
    assert all("Swagger" in why or "no list operation" in why for why in refused.values()), refused
    assert len(refused) <= 5, refused
    reports = asyncio.run(_verify_all(envs))
    unloadable = {k: str(v) for k, v in reports.items() if isinstance(v, Exception)}
    assert not unloadable, unloadable
    kept = sorted(k for k, r in reports.items() if r.kept)
    assert len(kept) >= KEPT_FLOOR, (kept, {k: r.tools_dropped for k, r in reports.items() if not r.kept})
