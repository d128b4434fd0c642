"""The verifier checks tool answers and seed rows against the spec's schemas with jsonschema:
a tool whose answers break its declared ``returns`` is dropped with the reason, and so is the get
tool of a resource whose seed rows break it (issue 13, point 3)."""

from __future__ import annotations

import copy

import msgspec

from envkernel_openapi import corpus_dir, synthesize_file
from envkernel_probe.conformance import ResultSchemas, seed_problems
from envkernel_schemas import ModelBehaviour


def test_answer_breaking_its_schema_drops_the_tool(probe_verify) -> None:  # type: ignore[no-untyped-def]
    env, _ = synthesize_file(corpus_dir() / "shop.yaml")
    # a constraint the engine's own subset check does not know, so only jsonschema sees the breach
    tools = [
        msgspec.structs.replace(t, returns={**t.returns, "minProperties": 40})
        if t.name == "get_product"
        else t
        for t in env.tools
    ]
    report = probe_verify(msgspec.structs.replace(env, tools=tools))
    assert (
        "get_product" in report.tools_dropped
        and "does not match its declared schema" in report.tools_dropped["get_product"]
    )
    assert "does not have enough properties" in report.tools_dropped["get_product"]
    assert report.kept  # one tool of many


def test_seed_row_breaking_the_spec_drops_its_get_tool() -> None:
    env, _ = synthesize_file(corpus_dir() / "shop.yaml")
    model = copy.deepcopy(env.behaviour.model)
    model["seed"]["products"][2]["category"] = "garden"  # not one of the spec's enum values
    bad = msgspec.structs.replace(env, behaviour=ModelBehaviour(model=model))
    problems = seed_problems(bad, ResultSchemas(bad.tools))
    assert list(problems) == ["get_product"] and "garden" in problems["get_product"]
    assert seed_problems(env, ResultSchemas(env.tools)) == {}


def test_invalid_returns_schema_is_reported() -> None:
    env, _ = synthesize_file(corpus_dir() / "shop.yaml")
    tool = msgspec.structs.replace(env.tools[0], returns={"type": 5})
    assert "not valid JSON Schema" in ResultSchemas([tool]).problem(tool.name, {})
