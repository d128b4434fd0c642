"""The reference's final answers to chains that change state read as a person's report (issue 30,
item 8): they say what the changes did from the rows the calls returned, never echo the request,
and show the row a request asks to see (never ``Here it is now.`` alone).

Tasks are sampled the fast way (the sampler over real process sandboxes, no bus or gate).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from envkernel_chains import Chains, ChainsSettings
from envkernel_chains.refs import field_words
from envkernel_kit.answers import result_rows
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_process import ProcessRunner
from envkernel_schemas import Task

PER_ENV = 30


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    """Tasks sampled by ``chains`` over every shipped environment."""
    out: Path = tmp_path_factory.mktemp("answers")

    async def go() -> list[Task]:
        runner = ProcessRunner()
        got: list[Task] = []
        try:
            for f in corpus_files():
                env = synthesize_file(f)[0]
                ctx = RunnerContext(runner, component="chains", out_dir=out)
                got += [
                    t async for t in Chains(ChainsSettings(tasks_per_env=PER_ENV)).sample(env, ctx)
                ]
        finally:
            await runner.aclose()
        return got

    return asyncio.run(go())


def _words(text: str, values: set[str]) -> list[str]:
    return [w for w in re.findall(r"[\w@.'-]+", text.lower()) if w not in values]


def echoes(answer: str, task: Task, n: int = 5) -> bool:
    """True when ``answer`` repeats ``n`` consecutive words of the request, the words of the
    fields and values of the calls and their rows (which a report states as facts) left out."""
    said = [str(v) for c in task.calls for v in c.arguments.values()]
    for out in task.outputs:
        for r in result_rows(out) or ([out] if isinstance(out, dict) else []):
            said += [field_words(k) + " " + str(v) for k, v in r.items()]
    values = {w for x in said for w in re.findall(r"[\w@.'-]+", x.lower())}
    req = _words(task.request, values)
    grams = {tuple(req[i : i + n]) for i in range(len(req) - n + 1)}
    ans = _words(answer, values)
    return any(tuple(ans[i : i + n]) in grams for i in range(len(ans) - n + 1))


def test_change_answers_report_without_echo(tasks: list[Task]) -> None:
    writes = [t for t in tasks if t.outcome.mutates]
    assert len(writes) >= 40
    assert not [t.outcome.answer for t in writes if "Here it is now" in t.outcome.answer]
    echoed = [
        (t.request, t.outcome.answer)
        for t in writes
        if not t.outcome.answer.startswith("Done: I ") and echoes(t.outcome.answer, t)
    ]
    assert not echoed, [a for _, a in echoed[:3]]
    reported = [t for t in writes if not t.outcome.answer.startswith("Done: I ")]
    assert len(reported) >= 0.7 * len(writes)
    # a created row's id, which the request could not know, is in the answer
    created = [t for t in reported if t.outcome.answer.startswith("I created the ")]
    assert created and all(re.search(r"\(\w+\)", t.outcome.answer) for t in created)


def test_a_row_to_see_is_shown(tasks: list[Task]) -> None:
    """A change followed by a read ("... and show me the booking"): the read shows what the change
    did not already return (a read of the row the change returned adds nothing, and the gate's
    ``drop_last`` mutant would pass it), and the answer carries values of the row the read
    returned that the request did not say."""
    changes = [t for t in tasks if t.outcome.mutates and t.outputs]
    assert changes
    shown = [t for t in changes if t.calls[-1].name.startswith(("get_", "list_"))]
    for t in shown:
        returned = [o for c, o in zip(t.calls[:-1], t.outputs[:-1], strict=True) if o]
        assert t.outputs[-1] not in returned[-1:], (t.request, t.signature)
    for t in shown:
        rows = result_rows(t.outputs[-1]) or [t.outputs[-1]]
        values = {
            str(v)
            for r in rows
            if isinstance(r, dict)
            for k, v in r.items()
            if isinstance(v, (str, int)) and not isinstance(v, bool) and k != "id"
        }
        new = [v for v in values if len(v) > 2 and v not in t.request]
        assert not new or any(v in t.outcome.answer for v in new), (t.request, t.outcome.answer)


def test_an_id_no_tool_is_about_is_given_and_the_rest_chain() -> None:
    """Ably's calls all take an ``account_id`` no tool returns: only that id is given literally,
    so the app a key belongs to is looked up (its keys are one lookup deep), not given too."""
    from envkernel_chains.graph import build_graph
    from envkernel_kit.tools import schema_of, tool_infos

    spec = Path(__file__).parents[2] / "openapi" / "corpus-real-2" / "ably-control-v1.yaml"
    env = synthesize_file(spec)[0]
    schema = schema_of(env, {})
    g = build_graph(tool_infos(env, schema), schema)
    literal = set(g.graph["literal_needs"])
    assert "list_account_apps.account_id" in literal
    assert "list_app_keys.app_id" not in literal
    assert g.nodes["list_account_apps"]["depth"] == 0
    assert g.nodes["list_app_keys"]["depth"] == 1
    assert "apps" in g.graph["lookupable"]
