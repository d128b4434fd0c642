"""The aggregate, superlative, comparison and condition questions of the ``chains`` sampler
(counts over a threshold or a status, the top value, an average, a total or a winner among the
rows in a status, the difference between two named rows), sampled from the shipped corpus in real
process sandboxes and gated the way the kernel's gate does it: the reference scores 1, do-nothing
0, and every applicable near-miss mutant (``envkernel_baselines.mutants``) below 1. Each answer is
checked whole and for precision: an answer with its fact left out, and one stuffed with every row
the lookups returned, score below 1.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel.context import RecordingToolEnv
from envkernel_baselines import MUTANT_KINDS, Mutant, Nothing, Reference
from envkernel_chains import Chains, ChainsSettings
from envkernel_chains import phrasing as ph
from envkernel_kit.answers import answer_score
from envkernel_kit.messages import compact
from envkernel_kit.testing import FakeContext, RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_schemas import RolloutRequested, Task
from envkernel_traceoutcome import TraceOutcome

process = pytest.importorskip("envkernel_process")

ENVS = ("bank", "travel", "clinic", "shop")
"""Sampled in this order, each asked only the shapes not yet found twice (the rarest come last)."""
SHAPES = {
    "count_if": ph.COUNT_IF_Q,
    "count_which": ph.COUNT_WHICH_Q,
    "total_which": ph.TOTAL_WHICH_Q,
    "superlative_which": ph.SUP_WHICH_Q,
    "average": ph.AVG_Q,
    "top_value": ph.TOP_VALUE_Q,
    "difference": ph.DIFF_Q,
}
"""Each new question shape, by its frames."""


def _pattern(frames: tuple[str, ...]) -> re.Pattern[str]:
    parts = []
    for f in frames:
        out, pos = "", 0
        for m in re.finditer(r"\{\w+\}", f):
            out += re.escape(f[pos : m.start()]) + ".+?"
            pos = m.end()
        parts.append(out + re.escape(f[pos:]) + "$")
    return re.compile("|".join(f"(?:{p})" for p in parts))


PATTERNS = {k: _pattern(v) for k, v in SHAPES.items()}


def _rows_of(out: Any) -> list[Any]:
    """The rows of a list result, or of the lists in a result object
    (``{"items": [...], "page": 1}``)."""
    if isinstance(out, list):
        return out
    if isinstance(out, dict):
        return [r for v in out.values() if isinstance(v, list) for r in v]
    return []


def shape_of(task: Task) -> str | None:
    """The new question shape a read-only task's request is in (None: another one)."""
    if task.outcome.mutates:
        return None
    for k, pat in PATTERNS.items():
        if pat.search(task.request):
            return k
    return None


async def _sample_and_gate(
    out: Path,
) -> tuple[dict[str, list[Task]], dict[str, list[tuple[Task, list[float], list[str]]]]]:
    runner = process.ProcessRunner()
    files = {f.stem: f for f in corpus_files()}
    envs = {name: synthesize_file(files[name])[0] for name in ENVS}
    by_shape: dict[str, list[Task]] = {k: [] for k in SHAPES}
    gated: dict[str, list[tuple[Task, list[float], list[str]]]] = {k: [] for k in SHAPES}
    reward = TraceOutcome()
    try:
        for env in envs.values():
            wanted = sorted(k for k, v in by_shape.items() if len(v) < 2)
            if not wanted:
                break
            settings = ChainsSettings(
                tasks_per_env=50,
                list_target_weight=30.0,
                batch_share=0.0,
                distractor_share=0.0,
                question_shapes=wanted,
            )
            ctx = RunnerContext(runner, component="chains", out_dir=out)
            async for t in Chains(settings).sample(env, ctx):
                k = shape_of(t)
                if k is not None and len(by_shape[k]) < 3:
                    by_shape[k].append(t)
            sb = await runner.open(env, 0)
            seed = await sb.snapshot()
            try:
                for k, tasks in by_shape.items():
                    for t in tasks:
                        if t.env_id != env.id:
                            continue
                        scores, kinds = [], []
                        for i in range(
                            2 + len(MUTANT_KINDS)
                        ):  # the gate's rollouts: reference, nothing, then one mutant each
                            policy = (Reference(), Nothing())[i] if i < 2 else Mutant()
                            await sb.restore(seed)
                            tool_env = RecordingToolEnv(sb, env.tools)
                            req = RolloutRequested(
                                run="r",
                                id=f"{t.id}/{i}",
                                parent="p",
                                iteration=0,
                                time=0.0,
                                task=t,
                                policy=("reference", "nothing", "mutant")[min(i, 2)],
                                index=i,
                                purpose="gate",
                            )
                            traj = await policy.rollout(req, tool_env, None)
                            traj = msgspec.structs.replace(
                                traj, calls=tool_env.records, final_state=await sb.state()
                            )
                            scores.append(
                                reward.score(t, traj, FakeContext(component="traceoutcome")).score
                            )
                            kinds.append(traj.termination)
                        gated[k].append((t, scores, kinds))
            finally:
                await sb.close()
    finally:
        await runner.aclose()
    return by_shape, gated


@pytest.fixture(scope="module")
def shapes(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, list[Task]], dict[str, list[tuple[Task, list[float], list[str]]]]]:
    return asyncio.run(_sample_and_gate(tmp_path_factory.mktemp("shapes")))


def test_every_new_shape_is_sampled_from_the_real_data(shapes: Any) -> None:
    by_shape, _ = shapes
    assert {k: len(v) for k, v in by_shape.items() if not v} == {}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_gate_passes_the_reference_and_kills_every_applicable_mutant(
    shapes: Any, shape: str
) -> None:
    _, gated = shapes
    assert gated[shape]
    passed = []
    for t, scores, kinds in gated[shape]:
        assert scores[0] == 1.0 and scores[1] == 0.0, (t.request, scores)
        applied = [
            (k, s) for k, s in zip(kinds[2:], scores[2:], strict=True) if k.startswith("mutant:")
        ]
        assert applied, (t.request, kinds)  # at least the last call dropped and the answer cut
        # the outcome alone (τ 0) must tell each near miss from the reference, or the gate rejects
        # the task (mutant_survived): a changed filter whose rows hold the asked ones, answered
        # right, is another correct path, not a near miss the check can see
        passed.append(all(s < 1.0 for _k, s in applied))
        cut = [s for k, s in applied if k in ("mutant:answer_missing", "mutant:drop_last")]
        assert all(s < 1.0 for s in cut), (t.request, applied)
    assert any(passed), (shape, [(t.request, k) for t, _s, k in gated[shape]])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_answer_check_rejects_an_incomplete_and_a_stuffed_answer(
    shapes: Any, shape: str
) -> None:
    by_shape, _ = shapes
    for t in by_shape[shape]:
        o = t.outcome
        assert answer_score(o, o.answer)[0] == 1.0, (t.request, o.answer)
        # a precision guard, unless the shape has none or the question names every row the lookup
        # gave (two rows, both compared)
        assert o.answer_facts and (
            o.answer_absent
            or shape in ("average", "top_value", "count_if", "count_which")
            or shape == "difference"
            and sum(len(_rows_of(out)) for out in t.outputs) == 2
        ), t.request
        # incomplete: the fact (a number, or the winner) left out
        missing = o.answer
        for fact in o.answer_facts:
            missing = re.sub(re.escape(fact), "", missing, flags=re.I)
        assert answer_score(o, missing)[0] < 1.0, (t.request, missing)
        # stuffed: every row of every lookup said too (a page's items as well)
        rows = [r for out in t.outputs for r in _rows_of(out)]
        stuffed = f"{o.answer} Everything I found: {compact(rows)}"
        if o.answer_absent:
            assert answer_score(o, stuffed)[0] == 0.0, (t.request, o.answer_absent)


def test_a_request_in_a_new_shape_reads_like_a_person_asking(shapes: Any) -> None:
    by_shape, _ = shapes
    for tasks in by_shape.values():
        for t in tasks:
            assert not re.search(r"\b[a-z]+_[a-z]+\b", t.request), (
                t.request
            )  # no raw field name or code
            assert not re.search(r"\bof all the\b|\bamong all the\b", t.request), t.request
            assert t.request.endswith(("?", ".")), t.request


def test_plain_creates_stay_under_their_share_and_a_read_asks_new_questions_as_a_run_grows(
    tmp_path: Path,
) -> None:
    """Past 50 tasks, a chain that only creates (no row named by a superlative or a threshold) is
    dropped once plain creates would pass ``plain_create_share``; and past 200, the same reads may
    be asked a second question (another shape or field), a task with its own id."""
    import json

    async def go() -> list[Task]:
        runner = process.ProcessRunner()
        env = next(synthesize_file(f)[0] for f in corpus_files() if f.stem == "bank")
        try:
            ctx = RunnerContext(runner, component="chains", out_dir=tmp_path)
            s = ChainsSettings(
                tasks_per_env=260,
                plain_create_share=0.3,
                distractor_share=0.0,
                write_graph=False,
                questions_per_chain=8,
            )
            return [t async for t in Chains(s).sample(env, ctx)]
        finally:
            await runner.aclose()

    tasks = asyncio.run(go())
    stats = json.loads((tmp_path / "envs" / "bank" / "sampling.json").read_text())["chains"]
    assert len(tasks) == 260 and stats["rejected"].get("plain_create_quota", 0) > 0
    superlative = re.compile(
        r"\b(highest|lowest|most|fewest|latest|earliest|created most recently|created "
        r"earliest|at least|at most|more than|fewer than|on or (?:before|after))\b"
    )
    plain = [
        t
        for t in tasks
        if t.outcome.mutates
        and any(c.name.startswith(("create", "add", "open")) for c in t.calls)
        and not superlative.search(t.request)
    ]
    assert len(plain) <= 0.3 * len(tasks) + 1, len(plain)
    reads: dict[str, list[Task]] = {}
    for t in tasks:
        if not t.outcome.mutates and not t.outcome.expects:  # a read (not a refusal: no call)
            reads.setdefault(
                json.dumps([[c.name, c.arguments] for c in t.calls], sort_keys=True), []
            ).append(t)
    again = [ts for ts in reads.values() if len(ts) >= 2]
    assert again and all(
        len({t.id for t in ts}) == len(ts) and len({t.request for t in ts}) == len(ts)
        for ts in again
    )
    assert all(
        ts[0].outcome.answer_facts != ts[1].outcome.answer_facts
        or ts[0].outcome.answer_rows != ts[1].outcome.answer_rows
        or ts[0].outcome.answer_absent != ts[1].outcome.answer_absent
        for ts in again
    )
