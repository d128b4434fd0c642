"""Distractor rows planted per task (``Task.planted``): near-duplicates of the row a request names.

The ``chains`` sampler plants them over the shipped shop environment in real process sandboxes;
the reference replayed from the seed plus them scores 1, an agent acting on a planted row scores
0 on the outcome (and below 1), doing nothing scores 0, and ``envkernel serve``'s reset (through
the kernel's sandbox service on a real nats-server) starts each episode with the rows in place.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from envkernel.context import RecordingToolEnv
from envkernel_baselines import Mutant, Nothing, Reference
from envkernel_baselines.mutants import mutate
from envkernel_chains import Chains, ChainsSettings
from envkernel_kit.checks import process_runner
from envkernel_kit.testing import FakeContext, RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_schemas import EnvSpec, RolloutRequested, Task
from envkernel_serve.catalog import Catalog
from envkernel_serve.client import Session
from envkernel_serve.server import NatsSandboxes, ServeSettings, start
from envkernel_traceoutcome import TraceOutcome

process = pytest.importorskip("envkernel_process")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[EnvSpec, list[Task], dict[str, Any]]:
    """The corpus's shop environment, 40 tasks sampled over it (every one that can have distractors
    given some) and its seed state."""
    env = next(synthesize_file(f)[0] for f in corpus_files() if f.stem == "shop")
    out = tmp_path_factory.mktemp("planted")

    async def sample() -> tuple[list[Task], dict[str, Any]]:
        runner = process.ProcessRunner()
        try:
            ctx = RunnerContext(runner, component="chains", out_dir=out)
            tasks = [
                t
                async for t in Chains(
                    ChainsSettings(tasks_per_env=40, distractor_share=1.0)
                ).sample(env, ctx)
            ]
            sb = await runner.open(env, 0)
            return tasks, await sb.state()
        finally:
            await runner.aclose()

    return (env, *asyncio.run(sample()))


async def _play(
    runner: Any, env: EnvSpec, task: Task, policy: Any, index: int = 0
) -> tuple[float, float, dict[str, Any]]:
    """One rollout from the task's initial state (the seed plus its planted rows): score, outcome,
    final state."""
    sb = await runner.open(env, 0)
    try:
        await sb.patch(task.seed_patch())
        tool_env = RecordingToolEnv(sb, env.tools)
        req = RolloutRequested(
            run="r",
            id=f"{task.id}/{index}",
            parent="p",
            iteration=0,
            time=0.0,
            task=task,
            policy="p",
            purpose="gate",
            index=index,
        )
        traj = await policy.rollout(req, tool_env, None)
        state = await sb.state()
        traj = msgspec.structs.replace(traj, calls=tool_env.records, final_state=state)
        r = TraceOutcome().score(task, traj, FakeContext(component="traceoutcome"))
        return r.score, r.outcome, state
    finally:
        await sb.close()


def test_tasks_get_near_duplicates_of_the_row_they_name(
    shop: tuple[EnvSpec, list[Task], dict[str, Any]],
) -> None:
    env, tasks, seed = shop
    planted = [t for t in tasks if t.planted]
    assert len(planted) >= 4, [t.request for t in tasks]
    changed = 0
    for t in planted:
        assert 1 <= len(t.planted) <= 3
        for p in t.planted:
            twin = next(r for r in seed[p.table] if str(r[p.key]) == p.twin)
            assert p.differs and all(p.row[c] != twin[c] for c in p.differs)
            assert p.row[p.key] not in {r[p.key] for r in seed[p.table]}
            same = [
                c for c in twin if c not in p.differs and c != p.key
            ]  # the rest is the twin's (but unique columns)
            assert sum(p.row[c] == twin[c] for c in same) >= len(same) - 2, (p.row, twin)
            if (
                p.table in t.outcome.initial_state
            ):  # a table the task changes: it is there at the start and, untouched, at the end
                shown = {k: v for k, v in p.row.items() if k not in env.generated.get(p.table, [])}
                assert (
                    shown in t.outcome.initial_state[p.table]
                    and shown in t.outcome.expected_state[p.table]
                )
                changed += 1
    assert changed and any(not t.outcome.mutates for t in planted)


async def test_the_reference_solves_a_planted_task_and_the_careless_agent_fails(
    shop: tuple[EnvSpec, list[Task], dict[str, Any]],
) -> None:
    env, tasks, _ = shop
    runner = process_runner()
    careless = [
        t
        for t in tasks
        if t.planted
        and (m := mutate(t, "distractor")) is not None
        and any(
            str(v) == str(p.row[p.key])
            for c in m.calls
            for v in c.arguments.values()
            for p in t.planted
        )
    ]
    assert careless, "no planted task whose distractor mutant acts on a planted row"
    try:
        for task in careless[:4]:
            score, _, state = await _play(runner, env, task, Reference())
            assert score == 1.0, task.request
            p = task.planted[0]
            assert any(
                r.get(p.key) == p.row[p.key] for r in state[p.table]
            )  # the row was there all along
            nothing, _, _ = await _play(runner, env, task, Nothing(), 1)
            assert nothing == 0.0
            bad, outcome, _ = await _play(
                runner, env, task, Mutant(), 6
            )  # index 6: the distractor mutant
            assert bad < 1.0 and outcome == 0.0, task.request
    finally:
        await runner.aclose()


async def test_serve_reset_starts_from_the_seed_plus_the_planted_rows(
    shop: tuple[EnvSpec, list[Task], dict[str, Any]], nats_server: str
) -> None:
    """Through the kernel's sandbox service (NATS): each reset restores the seed and plants the rows
    once."""
    env, tasks, _ = shop
    task = next(
        t
        for t in tasks
        if t.planted
        and any(
            isinstance(o, list)
            and any(
                isinstance(r, dict)
                and r.get(t.planted[0].key) == t.planted[0].row[t.planted[0].key]
                for r in o
            )
            for o in t.outputs
        )
    )
    p = task.planted[0]
    i = next(
        i
        for i, o in enumerate(task.outputs)
        if isinstance(o, list)
        and any(isinstance(r, dict) and r.get(p.key) == p.row[p.key] for r in o)
    )
    source = NatsSandboxes(nats_server, "process", local_runner=process_runner())
    running = await asyncio.to_thread(
        start, Catalog(envs={env.id: env}, tasks=[task]), source, ServeSettings(port=0, warm=1)
    )
    try:

        def play() -> tuple[list[Any], float | None]:
            seen = []
            with Session(running.url) as s:
                for _ in range(
                    2
                ):  # the second reset is on the same (restored) sandbox: the rows are there once
                    s.reset(task_id=task.id)
                    for call in task.calls[:i]:
                        s.call(call.name, **call.arguments)
                    seen.append(
                        s.call(task.calls[i].name, **task.calls[i].arguments)["observation"][
                            "result"
                        ]
                    )
                s.reset(task_id=task.id)
                for call in task.calls:
                    s.call(call.name, **call.arguments)
                return seen, s.submit(task.outcome.answer)["reward"]

        seen, reward = await asyncio.to_thread(play)
        for result in seen:
            assert result == task.outputs[i]
            assert (
                sum(1 for r in result if isinstance(r, dict) and r.get(p.key) == p.row[p.key]) == 1
            )
        assert reward == 1.0
    finally:
        await asyncio.to_thread(running.stop)


def test_rl_rows_say_what_was_planted(shop: tuple[EnvSpec, list[Task], dict[str, Any]]) -> None:
    import json

    from envkernel_export.rows import rl_row, rl_table

    env, tasks, _ = shop
    task = next(t for t in tasks if t.planted)
    row = rl_row(task, [])
    planted = json.loads(row["extra_info"]["planted"])
    assert [x["row"] for x in planted] == [p.row for p in task.planted] and planted[0][
        "differs"
    ] == task.planted[0].differs
    assert rl_table([row, rl_row(next(t for t in tasks if not t.planted), [])]).num_rows == 2
