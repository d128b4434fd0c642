"""A read question answered by listing the whole table unfiltered scores 0 (the default reward).

Found by an outside attack (``docs/notes/2026-12-04-reward-attack.md``): on "Please go through all
the silver travelers and tell me the email of each" the reference calls
``list_travelers(loyalty_tier=silver)``, which returns only the silver travelers, so no output of
the chain holds the rows a precise answer leaves out. An agent that called ``list_travelers({})``
and wrote out every traveler scored 1.0. The rows left out now come from the environment's start
(``envkernel_chains.precision``). Sampled from the shipped corpus in real process sandboxes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel.context import RecordingToolEnv
from envkernel_baselines import Reference
from envkernel_chains import Chains, ChainsSettings
from envkernel_kit.testing import FakeContext, RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_schemas import RolloutRequested, Task, Trajectory
from envkernel_traceoutcome import TraceOutcome

process = pytest.importorskip("envkernel_process")

ENVS = ("travel", "clinic")


def _rows(out: Any) -> list[dict[str, Any]]:
    if isinstance(out, list):
        return [r for r in out if isinstance(r, dict)]
    if isinstance(out, dict):
        return [r for v in out.values() if isinstance(v, list) for r in v if isinstance(r, dict)]
    return []


def _filtered(task: Task) -> bool:
    """A read-only task whose one call is a list narrowed by a literal argument."""
    return (
        not task.outcome.mutates
        and len(task.calls) == 1
        and bool(task.calls[0].arguments)
        and task.calls[0].name.startswith(("list_", "search_"))
    )


async def _score_dumps(out: Path) -> list[tuple[str, float, float]]:
    """(request, reference score, unfiltered-dump score) per filtered read task sampled."""
    runner = process.ProcessRunner()
    files = {f.stem: f for f in corpus_files()}
    reward, found = TraceOutcome(), []
    try:
        for name in ENVS:
            env = synthesize_file(files[name])[0]
            ctx = RunnerContext(runner, component="chains", out_dir=out)
            settings = ChainsSettings(tasks_per_env=40, batch_share=0.0, distractor_share=0.0)
            tasks = [t async for t in Chains(settings).sample(env, ctx) if _filtered(t)]
            sb = await runner.open(env, 0)
            seed = await sb.snapshot()
            try:
                for t in tasks[:4]:
                    req = RolloutRequested(
                        run="r", id=f"{t.id}/0", parent="p", iteration=0, time=0.0, task=t,
                        policy="reference", index=0, purpose="gate",
                    )  # fmt: skip
                    scores = []
                    for dump in (False, True):
                        await sb.restore(seed)
                        tool_env = RecordingToolEnv(sb, env.tools)
                        if dump:
                            res = await tool_env.call(t.calls[0].name, {})
                            rows = _rows(res.value)
                            answer = "; ".join(
                                ", ".join(str(v) for v in r.values() if isinstance(v, (str, int)))
                                for r in rows
                            )
                            traj = Trajectory(
                                task_id=t.id, policy="dump", index=0, final_answer=answer,
                                messages=[{"role": "assistant", "content": answer}],
                                termination="answer",
                            )  # fmt: skip
                        else:
                            traj = await Reference().rollout(req, tool_env, None)
                        traj = msgspec.structs.replace(
                            traj, calls=tool_env.records, final_state=await sb.state()
                        )
                        fake = FakeContext(component="traceoutcome")
                        scores.append(reward.score(t, traj, fake).score)
                    found.append((t.request, scores[0], scores[1]))
            finally:
                await sb.close()
    finally:
        await runner.aclose()
    return found


def test_an_unfiltered_dump_scores_zero_where_the_reference_scores_one(tmp_path: Path) -> None:
    found = asyncio.run(_score_dumps(tmp_path))
    assert len(found) >= 2, found  # the corpus has filtered lists to ask about
    assert all(ref == 1.0 for _r, ref, _d in found), found
    assert all(dump == 0.0 for _r, _ref, dump in found), found
