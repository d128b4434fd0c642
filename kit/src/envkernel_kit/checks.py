"""One conformance check per role, as Gymnasium's ``check_env``: run them in a plugin's own tests.

Each check takes a component (an instance, as the kernel builds it), really calls its role
method(s) the way the kernel does (sync methods in a worker thread, async ones awaited, iterables
and async iterators drained) against real things, and raises :class:`ConformanceError` naming
what is wrong. By default they work on the shipped sample environment ``shop-v1`` (from the
``sample`` synthesizer) in real ``process`` sandboxes; both are found through their plugin entry
points, so a check needs ``envkernel-sample`` and ``envkernel-process`` installed, or an ``env``
and a ``runner`` of your own::

    from envkernel_kit.checks import check_reward_model

    def test_my_reward_model_conforms() -> None:
        check_reward_model(MyReward())

The checks are sync (each runs its own event loop, in a thread when the caller is inside one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from envkernel.context import RecordingToolEnv
from envkernel_runtime.calls import call_role
from envkernel_runtime.model import model_of
from envkernel_schemas import (
    EnvRequested,
    EnvSpec,
    GroupScored,
    IterationEnded,
    Outcome,
    PolicyUpdate,
    Reward,
    RolloutRequested,
    ScoredRollout,
    Task,
    ToolCall,
    ToolResult,
    ToolSpec,
    Trajectory,
    VerifyReport,
)

from .answers import facts_in_words
from .testing import FakeContext, RunnerContext

__all__ = [
    "ConformanceError",
    "check_policy",
    "check_reward_model",
    "check_sampler",
    "check_sandbox_runner",
    "check_synthesizer",
    "check_trainer",
    "check_verifier",
    "SAMPLE_CALLS",
    "planted_rows",
    "process_runner",
    "sample_env",
    "sample_task",
]

_T = TypeVar("_T")


class ConformanceError(AssertionError):
    """A component does not do what its role requires (the message says what, and where)."""


def _fail(role: str, component: Any, what: str) -> ConformanceError:
    return ConformanceError(f"{role} {type(component).__name__}: {what}")


def _expect(ok: bool, role: str, component: Any, what: str) -> None:
    if not ok:
        raise _fail(role, component, what)


def _method(component: Any, role: str, name: str) -> Callable[..., Any]:
    method = getattr(component, name, None)
    _expect(
        callable(method), role, component, f"has no method {name}() (the {role} role requires it)"
    )
    return method  # type: ignore[return-value]


def _items(result: Any) -> list[Any]:
    if isinstance(result, (list, tuple)):
        return list(result)
    if result is None or isinstance(result, (str, bytes, dict, msgspec.Struct)):
        return [result]
    try:
        return list(result)
    except TypeError:
        return [result]


def _run(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine to the end: on a new loop here, or in a thread when a loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, make()).result()


def sample_env() -> EnvSpec:
    """The shipped sample environment ``shop-v1``, made by the ``sample`` synthesizer (entry
    point)."""
    from envkernel.plugins import load

    factory = load(["sample"], strict=True).get("sample").factory
    env = factory().synthesize(
        EnvRequested(run="check", id="check-env", source_kind="sample"),
        FakeContext(component="sample"),
    )
    first: EnvSpec = _items(env)[0]
    return first


def process_runner() -> Any:
    """A ``process`` sandbox runner with default settings (real sandboxes), found by entry point."""
    from envkernel.config import settings_for
    from envkernel.plugins import load

    comp = load(["process"], strict=True).get("process")
    settings = settings_for("process", comp.settings_type, None)
    return comp.factory(settings) if settings is not None else comp.factory()


def sample_task(env: EnvSpec | None = None) -> Task:
    """A small read-only task over ``shop-v1``: look up one product (its reference chain is one
    call)."""
    env = env or sample_env()
    return Task(
        id="check-task",
        env_id=env.id,
        request="How much does the desk lamp cost, and how many are in stock?",
        calls=[ToolCall(name="get_product", arguments={"product_id": "prd_0001"})],
        outcome=Outcome(mutates=False, answer_facts=["3499", "12"]),
        tools=[t.name for t in env.tools],
        sampler="check",
    )


def _valid_env(env: Any, role: str, component: Any) -> None:
    _expect(
        isinstance(env, EnvSpec), role, component, f"returned {type(env).__name__}, not an EnvSpec"
    )
    _expect(
        bool(env.id) and bool(env.tools),
        role,
        component,
        f"environment {env.id!r} needs an id and at least one tool",
    )
    _expect(
        all(isinstance(t, ToolSpec) for t in env.tools),
        role,
        component,
        f"environment {env.id!r} has tools that are not ToolSpecs",
    )
    names = [t.name for t in env.tools]
    _expect(
        len(names) == len(set(names)),
        role,
        component,
        f"environment {env.id!r} repeats tool names: {names}",
    )
    if model_of(env) is None and env.behaviour.__class__.__name__ == "ModelBehaviour":
        raise _fail(
            role,
            component,
            f"environment {env.id!r} has a model that is not a valid resource model "
            "(envkernel_runtime.model)",
        )


async def _in_sandbox(runner: Any, env: EnvSpec, role: str, component: Any) -> dict[str, Any]:
    try:
        session = await runner.open(env, 0)
    except Exception as exc:
        raise _fail(
            role,
            component,
            f"environment {env.id!r} does not load in a sandbox: {type(exc).__name__}: {exc}",
        ) from exc
    try:
        state: dict[str, Any] = await session.state()
        return state
    finally:
        await session.close()


def check_synthesizer(
    synthesizer: Any, request: EnvRequested | None = None, *, runner: Any = None, load: bool = True
) -> list[EnvSpec]:
    """Call ``synthesize`` (for its first source kind unless ``request`` is given) and check every
    environment: an ``EnvSpec`` with tools, unique tool names, a valid model when it has one, and
    (``load``) that it loads in a real sandbox. Returns the environments."""
    role = "synthesizer"
    method = _method(synthesizer, role, "synthesize")
    kinds = tuple(getattr(synthesizer, "sources", ()) or ())
    request = request or EnvRequested(
        run="check", id="check-env", source_kind=kinds[0] if kinds else "", seed=0
    )

    async def go() -> list[EnvSpec]:
        envs = _items(await call_role(method, request, FakeContext(component="check", role=role)))
        _expect(
            bool(envs), role, synthesizer, f"returned no environment for {request.source_kind!r}"
        )
        for env in envs:
            _valid_env(env, role, synthesizer)
        if load:
            box = runner or process_runner()
            try:
                for env in envs:
                    await _in_sandbox(box, env, role, synthesizer)
            finally:
                if runner is None:
                    await box.aclose()
        return envs

    return _run(go)


SAMPLE_CALLS: tuple[ToolCall, ...] = (
    ToolCall(
        name="create_order",
        arguments={"customer_id": "cus_0001", "product_id": "prd_0002", "quantity": 2},
    ),
    ToolCall(name="update_order_quantity", arguments={"order_id": "ord_0009", "quantity": 3}),
    ToolCall(name="cancel_order", arguments={"order_id": "ord_0001"}),
)
"""Calls that change ``shop-v1``'s state (a new order, its quantity, a cancellation), for the
determinism part of :func:`check_sandbox_runner`."""


def planted_rows(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows to ``patch`` into ``state`` (``{"table": ..., "row": {...}}``, as a task plants
    one), one per table whose rows have an ``id``: a copy of its first row under a new id. A table's
    own constraints (a unique email) may refuse one, so a check tries them in turn."""
    out = []
    for table, rows in sorted(state.items()):
        if not rows or "id" not in rows[0]:
            continue
        row = dict(rows[0])
        ids = [r.get("id") for r in rows]
        if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            row["id"] = max(ids) + 1000
        else:
            row["id"] = f"{row['id']}-envkernel-check"
        out.append({"table": table, "row": row})
    return out


def _has_row(state: dict[str, Any], table: str, row: dict[str, Any]) -> bool:
    return any(all(r.get(k) == v for k, v in row.items()) for r in state.get(table, []))


async def _replay(session: Any, calls: list[ToolCall]) -> list[Any]:
    """Each call's outcome (value or error code) and the state after them all."""
    out: list[Any] = []
    for call in calls:
        res = await session.call(call.name, dict(call.arguments))
        out.append(res.value if res.ok else ("error", res.error.code if res.error else ""))
    return [out, await session.state()]


async def _check_patch(
    runner: Any, session: Any, handle: str, before: dict[str, Any]
) -> dict[str, Any] | None:
    """``patch`` puts a planted row in (the first of :func:`planted_rows` the environment takes;
    a refused one must leave the state as it was), ``restore`` takes it out again. Returns the row
    planted (None when the environment has no table with ids)."""
    role = "sandbox runner"
    refused: list[str] = []
    for plant in planted_rows(before):
        try:
            await session.patch([plant])
        except Exception as exc:
            refused.append(f"patch([{plant}]) raised {type(exc).__name__}: {exc}")
            _expect(
                await session.state() == before,
                role,
                runner,
                f"a refused patch() changed the state: {refused[-1]}",
            )
            continue
        _expect(
            _has_row(await session.state(), plant["table"], plant["row"]),
            role,
            runner,
            f"patch() did not put the planted row into {plant['table']!r}: {plant['row']}",
        )
        await session.restore(handle)
        _expect(
            await session.state() == before,
            role,
            runner,
            "restore() after patch() did not bring back the snapshot's state",
        )
        return plant
    if refused:
        raise _fail(role, runner, f"patch() took no planted row: {'; '.join(refused)}")
    return None


async def _check_determinism(
    runner: Any,
    env: EnvSpec,
    session: Any,
    handle: str,
    calls: list[ToolCall],
    plant: dict[str, Any] | None,
) -> None:
    """The same calls (after the same patch) from the same start give the same results and
    state: twice in one session (restored between), and in a second session of the same seed."""
    role = "sandbox runner"
    before = await session.state()

    async def from_start(sb: Any) -> list[Any]:
        if plant is not None:
            await sb.patch([plant])
        return await _replay(sb, calls)

    first = await from_start(session)
    await session.restore(handle)
    again = await from_start(session)
    _expect(
        again == first,
        role,
        runner,
        "the same calls from the same snapshot gave a different result or state "
        f"({[c.name for c in calls]})",
    )
    other = await runner.open(env, 0)
    try:
        _expect(
            await other.state() == before,
            role,
            runner,
            f"two sessions of {env.id!r} at seed 0 start in different states",
        )
        _expect(
            await from_start(other) == first,
            role,
            runner,
            "the same calls in two sessions of the same seed gave a different result or state "
            f"({[c.name for c in calls]})",
        )
    finally:
        await other.close()
    await session.restore(handle)


def _check_capabilities(runner: Any, session: Any) -> None:
    """A session's declared ``capabilities`` are known names, and it has what each one needs."""
    from envkernel_runtime.session import Capability, capabilities_of

    role = "sandbox runner"
    declared: frozenset[str] = getattr(session, "capabilities", frozenset())
    unknown = sorted(str(c) for c in declared if c not in set(Capability))
    _expect(not unknown, role, runner, f"the session declares unknown capabilities {unknown}")
    needs = {
        Capability.RAW_CALL: ("call_raw",),
        Capability.LANE: ("take_lane", "lane_taken", "lane_handle"),
    }
    for cap in capabilities_of(session):
        for name in needs[cap]:
            _method(session, role, name)
        if cap is Capability.LANE:
            _expect(
                isinstance(
                    getattr(getattr(session, "settings", None), "call_timeout", None), float
                ),
                role,
                runner,
                "a session with the 'lane' capability needs settings.call_timeout",
            )


def check_sandbox_runner(
    runner: Any, env: EnvSpec | None = None, calls: list[ToolCall] | None = None
) -> None:
    """Open ``env`` (default ``shop-v1``) and exercise a session: it has every method of
    ``SandboxSession`` and what its declared ``capabilities`` need; ``state``, ``snapshot``, a call
    of an unknown tool (an error *result*, never an exception), ``restore`` back to the snapshot;
    ``patch`` of a planted row (as a task with ``planted`` rows needs; a copy of a row with an
    ``id`` under a new id, :func:`planted_rows`, when the environment has one), undone by
    ``restore``; determinism: the
    same ``calls`` (default :data:`SAMPLE_CALLS` on ``shop-v1``, else none: the patch alone) from
    the same start give the same results and state, in one session and in a second one; then
    ``close`` and ``aclose`` the runner."""
    role = "sandbox runner"
    _method(runner, role, "open")
    _method(runner, role, "aclose")
    replay = list(SAMPLE_CALLS) if env is None and calls is None else list(calls or [])
    env = env or sample_env()

    async def go() -> None:
        try:
            session = await runner.open(env, 0)
        except Exception as exc:
            raise _fail(
                role, runner, f"open({env.id!r}, 0) raised {type(exc).__name__}: {exc}"
            ) from exc
        try:
            _expect(
                isinstance(getattr(session, "id", None), str),
                role,
                runner,
                "the session has no str id",
            )
            for name in ("patch", "interrupt", "close"):
                _method(session, role, name)
            _check_capabilities(runner, session)
            before = await session.state()
            _expect(
                isinstance(before, dict) and all(isinstance(v, list) for v in before.values()),
                role,
                runner,
                f"state() must return table -> rows, got {type(before).__name__}",
            )
            handle = await session.snapshot()
            _expect(
                isinstance(handle, str),
                role,
                runner,
                f"snapshot() must return a str handle, got {type(handle).__name__}",
            )
            result = await session.call("__envkernel_no_such_tool__", {})
            _expect(
                isinstance(result, ToolResult) and not result.ok,
                role,
                runner,
                f"calling an unknown tool must return a failed ToolResult, got {result!r}",
            )
            await session.restore(handle)
            _expect(
                await session.state() == before,
                role,
                runner,
                "restore() did not bring back the snapshot's state",
            )
            plant = await _check_patch(runner, session, handle, before)
            await _check_determinism(runner, env, session, handle, replay, plant)
        finally:
            await session.close()
        await runner.aclose()

    _run(go)


def check_verifier(
    verifier: Any, env: EnvSpec | None = None, *, runner: Any = None
) -> VerifyReport:
    """Verify ``env`` (default ``shop-v1``, which is known good) in real sandboxes: a
    ``VerifyReport`` that keeps it and drops only tools it has. Returns the report."""
    role = "verifier"
    method = _method(verifier, role, "verify")
    env = env or sample_env()

    async def go() -> VerifyReport:
        box = runner or process_runner()
        try:
            report: VerifyReport = await call_role(
                method, env, RunnerContext(box, component="check", role=role)
            )
        finally:
            if runner is None:
                await box.aclose()
        _expect(
            isinstance(report, VerifyReport),
            role,
            verifier,
            f"verify() returned {type(report).__name__}, not a VerifyReport",
        )
        names = {t.name for t in env.tools}
        _expect(
            set(report.tools_dropped) <= names,
            role,
            verifier,
            "dropped tools the environment does not have: "
            f"{sorted(set(report.tools_dropped) - names)}",
        )
        _expect(
            report.kept,
            role,
            verifier,
            f"rejected {env.id!r}, a known-good environment: {report.failures[:3]}",
        )
        return report

    return _run(go)


def check_sampler(
    sampler: Any, env: EnvSpec | None = None, *, runner: Any = None, out_dir: Path | None = None
) -> list[Task]:
    """Sample over ``env`` (default ``shop-v1``) in real sandboxes: at least one ``Task``, each
    on this environment, with a reference chain of tools it has and unique ids. Returns the
    tasks."""
    role = "sampler"
    method = _method(sampler, role, "sample")
    env = env or sample_env()

    async def go() -> list[Task]:
        box = runner or process_runner()
        try:
            ctx = RunnerContext(box, component="check", role=role, out_dir=out_dir)
            tasks = _items(await call_role(method, env, ctx))
        finally:
            if runner is None:
                await box.aclose()
        _expect(bool(tasks), role, sampler, f"proposed no task over {env.id!r}")
        names = {t.name for t in env.tools}
        for task in tasks:
            _expect(
                isinstance(task, Task), role, sampler, f"yielded {type(task).__name__}, not a Task"
            )
            _expect(
                task.env_id == env.id,
                role,
                sampler,
                f"task {task.id!r} names env {task.env_id!r}, not {env.id!r}",
            )
            unknown = [c.name for c in task.calls if c.name not in names]
            _expect(
                not unknown,
                role,
                sampler,
                f"task {task.id!r} calls tools the environment does not have: {unknown}",
            )
        ids = [t.id for t in tasks]
        _expect(len(ids) == len(set(ids)), role, sampler, "task ids repeat")
        return tasks

    return _run(go)


def check_policy(
    policy: Any,
    task: Task | None = None,
    env: EnvSpec | None = None,
    *,
    runner: Any = None,
    name: str = "check",
) -> Trajectory:
    """Roll ``policy`` out on ``task`` (default :func:`sample_task`) in a real sandbox, through the
    kernel's recording ToolEnv: a ``Trajectory`` of this task. Returns it with ``calls`` and
    ``final_state`` filled in from the records and the sandbox, as the kernel does."""
    role = "policy"
    method = _method(policy, role, "rollout")
    env = env or sample_env()
    task = task or sample_task(env)

    async def go() -> Trajectory:
        box = runner or process_runner()
        try:
            session = await box.open(env, 0)
            try:
                if (
                    task.planted
                ):  # the task's initial state: the seed plus its planted rows, as the kernel does
                    await session.patch(task.seed_patch())
                tool_env = RecordingToolEnv(
                    session, [t for t in env.tools if t.name in task.tools] or env.tools
                )
                request = RolloutRequested(run="check", id="check-rollout", task=task, policy=name)
                traj: Trajectory = await call_role(
                    method, request, tool_env, FakeContext(component=name, role=role)
                )
                _expect(
                    isinstance(traj, Trajectory),
                    role,
                    policy,
                    f"rollout() returned {type(traj).__name__}, not a Trajectory",
                )
                # as the kernel does: the recorded calls, not the policy's word, and the final state
                traj = msgspec.structs.replace(
                    traj, calls=tool_env.records, final_state=await session.state()
                )
            finally:
                await session.close()
        finally:
            if runner is None:
                await box.aclose()
        _expect(
            traj.task_id == task.id,
            role,
            policy,
            f"the trajectory names task {traj.task_id!r}, not {task.id!r}",
        )
        if update := getattr(policy, "apply_update", None):
            _expect(callable(update), role, policy, "apply_update is not callable")
        return traj

    return _run(go)


def _trajectory(task: Task, policy: str, calls: list[Any], answer: str, index: int) -> Trajectory:
    return Trajectory(task_id=task.id, policy=policy, index=index, calls=calls, final_answer=answer)


async def _reference(task: Task, env: EnvSpec, runner: Any) -> Trajectory:
    session = await runner.open(env, 0)
    try:
        if task.planted:
            await session.patch(task.seed_patch())
        tool_env = RecordingToolEnv(session, env.tools)
        for call in task.calls:
            await tool_env.call(call.name, call.arguments)
        last = tool_env.records[-1].result if tool_env.records else None
        answer = (
            task.outcome.answer
            or facts_in_words(task.outcome)
            or (msgspec.json.encode(last.value).decode() if last is not None and last.ok else "")
        )
        traj = _trajectory(task, "reference", tool_env.records, answer, 0)
        return msgspec.structs.replace(traj, final_state=await session.state())
    finally:
        await session.close()


def check_reward_model(
    reward_model: Any,
    task: Task | None = None,
    env: EnvSpec | None = None,
    *,
    runner: Any = None,
    name: str = "check",
) -> list[Reward]:
    """Score the reference rollout (really executed in a sandbox) and a do-nothing rollout of
    ``task`` (default :func:`sample_task`): each a ``Reward`` with a finite score in [0, 1].
    Returns both rewards."""
    role = "reward model"
    method = _method(reward_model, role, "score")
    env = env or sample_env()
    task = task or sample_task(env)

    async def go() -> list[Reward]:
        box = runner or process_runner()
        try:
            ref = await _reference(task, env, box)
        finally:
            if runner is None:
                await box.aclose()
        nothing = msgspec.structs.replace(
            _trajectory(task, "nothing", [], "", 1), final_state=ref.final_state
        )
        out = []
        for traj in (ref, nothing):
            reward = await call_role(method, task, traj, FakeContext(component=name, role=role))
            _expect(
                isinstance(reward, Reward),
                role,
                reward_model,
                f"score() returned {type(reward).__name__}, not a Reward",
            )
            _expect(
                isinstance(reward.score, (int, float))
                and math.isfinite(reward.score)
                and 0.0 <= reward.score <= 1.0,
                role,
                reward_model,
                f"score() gave {reward.score!r} for the {traj.policy} rollout; a score is a "
                "number in [0, 1]",
            )
            out.append(reward)
        return out

    return _run(go)


def _group(task: Task, scores: list[float]) -> GroupScored:
    rollouts = [
        ScoredRollout(
            trajectory=_trajectory(task, "check", [], "", i), reward=Reward(score=s, model="check")
        )
        for i, s in enumerate(scores)
    ]
    return GroupScored(run="check", id="check-group", task=task, rollouts=rollouts)


def check_trainer(
    trainer: Any, out_dir: Path, task: Task | None = None, *, name: str = "check"
) -> PolicyUpdate | None:
    """Feed ``trainer`` one scored group (rewards 1 and 0) with ``consume``, end the iteration with
    ``update`` when it has one (``None`` or a ``PolicyUpdate``), then ``finish``; files go to
    ``out_dir``. Returns the update."""
    role = "trainer"
    consume = _method(trainer, role, "consume")
    finish = _method(trainer, role, "finish")
    task = task or sample_task()
    ctx = FakeContext(component=name, role=role, out_dir=Path(out_dir))

    async def go() -> PolicyUpdate | None:
        await call_role(consume, _group(task, [1.0, 0.0]), ctx)
        update: PolicyUpdate | None = None
        if (method := getattr(trainer, "update", None)) is not None:
            update = await call_role(
                method,
                IterationEnded(run="check", id="check-ended", groups=1, mean_reward=0.5),
                ctx,
            )
            _expect(
                update is None or isinstance(update, PolicyUpdate),
                role,
                trainer,
                f"update() returned {type(update).__name__}, not a PolicyUpdate or None",
            )
        await call_role(finish, ctx)
        return update

    return _run(go)
