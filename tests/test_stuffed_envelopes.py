"""The ``answer_stuffed`` mutant over real APIs' list envelopes (``{"data": [...]}``,
``{"collection": [...], "pagination": {...}}``, ``{"items": [...], "next": ...}``).

The environments are synthesized from real specs of the repo's corpus
(``plugins/openapi/corpus-real``: Resend, Calendly, Spotify) and their list tools are called in real
process sandboxes, so the envelopes are the ones those specs declare, not hand-made dicts. Before
``result_rows``, a stuffed answer saw no rows in such a result and the mutant did not apply (nor did
the sampler's ``imprecise_answer`` drop), so a read-only task over a wrapped list went ungated for
stuffing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from envkernel_baselines.mutants import mutate
from envkernel_chains import Chains, ChainsSettings
from envkernel_kit.answers import answer_score, result_rows, stuffed_answer
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import synthesize_file
from envkernel_schemas import EnvSpec, Task

process = pytest.importorskip("envkernel_process")
pytestmark = pytest.mark.timeout(300)

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
SPECS = {
    "resend-api.yaml": "data",
    "calendly-api.yaml": "collection",
    "spotify-web-api.yaml": "items",
}
"""Spec -> the member its list operations wrap rows in."""


async def _listed(env: EnvSpec, runner: Any) -> list[tuple[str, Any]]:
    """(tool, result) of every read tool that needs no input, called once in a real sandbox."""
    sb = await runner.open(env, 0)
    try:
        out = []
        for tool in env.tools:
            if tool.mutates or tool.parameters.get("required"):
                continue
            res = await sb.call(tool.name, {})
            if res.ok:
                out.append((tool.name, res.value))
        return out
    finally:
        await sb.close()


async def _sample(env: EnvSpec, runner: Any, tmp: Path) -> list[Task]:
    ctx = RunnerContext(runner, component="chains", out_dir=tmp)
    s = ChainsSettings(
        tasks_per_env=60,
        distractor_share=0.0,
        write_graph=False,
        list_target_weight=12.0,
        batch_share=0.0,
    )
    return [t async for t in Chains(s).sample(env, ctx)]


@pytest.fixture(scope="module")
def real(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[list[tuple[str, Any]], list[Task]]]:
    async def go() -> dict[str, tuple[list[tuple[str, Any]], list[Task]]]:
        runner = process.ProcessRunner()
        got = {}
        try:
            for name in SPECS:
                env = synthesize_file(CORPUS / name)[0]
                tasks = (
                    await _sample(env, runner, tmp_path_factory.mktemp(name.split(".")[0]))
                    if name == "resend-api.yaml"
                    else []
                )
                got[name] = (await _listed(env, runner), tasks)
        finally:
            await runner.aclose()
        return got

    return asyncio.run(go())


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_the_rows_of_a_real_list_envelope_are_seen(real: Any, spec: str) -> None:
    listed, _ = real[spec]
    wrapped = [
        (n, v)
        for n, v in listed
        if isinstance(v, dict) and isinstance(v.get(SPECS[spec]), list) and len(v[SPECS[spec]]) >= 2
    ]
    assert len(wrapped) >= 2, [n for n, _ in listed]
    for name, value in wrapped:
        rows = result_rows(value)
        assert rows == value[SPECS[spec]], name  # the wrapped rows, not the envelope, nor nothing
        one = rows[0]
        assert result_rows(one) == [], (
            name
        )  # a row (it has an id) is not an envelope, even with lists inside
        stuffed = stuffed_answer("The answer.", [value, one], absent=[])
        assert stuffed is not None, name
        assert all(str(r.get("id", "")) in stuffed for r in rows), name


def test_stuffing_a_wrapped_lookup_is_caught_by_the_precision_check(real: Any) -> None:
    """Read-only tasks sampled over Resend (every list is ``{"data": [...]}``): the stuffed mutant
    applies to those whose lookups listed rows, and none of them scores 1."""
    _, tasks = real["resend-api.yaml"]
    reads = [t for t in tasks if not t.outcome.mutates]
    applied = 0
    for t in reads:
        wrapped = any(isinstance(o, dict) and len(result_rows(o)) >= 2 for o in t.outputs[:-1]) or (
            t.outcome.answer_absent
            and isinstance(t.outputs[-1], dict)
            and len(result_rows(t.outputs[-1])) >= 2
        )
        m = mutate(t, "answer_stuffed")
        if wrapped:
            assert m is not None, t.request
        if m is not None:
            applied += 1
            assert answer_score(t.outcome, m.answer)[0] < 1.0, (t.request, t.outcome.answer_absent)
    assert applied >= 3, [t.request for t in reads]


ONE_OBJECT = {
    "bluesky-atproto-xrpc.json": (
        "app_bsky_actor_get_profile",
        "com_atproto_repo_describe_repo",
        "com_atproto_server_describe_server",
    ),
    "slack-web-api.json": (),
}
"""Spec -> read tools that answer one object without an ``id`` member (a profile keyed by its
``did``, with its labels)."""
PAGES = {
    "bluesky-atproto-xrpc.json": {
        "app_bsky_graph_get_follows": "follows",
        "app_bsky_feed_get_likes": "likes",
    },
    "slack-web-api.json": {
        "conversations_list": "channels",
        "conversations_members": "members",
        "files_list": "files",
    },
}
"""Spec -> list tools whose envelope holds its rows beside other members (the subject of the list,
``ok``, ``paging``)."""


@pytest.fixture(scope="module")
def objects() -> dict[str, dict[str, Any]]:
    """spec -> tool -> its real result, for the tools of ONE_OBJECT and PAGES, called in real
    process sandboxes."""

    async def go() -> dict[str, dict[str, Any]]:
        runner = process.ProcessRunner()
        try:
            return {
                name: dict(await _listed(synthesize_file(CORPUS / name)[0], runner))
                for name in sorted(ONE_OBJECT.keys() | PAGES.keys())
            }
        finally:
            await runner.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("spec", sorted(ONE_OBJECT.keys() | PAGES.keys()))
def test_one_object_without_an_id_is_not_an_envelope(objects: Any, spec: str) -> None:
    from envkernel_kit.answers import envelope_key

    for tool in ONE_OBJECT[spec]:
        value = objects[spec][tool]
        assert isinstance(value, dict) and not any(k in value for k in ("id", "uuid")), (
            tool,
            value,
        )
        assert any(isinstance(v, (list, dict)) and v for v in value.values()), (
            tool,
            value,
        )  # it holds parts that a careless reading takes for rows
        assert envelope_key(value) is None and result_rows(value) == [], (tool, sorted(value))
        assert stuffed_answer("The answer.", [value, {"x": 1}], absent=[]) is None, (
            tool
        )  # nothing to stuff: one object
    for tool, member in PAGES[spec].items():
        value = objects[spec][tool]
        assert (
            envelope_key(value) == member
            and result_rows(value) == value[member]
            and len(value[member]) >= 2
        ), (tool, sorted(value))


def test_an_empty_named_list_is_an_empty_page() -> None:
    """A JSON:API compound document (jsonapi.org) with no primary rows: ``data`` is the page,
    ``included`` its related objects."""
    from envkernel_kit.answers import envelope_key

    page = {
        "data": [],
        "included": [
            {"type": "people", "attributes": {"name": "Dan"}},
            {"type": "people", "attributes": {"name": "Ann"}},
        ],
        "links": {"self": "/articles?page=2"},
    }
    assert envelope_key(page) == "data" and result_rows(page) == []
    assert stuffed_answer("None.", [page, {}], absent=[]) is None
    two = {
        "users": [],
        "groups": [{"name": "ops"}, {"name": "dev"}],
        "has_more": False,
    }  # two lists, neither named: not a page of either
    assert envelope_key(two) is None and result_rows(two) == []
