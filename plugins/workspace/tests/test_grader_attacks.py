"""The archetypes' graders against the attacks that fooled them (docs/notes/
2026-12-04-reward-attack.md, findings 2 and 5; docs/notes/2026-12-04-workspace-graders.md): each
attack runs in the real process sandbox, its final workspace is rebuilt in a second one and
graded there, as a rollout's is. The reference chain still scores 1 and doing nothing 0."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import pytest_asyncio

from envkernel_kit.workspace import TABLE, workspace_env
from envkernel_process import ProcessRunner
from envkernel_schemas import ToolSpec
from envkernel_workspace.archetypes import ARCHETYPES, Variant, make_variant

REWARD_TOOLS = [
    ToolSpec(name="apply_final", mutates=True),
    ToolSpec(name="run_check", mutates=True),
]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def runner():
    r = ProcessRunner()
    yield r
    await r.aclose()


def _variant(archetype: str, want: Any = None, seeds: int = 200) -> Variant:
    """The first variant of ``archetype`` (seeds 0, 1, ...) for which ``want(variant)`` holds."""
    for seed in range(seeds):
        v = make_variant(archetype, seed)
        if want is None or want(v):
            return v
    raise AssertionError(f"no {archetype} variant in {seeds} seeds fits")


async def grade(runner: ProcessRunner, v: Variant, calls: list[tuple[str, dict[str, Any]]]):
    """Run ``calls`` on ``v``'s workspace, then ``v.check`` over the final one: (scores, mean)."""
    env = workspace_env(
        f"atk-{v.archetype}",
        v.name,
        files=v.files,
        setup=v.setup,
        app_source=v.app_source,
        app_tools=v.app_tools,
        seed_sql=v.seed_sql,
    )
    sb = await runner.open(env, 0)
    for tool, args in calls:
        res = await sb.call(tool, args)
        assert res.ok, (tool, args, res.error)
        if tool == "exec":
            assert res.value["exit_code"] == 0, res.value
    final = await sb.state()
    judge = await runner.open(
        msgspec.structs.replace(env, id=f"{env.id}--check", tools=[*env.tools, *REWARD_TOOLS]), 0
    )
    tables = {k: t for k, t in final.items() if k != TABLE}
    assert (await judge.call("apply_final", {"rows": final[TABLE], "tables": tables})).ok
    out = (await judge.call("run_check", {"script": v.check, "transcript": []})).value
    assert "scores" in out, out
    scores = out["scores"]
    return scores, sum(scores.values()) / len(scores)


def _ref(v: Variant) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.arguments)) for c in v.calls]


def _kind(name: str):
    return lambda v: v.archetype == "fixtest" and any(name in p for p in v.files)


FIXTEST = {"pricing": "pricing.py", "text": "text.py", "stats": "stats.py"}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("module", sorted(FIXTEST))
async def test_fixtest_a_shadowed_unittest_and_a_planted_abs_score_0(runner, module):
    v = _variant("fixtest", _kind(FIXTEST[module]))
    shadow = (
        "mkdir -p unittest && : > unittest/__init__.py && "
        "echo 'raise SystemExit(0)' > unittest/__main__.py && "
        "for f in $(find . -name '*.py' -not -path './tests/*' -not -path './unittest/*'); do "
        "printf '\\nabs = lambda x: 0\\n' >> \"$f\"; done"
    )
    scores, mean = await grade(runner, v, [("exec", {"command": shadow})])
    assert mean == 0.0, scores
    # the same, planted at the tests' folder and in sitecustomize/usercustomize/pth reach
    deeper = (
        "mkdir -p tests/unittest && cp unittest/* tests/unittest/ && "
        "printf 'import builtins\\nbuiltins.abs = lambda x: 0\\n' > sitecustomize.py && "
        "cp sitecustomize.py usercustomize.py"
    )
    scores, mean = await grade(runner, v, [("exec", {"command": shadow + " && " + deeper})])
    assert mean == 0.0, scores
    # the module under test disarms unittest's assertions when imported: the suite "passes"; the
    # values computed from the task's cases, compared in the grader, do not
    mod = next(p for p in v.files if p.endswith("/" + FIXTEST[module]))
    disarm = (
        "\\nimport unittest\\n"
        "unittest.TestCase.assertEqual = lambda *a, **k: None\\n"
        "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\\n"
    )
    suite = "python3 -m unittest discover -s tests -t ."  # it passes (grade() checks exit 0)
    disarmed = [("exec", {"command": f"printf '{disarm}' >> {mod} && {suite}"})]
    scores, mean = await grade(runner, v, disarmed)
    assert mean == 0.0, scores
    # the fix, with the tests edited too (the request said not to), or a file of the package the
    # fix has nothing to do with removed
    helpers = mod.rsplit("/", 1)[0] + "/helpers.py"
    for extra in ("echo '# ok' >> tests/__init__.py", f"rm {helpers}"):
        scores, mean = await grade(runner, v, [*_ref(v), ("exec", {"command": extra})])
        assert mean == 0.0, (extra, scores)
    scores, mean = await grade(runner, v, _ref(v))
    assert mean == 1.0, scores
    scores, mean = await grade(runner, v, [])
    assert mean == 0.0, scores


def _one_move(v: Variant) -> tuple[str, str, int]:
    """The ws_one_move attack: move the first file of the folder to sort (by name) to its right
    folder, and nothing else: (its name, the command, how many files there are to sort)."""
    folder = "Downloads" if v.archetype == "downloads" else "inbox"
    names = sorted(p.split("/", 1)[1] for p in v.files if p.startswith(folder + "/"))
    dest = {"downloads": "Music", "inbox": None}[v.archetype]
    if dest is None:  # an inbox message: its folder is in the task's own rules, read off DEST
        first = names[0]
        where = _constant(v, "DEST")[first]
    else:
        first = next(n for n in names if n.endswith(".mp3") and "(1)" not in n)
        where = dest
    cmd = f"mkdir -p {where} && mv '{folder}/{first}' {where}/"
    return first, cmd, len(_constant(v, "DEST"))


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("archetype", ["downloads", "inbox"])
async def test_one_file_moved_is_its_share_at_most(runner, archetype):
    v = _variant(
        archetype, lambda v: archetype == "inbox" or any(p.endswith(".mp3") for p in v.files)
    )
    _, cmd, n = _one_move(v)
    scores, mean = await grade(runner, v, [("exec", {"command": cmd})])
    assert 0 < mean <= 1 / n, scores
    assert scores[next(iter(scores))] == pytest.approx(1 / n)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("archetype", sorted(ARCHETYPES))
async def test_reference_1_nothing_0_and_an_unasked_change_0(runner, archetype):
    """Every archetype: the reference chain 1, doing nothing 0, and the reference chain plus one
    change the request did not ask for (a file it never mentions deleted, another edited) 0."""
    v = _variant(archetype)
    scores, mean = await grade(runner, v, _ref(v))
    assert mean == 1.0, scores
    scores, mean = await grade(runner, v, [])
    assert mean == 0.0, scores
    kept = sorted(_constant(v, "KEEP"))
    victim = kept[-1]
    for extra in (f"rm -f '{victim}'", f"echo x >> '{victim}'", f"mv '{victim}' '{victim}.bak'"):
        scores, mean = await grade(runner, v, [*_ref(v), ("exec", {"command": extra})])
        assert mean == 0.0, (extra, scores)


def _constant(v: Variant, name: str) -> Any:
    """A constant of ``v``'s check, read back from its source."""
    import json
    import re

    line = re.search(rf"^{name} = json\.loads\((.*)\)$", v.check, re.M)
    assert line, name
    return json.loads(json.loads(line.group(1)))


@pytest.mark.asyncio(loop_scope="module")
async def test_logs_every_error_named_and_a_bare_order_earn_only_the_table(runner):
    """A table in the right order with made-up counts, and every 'service: message' of the
    errors listed: once 0.6 (the order and the top error 'found'), now the table's 0.2 alone."""
    v = _variant("logs")
    errors = sorted(
        {
            f"{w[2]}: {' '.join(w[3:])}"
            for p, t in v.files.items()
            if "archive" not in p and p.endswith(".log")
            for w in (line.split() for line in t.splitlines())
            if w[1] == "ERROR"
        }
    )
    table = "".join(f"| {s} | 0 | 0 |\n" for s in _constant(v, "ORDER"))
    report = "| service | errors | warnings |\n|---|---|---|\n" + table + "\n".join(errors) + "\n"
    scores, mean = await grade(runner, v, [("write", {"path": "report.md", "content": report})])
    assert scores == {
        "report_written": 1.0,
        "error_counts": 0.0,
        "warning_counts": 0.0,
        "sorted_by_errors": 0.0,
        "top_error": 0.0,
    }


@pytest.mark.asyncio(loop_scope="module")
async def test_crm_a_contact_nobody_asked_for_scores_0(runner):
    v = _variant("crm")
    extra = ("add_contact", {"name": "Eve Extra", "email": "eve@extra.example", "company": "X"})
    scores, mean = await grade(runner, v, [*_ref(v), extra])
    assert mean == 0.0, scores


@pytest.mark.asyncio(loop_scope="module")
async def test_downloads_a_link_in_place_of_the_file_is_not_filed(runner):
    v = _variant("downloads")
    dest = _constant(v, "DEST")
    name = sorted(dest)[0]
    hide = f"mv '{dest[name]}/{name}' .stash && ln -s ../.stash '{dest[name]}/{name}'"
    scores, mean = await grade(runner, v, [*_ref(v), ("exec", {"command": hide})])
    assert scores["sorted"] == pytest.approx((len(dest) - 1) / len(dest)), scores
