"""Reward benchmark: made-up agent behaviours scored by the project's own reward on a bare run.

1. The tasks: a bare ``envkernel run`` (the shipped corpus, the ``chains`` sampler, the gate) as a
   subprocess, or the run folder given with ``--run``: its ``tasks.jsonl`` and ``envs/*/env.json``.
2. Each behaviour is executed for real: one ``process`` sandbox per environment, restored to its
   seed snapshot (plus the task's planted rows) before each rollout, the calls made through the
   kernel's recording ToolEnv, the final state read from the sandbox, as the kernel does. It is
   scored by the default reward model (``traceoutcome`` with its default settings).

The behaviours (each on the tasks it applies to):

- ``reference``: the reference calls, the reference answer (must be 1.0);
- ``reference_then_destroy`` (read-only tasks), ``write_unrelated_wiped`` (write tasks): the
  reference, then every row of one table deleted with the env's delete tool (or cancelled with its
  cancel tool where it has no delete), a table the task does not change;
- ``shorter_path``: a write task's writes alone (its lookups skipped, the ids known), or a read-only
  task's last lookup alone: the same end state and answer by a shorter path;
- ``no_calls_guess``: no call, the reference answer (on read-only tasks);
- ``reference_done``: the reference calls, the answer ``Done.`` (read-only tasks);
- ``write_state_unchanged``: a write task's lookups only, the reference answer;
- ``reference_raw_dump``: the reference calls, the answer the JSON of every output (read-only);
- ``list_one_short``: a list answer with its last row left out (the gate's ``answer_missing``);
- ``count_json_one_short``: a count question answered by the JSON rows of the last lookup, one
  row left out (the held-back sloppy policy);
- ``policy_nothing`` (refusal and confirmation tasks, ``Outcome.expects``): the do-nothing policy
  (no call, "I can't help with that."), which neither says who may do it nor asks;
- ``policy_complied``: the request's declined calls made anyway, the answer ``Done.``;
- ``mutant:<kind>``: the gate's five near-miss mutants (:mod:`envkernel_baselines.mutants`).

The refusal and confirmation tasks count among the read-only ones (they change nothing); the
behaviours of read-only tasks that need a lookup (``no_calls_guess``, ``reference_done``, the
dumps) skip them. For each: how many tasks, the mean score, the share scoring 1, the max, and the
mean of the outcome term alone. Then the mutants' kill rate by the outcome alone (``outcome < 1``).

    python benchmarks/bench_reward.py [--run RUN_DIR] [--out DIR]

Prints a table; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from envkernel.context import RecordingToolEnv
from envkernel_baselines import NOTHING_ANSWER
from envkernel_baselines.mutants import MUTANT_KINDS, mutate, reference_answer
from envkernel_kit.answers import result_rows
from envkernel_kit.checks import process_runner
from envkernel_kit.testing import FakeContext
from envkernel_runtime.envdir import load_env_dir
from envkernel_schemas import EnvSpec, Task, ToolCall, Trajectory
from envkernel_traceoutcome import TraceOutcome

ENVKERNEL = Path(sys.executable).with_name("envkernel")


def bare_run(out: Path) -> Path:
    """A bare ``envkernel run`` into ``out``; its run folder."""
    subprocess.run(
        [str(ENVKERNEL), "run", "--out", str(out), "--run-id", "bare", "--no-progress"],
        check=True,
        capture_output=True,
    )
    return out / "bare"


def load(run: Path) -> tuple[list[Task], dict[str, EnvSpec]]:
    """The run's emitted tasks and its environments."""
    tasks = [
        msgspec.json.decode(line, type=Task)
        for line in (run / "tasks.jsonl").read_text().splitlines()
        if line.strip()
    ]
    envs = [load_env_dir(p.parent) for p in (run / "envs").glob("*/env.json")]
    return tasks, {e.id: e for e in envs}


def _table_of(tool: str, state: dict[str, Any]) -> str | None:
    noun = tool.split("_", 1)[1] if "_" in tool else tool
    return next((t for t in state if t.rstrip("s") == noun or t == noun + "s"), None)


def destroyers(env: EnvSpec, state: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(tool, id parameter, table) of each delete tool, else each cancel tool, of ``env``."""
    out = []
    for verb in ("delete_", "cancel_"):
        for t in env.tools:
            if not t.name.startswith(verb):
                continue
            table = _table_of(t.name, state)
            req = t.parameters.get("required") or list(t.parameters.get("properties", {}))
            if table and req:
                out.append((t.name, req[0], table))
        if out:
            return out
    return out


Plan = tuple[list[ToolCall], str] | None
"""The calls to make and the final answer; None when the behaviour does not apply."""


def _mutating(env: EnvSpec) -> set[str]:
    return {t.name for t in env.tools if t.mutates}


def _policy_plans(task: Task) -> dict[str, Plan]:
    """A refusal or confirmation task's behaviours: doing nothing, or doing what was asked."""
    return {
        "policy_nothing": ([], NOTHING_ANSWER),
        "policy_complied": (list(task.outcome.declined), "Done."),
    }


def _write_plans(task: Task, answer: str, writes: set[str]) -> dict[str, Plan]:
    """A write task's behaviours: its writes alone, its lookups alone."""
    ref = list(task.calls)
    lone = [c for c in ref if c.name in writes]
    return {
        "shorter_path": (lone, answer) if 0 < len(lone) < len(ref) else None,
        "write_state_unchanged": ([c for c in ref if c.name not in writes], answer),
    }


def _read_plans(task: Task, answer: str) -> dict[str, Plan]:
    """A read-only task's behaviours: a shorter path, a guess, "Done.", dumps, one row short."""
    ref, o = list(task.calls), task.outcome
    out: dict[str, Plan] = {
        "shorter_path": ([ref[-1]], answer) if len(ref) > 1 else None,
        "no_calls_guess": ([], answer),
        "reference_done": (ref, "Done."),
        "reference_raw_dump": (ref, json.dumps(task.outputs, ensure_ascii=False)),
    }
    if len(o.answer_rows) >= 2:
        m = mutate(task, "answer_missing")
        out["list_one_short"] = (m.calls, m.answer) if m else None
    rows = result_rows(task.outputs[-1]) if task.outputs else []
    facts = o.answer_facts
    if len(facts) == 1 and facts[0].isdigit() and int(facts[0]) >= 1 and rows:
        n = int(facts[0])
        pick = rows[: n - 1] if n <= len(rows) else rows[:-1]
        out["count_json_one_short"] = (ref, json.dumps(pick, ensure_ascii=False))
    return out


def plans(task: Task, env: EnvSpec, seed: dict[str, Any]) -> dict[str, Any]:
    """Each behaviour's calls and answer on ``task`` (the destroyer: its tool and table too)."""
    ref = list(task.calls)
    answer = reference_answer(task)
    o = task.outcome
    writes = _mutating(env)
    out: dict[str, Any] = {"reference": (ref, answer)}
    kill = [d for d in destroyers(env, seed) if d[2] not in o.expected_state]
    wipe = "write_unrelated_wiped" if o.mutates else "reference_then_destroy"
    out[wipe] = (ref, answer, kill[0]) if kill else None
    if o.expects:  # a refusal or confirmation: doing nothing, or doing what was asked
        out.update(_policy_plans(task))
    elif o.mutates:
        out.update(_write_plans(task, answer, writes))
    else:
        out.update(_read_plans(task, answer))
    for kind in MUTANT_KINDS:
        m = mutate(task, kind, writes)
        out[f"mutant:{kind}"] = (m.calls, m.answer) if m else None
    return out


async def rollout(
    session: Any, snap: str, env: EnvSpec, task: Task, plan: tuple[Any, ...]
) -> Trajectory:
    """Execute one behaviour in the real sandbox; the trajectory with its calls and final state."""
    await session.restore(snap)
    if task.planted:
        await session.patch(task.seed_patch())
    tool_env = RecordingToolEnv(session, env.tools)
    calls, answer = plan[0], plan[1]
    for c in calls:
        await tool_env.call(c.name, c.arguments)
    if len(plan) == 3:  # the destroyer: every row of the table, one call each
        tool, param, table = plan[2]
        for row in (await session.state()).get(table, []):
            if row.get("id") is not None:
                await tool_env.call(tool, {param: row["id"]})
    return Trajectory(
        task_id=task.id,
        policy="bench",
        calls=tool_env.records,
        final_answer=answer,
        final_state=await session.state(),
    )


async def measure(
    tasks: list[Task], envs: dict[str, EnvSpec]
) -> dict[str, list[tuple[float, float]]]:
    """(score, outcome) of every behaviour on every task it applies to."""
    rm = TraceOutcome()
    ctx = FakeContext(component="traceoutcome", role="reward model")
    got: dict[str, list[tuple[float, float]]] = defaultdict(list)
    runner = process_runner()
    try:
        for env_id, env in sorted(envs.items()):
            mine = [t for t in tasks if t.env_id == env_id]
            if not mine:
                continue
            session = await runner.open(env, 0)
            try:
                snap = await session.snapshot()
                seed = await session.state()
                for task in mine:
                    for name, plan in plans(task, env, seed).items():
                        if plan is None:
                            continue
                        traj = await rollout(session, snap, env, task, plan)
                        r = rm.score(task, traj, ctx)
                        got[name].append((r.score, r.outcome))
            finally:
                await session.close()
    finally:
        await runner.aclose()
    return got


ORDER = [
    "reference",
    "reference_then_destroy",
    "write_unrelated_wiped",
    "shorter_path",
    "no_calls_guess",
    "reference_done",
    "write_state_unchanged",
    "reference_raw_dump",
    "list_one_short",
    "count_json_one_short",
    "policy_nothing",
    "policy_complied",
] + [f"mutant:{k}" for k in MUTANT_KINDS]


def main() -> None:
    """Run the benchmark and print its table and JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="an existing run folder (default: a bare run now)")
    ap.add_argument("--out", type=Path, help="where the bare run goes (default: a temp folder)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    if a.run is not None:
        run = a.run
    else:
        out = a.out or Path(tempfile.mkdtemp(prefix="bench-reward-"))
        run = bare_run(out)
    tasks, envs = load(run)
    t1 = time.perf_counter()
    got = asyncio.run(measure(tasks, envs))
    t2 = time.perf_counter()
    n_ro = sum(not t.outcome.mutates for t in tasks)
    kinds = Counter(t.outcome.expects for t in tasks if t.outcome.expects)
    policy = "".join(f", {n} {k}" for k, n in sorted(kinds.items()))
    print(f"{len(tasks)} tasks ({n_ro} read-only, {len(tasks) - n_ro} write{policy}) from {run}")
    print(f"{'behaviour':28} {'tasks':>5} {'mean':>6} {'=1':>6} {'max':>5} {'outcome':>7}")
    rows = {}
    for name in ORDER:
        v = got.get(name, [])
        if not v:
            continue
        scores = [s for s, _ in v]
        row = {
            "tasks": len(v),
            "mean": round(sum(scores) / len(v), 3),
            "share_1": round(sum(s >= 1 - 1e-9 for s in scores) / len(v), 3),
            "max": round(max(scores), 3),
            "outcome_mean": round(sum(o for _, o in v) / len(v), 3),
        }
        rows[name] = row
        print(
            f"{name:28} {row['tasks']:5d} {row['mean']:6.3f} {row['share_1']:6.3f} "
            f"{row['max']:5.2f} {row['outcome_mean']:7.3f}"
        )
    mut = [o for k, v in got.items() if k.startswith("mutant:") for _, o in v]
    kill = round(sum(o < 1 - 1e-9 for o in mut) / len(mut), 4) if mut else None
    print(f"mutants killed by the outcome alone: {kill} of {len(mut)}")
    summary = json.loads((run / "summary.json").read_text())
    print(
        f"run: {summary['tasks_proposed']} proposed, {summary['tasks']} emitted, "
        f"{summary['tasks_rejected']} rejected {summary.get('rejected', {})}"
    )
    print(f"load {t1 - t0:.1f} s, behaviours {t2 - t1:.1f} s")
    print(
        json.dumps(
            {
                "tasks": len(tasks),
                "read_only": n_ro,
                "policy_tasks": dict(kinds),
                "behaviours": rows,
                "mutant_outcome_kill_rate": kill,
                "run_tasks_proposed": summary["tasks_proposed"],
                "run_tasks_emitted": summary["tasks"],
                "run_rejected": summary.get("rejected", {}),
                "run_mean_reward": summary.get("mean_reward"),
            }
        )
    )


if __name__ == "__main__":
    main()
