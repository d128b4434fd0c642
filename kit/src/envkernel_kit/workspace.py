"""Workspace environments on the host side: build them, verify them, ground tasks and grade.

A *workspace environment* is an :class:`~envkernel_schemas.EnvSpec` whose behaviour is a
:class:`~envkernel_schemas.WorkspaceBehaviour`: a folder tree (``files``, ``blobs``), shell commands
run at load (``setup``) and optional SQLite app code (``source`` over ``seed_sql``). Its tools are
the claw tools of ``envkernel_runtime/workspace.py`` plus the app's. Everything here runs the
workspace only through a sandbox (``ctx.sandbox``): nothing of it executes in this process.

For a synthesizer (the ``workspace`` plugin, or an LLM-written one)::

    env = workspace_env("ledger-3", "Q3 ledger", files={"ledger.csv": "..."}, setup=[GIT_INIT])
    task = await ground_task(ctx, env, request="...", calls=[ToolCall(...)], check=GRADE_SOURCE)

``ground_task`` runs the reference chain in a sandbox, requires every call to succeed and the check
to give every criterion 1 on the result, and returns the Task (or raises :class:`GroundingError`).
A check is Python source defining ``grade(transcript, workspace_path) -> dict`` (PinchBench's
shape); :func:`script_reward` runs it inside a sandbox over a rollout's final workspace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from envkernel_kit.deprecation import deprecated_alias
from envkernel_runtime import workspace as _ws
from envkernel_schemas import (
    EnvSpec,
    Outcome,
    Provenance,
    Reward,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
    VerifyReport,
    WorkspaceBehaviour,
)

__all__ = [
    "GIT_INIT",
    "TOOL_PROFILES",
    "check_meta",
    "embed_meta",
    "rename_calls",
    "strip_meta",
    "task_sessions",
    "tool_aliases",
    "TABLE",
    "TOOL_NAMES",
    "GroundingError",
    "Session",
    "check_reward",
    "claw_tools",
    "ground_task",
    "is_workspace",
    "run_check",
    "run_grader_script",
    "script_reward",
    "transcript",
    "verify_workspace",
    "workspace_env",
]

TABLE = _ws.TABLE
"""The key of the workspace diff in a state dump (``final_state["workspace"]``)."""
TOOL_NAMES: list[str] = list(_ws.TOOL_NAMES)
"""The claw tools every workspace environment has."""
TOOL_PROFILES: dict[str, dict[str, str]] = {k: dict(v) for k, v in _ws.TOOL_PROFILES.items()}
"""Agent-facing tool names by profile: ``claw`` (OpenClaw's ``read``, ``write``, ``exec``, ...) and
``pinchbench`` (``read_file``, ``write_file``, ``edit_file``, ``list_files``,
``execute_command``)."""
GIT_INIT = "git init -q --template= && git add -A && git commit -qm 'initial import'"
"""A ``setup`` command that makes the tree a git repository with one commit (deterministic)."""


class GroundingError(ValueError):
    """A reference chain did not execute cleanly, or its check did not give it full marks."""


def claw_tools(names: dict[str, str] | None = None) -> list[ToolSpec]:
    """The claw tools as ToolSpecs (``read``, ``write``, ``edit``, ``apply_patch``, ``list``,
    ``glob``, ``grep``, ``exec``), renamed by ``names`` (canonical -> agent-facing, see
    :data:`TOOL_PROFILES`)."""
    return [msgspec.convert(t, ToolSpec) for t in _ws.tools_named(names)]


def tool_aliases(env: EnvSpec) -> dict[str, str]:
    """Canonical claw name -> the name ``env`` offers it under (only the renamed ones)."""
    have = {t.name for t in env.tools}
    out: dict[str, str] = {}
    for profile in _ws.TOOL_PROFILES.values():
        for canon, alias in profile.items():
            if alias in have and canon not in have:
                out[canon] = alias
    return out


def rename_calls(env: EnvSpec, calls: list[ToolCall]) -> list[ToolCall]:
    """``calls`` written with canonical claw names, renamed to the names ``env`` offers
    (``read`` with a ``path`` becomes ``read_file`` with ``files: [path]``)."""
    aliases = tool_aliases(env)
    out = []
    for c in calls:
        name = aliases.get(c.name, c.name)
        args = dict(c.arguments)
        if name == "read_file" and "path" in args and "files" not in args:
            args["files"] = [args.pop("path")]
        out.append(msgspec.structs.replace(c, name=name, arguments=args))
    return out


_META = (
    "\n# envkernel: PinchBench metadata (grading type, weights, sessions, rubric); not "
    "PinchBench's code\nPINCHBENCH_META = "
)


def embed_meta(check: str, meta: dict[str, Any]) -> str:
    """``check`` with ``meta`` (JSON data) appended as one base64 constant, so that the task carries
    its grading type, weights, sessions and criteria to the reward side and to an export."""
    import base64

    data = base64.b64encode(json.dumps(meta, ensure_ascii=False).encode()).decode("ascii")
    return strip_meta(check).rstrip() + "\n" + _META + repr(data) + "\n"


def check_meta(check: str) -> dict[str, Any]:
    """The metadata :func:`embed_meta` put in ``check`` (``{}`` when there is none). Read as
    text."""
    import base64

    at = check.rfind(_META)
    if at < 0:
        return {}
    raw = check[at + len(_META) :].strip().strip("'\"")
    try:
        meta = json.loads(base64.b64decode(raw))
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def strip_meta(check: str) -> str:
    """``check`` without the metadata :func:`embed_meta` appended (the task's own grading code)."""
    at = check.rfind(_META)
    return check if at < 0 else check[:at].rstrip() + "\n"


@dataclass(frozen=True)
class Session:
    """One session of a multi-session task (PinchBench's ``sessions`` front matter), in order."""

    id: str
    """The session's ``id`` in the task file (``session_<n>`` when it has none)."""
    prompt: str
    """What the user says at the start of the session."""
    new_conversation: bool
    """True when the session opens a new conversation (fresh message history, same workspace):
    the first session, and every one marked ``new_session: true``. Otherwise the prompt is the next
    user message of the conversation going on, as in PinchBench's files, where a session without
    ``new_session`` is "the same session" (task_22's session 2 recalls what session 1 was told)."""


def task_sessions(task: Task) -> list[Session]:
    """The sessions of a multi-session task, in order, from the metadata its check carries (see
    :func:`embed_meta`); ``[]`` for any other task (one conversation on ``task.request``)."""
    raw = check_meta(task.outcome.check).get("sessions") or []
    if not isinstance(raw, list):
        return []
    out: list[Session] = []
    for i, s in enumerate(raw, start=1):
        if not isinstance(s, dict) or not str(s.get("prompt") or "").strip():
            continue
        out.append(
            Session(
                id=str(s.get("id") or f"session_{i}"),
                prompt=str(s["prompt"]).strip(),
                new_conversation=not out or bool(s.get("new_session")),
            )
        )
    return out


def _reward_tools() -> list[ToolSpec]:
    return [ToolSpec(name=n, mutates=True) for n in _ws.REWARD_TOOLS]


def is_workspace(env: EnvSpec) -> bool:
    """True for a workspace environment."""
    return isinstance(env.behaviour, WorkspaceBehaviour)


def workspace_env(
    env_id: str,
    name: str,
    *,
    files: dict[str, str],
    blobs: dict[str, str] | None = None,
    setup: list[str] | None = None,
    app_source: str = "",
    app_tools: list[ToolSpec] | None = None,
    seed_sql: str = "",
    description: str = "",
    domain: str = "workspace",
    provenance: Provenance | None = None,
    tool_names: dict[str, str] | None = None,
) -> EnvSpec:
    """A workspace EnvSpec: the tree, its setup, optional app code and tools, and the claw tools
    (renamed by ``tool_names``, canonical -> agent-facing, e.g. ``TOOL_PROFILES["pinchbench"]``)."""
    return EnvSpec(
        id=env_id,
        name=name,
        tools=[*claw_tools(tool_names), *(app_tools or [])],
        behaviour=WorkspaceBehaviour(
            files=dict(files), blobs=dict(blobs or {}), setup=list(setup or []), source=app_source
        ),
        seed_sql=seed_sql,
        domain=domain,
        description=description,
        provenance=provenance,
    )


# --------------------------------------------------------------------------- transcripts


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _event(role: str, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One OpenClaw message event."""
    return {"type": "message", "message": {"role": role, "content": content, **extra}}


def _said(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": _text(text)}]


def _tool_call(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args, "params": args}


def _assistant_event(m: dict[str, Any]) -> dict[str, Any]:
    """An assistant message in chat format as an event: its text, then its tool calls."""
    content = _said(m["content"]) if m.get("content") else []
    for tc in m.get("tool_calls") or []:
        fn = tc.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {"_raw": fn.get("arguments")}
        content.append(_tool_call(tc.get("id", ""), fn.get("name", ""), args))
    return _event("assistant", content)


def _message_events(task: Task, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A conversation's events: each conversation of a multi-session task is one OpenClaw session,
    its events after a ``{"type": "session", "id"}`` header (the first line of an OpenClaw session
    file), all the sessions in order; a rollout opens each conversation with its system message."""
    events: list[dict[str, Any]] = []
    sessions = task_sessions(task)
    opened = iter(s.id for s in sessions if s.new_conversation)
    for m in messages:
        role = m.get("role")
        if role == "system" and sessions:
            events.append({"type": "session", "id": next(opened, f"session_{len(events)}")})
        elif role == "user":
            events.append(_event("user", _said(m.get("content") or "")))
        elif role == "assistant":
            events.append(_assistant_event(m))
        elif role == "tool":
            content = _said(m.get("content") or "")
            tool = {"toolCallId": m.get("tool_call_id", ""), "toolName": m.get("name", "")}
            events.append(_event("toolResult", content, **tool))
    return events


def _call_events(task: Task, trajectory: Trajectory) -> list[dict[str, Any]]:
    """A rollout without messages as events: the request, each call and its result, the answer."""
    events = [_event("user", _said(task.request))]
    for i, rec in enumerate(trajectory.calls):
        cid = rec.call.id or f"call_{i}"
        events.append(
            _event("assistant", [_tool_call(cid, rec.call.name, dict(rec.call.arguments))])
        )
        ok = rec.result.ok
        result = rec.result.value if ok else {"error": msgspec.to_builtins(rec.result.error)}
        tool = {"toolCallId": cid, "toolName": rec.call.name, "isError": not ok}
        events.append(_event("toolResult", _said(result), **tool))
    if trajectory.final_answer:
        events.append(_event("assistant", _said(trajectory.final_answer)))
    return events


def transcript(task: Task, trajectory: Trajectory) -> list[dict[str, Any]]:
    """The rollout as the OpenClaw session events PinchBench's ``grade()`` reads: ``{"type":
    "message", "message": {"role": "user" | "assistant" | "toolResult", "content": [...]}}``,
    with ``{"type": "toolCall", "name", "id", "arguments", "params"}`` items in assistant content.
    For a multi-session task (:func:`task_sessions`), every conversation of the rollout is there in
    order, each after an OpenClaw session header ``{"type": "session", "id": <session id>}``."""
    if trajectory.messages:
        return _message_events(task, trajectory.messages)
    return _call_events(task, trajectory)


# --------------------------------------------------------------------------- checks in the sandbox


def _check_env(env: EnvSpec) -> EnvSpec:
    """The environment with the reward-side functions declared (never offered to an agent)."""
    return msgspec.structs.replace(env, id=f"{env.id}--check", tools=[*env.tools, *_reward_tools()])


async def run_grader_script(
    ctx: Any,
    env: EnvSpec,
    check: str,
    final_state: dict[str, Any],
    events: list[dict[str, Any]],
    timeout: float = 8.0,
) -> dict[str, Any]:
    """Rebuild the final workspace of a rollout (the initial tree plus its diff, the app tables) in
    a sandbox and run ``check`` there: ``{"scores": {...}}`` or ``{"error": "..."}``."""
    tables = {k: v for k, v in final_state.items() if k != TABLE}
    async with ctx.sandbox(_check_env(env)) as sb:
        applied = await sb.call(
            "apply_final", {"rows": final_state.get(TABLE, []), "tables": tables}
        )
        if not applied.ok:
            return {
                "error": "could not rebuild the final workspace: "
                f"{applied.error.message if applied.error else '?'}"
            }
        res = await sb.call(
            "run_check", {"script": check, "transcript": events, "timeout": timeout}
        )
        if not res.ok:
            return {
                "error": "the check failed in the sandbox: "
                f"{res.error.code if res.error else ''}: "
                f"{res.error.message if res.error else ''}"
            }
        out = dict(res.value or {})
        missing = (applied.value or {}).get("missing") or []
        if missing:
            out["missing"] = missing
        return out


def _score_of(
    result: dict[str, Any], weights: dict[str, float] | None = None
) -> tuple[float, list[str]]:
    if "error" in result:
        return 0.0, [str(result["error"])]
    scores: dict[str, float] = result.get("scores") or {}
    if not scores:
        return 0.0, ["the check returned no criteria"]
    w = {k: float((weights or {}).get(k, 1.0)) for k in scores}
    total = sum(w.values()) or 1.0
    score = sum(max(0.0, min(1.0, v)) * w[k] for k, v in scores.items()) / total
    reasons = [f"{k}: {v:g}" for k, v in sorted(scores.items()) if v < 1.0]
    if result.get("missing"):
        reasons.append(
            f"files too large to rebuild for the check: {', '.join(result['missing'][:5])}"
        )
    return score, reasons


def _hybrid(automated: float, reasons: list[str], meta: dict[str, Any]) -> tuple[float, list[str]]:
    """A PinchBench hybrid: ``grading_weights`` over the automated and the judge part. The judge
    part is scored only when ``meta["judge_score"]`` is there; otherwise it is reported as not
    scored and the score is the automated part alone (said in the reasons, never silently)."""
    w = meta.get("grading_weights") or {"automated": 0.5, "llm_judge": 0.5}
    wa, wj = float(w.get("automated", 0.5)), float(w.get("llm_judge", 0.5))
    judged = meta.get("judge_score")
    if judged is None:
        return automated, [
            *reasons,
            f"hybrid: llm_judge part (weight {wj:g}) not scored, no judge; score is the "
            f"automated part (weight {wa:g}) alone",
        ]
    total = (wa + wj) or 1.0
    return (wa * automated + wj * float(judged)) / total, [
        *reasons,
        f"hybrid: automated {automated:.3f} x {wa:g} + llm_judge {float(judged):.3f} x {wj:g}",
    ]


def _judge_only(judge_score: float | None, model: str) -> Reward:
    """A PinchBench ``llm_judge`` task: the judge's score, or not scored when there is no judge."""
    if judge_score is None:
        why = (
            "not scored: the task is graded only by an LLM judge (its ## LLM Judge Rubric) and "
            'the run\'s reward model is not a judge (reward = "judge")'
        )
        return Reward(score=0.0, model=model, tau=0.0, reasons=[why], error=why)
    s = round(float(judge_score), 6)
    return Reward(score=s, model=model, outcome=s, trace=0.0, tau=0.0, reasons=[])


async def script_reward(
    ctx: Any, task: Task, trajectory: Trajectory, model: str = "", judge_score: float | None = None
) -> Reward:
    """Score a rollout of a workspace task: the check's criteria (mean, in [0, 1]) run inside a
    sandbox over the final workspace and the transcript. ``outcome`` is the same number. A
    PinchBench hybrid combines it with ``judge_score`` (the run's judge's, when there is one) by its
    ``grading_weights``; a task graded only by a judge is ``judge_score``, or not scored (``error``
    says why) without one."""
    meta = check_meta(task.outcome.check)
    if meta.get("grading_type") == "llm_judge":
        return _judge_only(judge_score, model)
    env = await ctx.env(task.env_id)
    result = await run_grader_script(
        ctx, env, task.outcome.check, trajectory.final_state, transcript(task, trajectory)
    )
    score, reasons = _score_of(result)
    if meta.get("grading_type") == "hybrid":
        with_judge = meta if judge_score is None else {**meta, "judge_score": judge_score}
        score, reasons = _hybrid(score, reasons, with_judge)
    return Reward(
        score=round(score, 6),
        model=model,
        outcome=round(score, 6),
        trace=0.0,
        tau=0.0,
        reasons=reasons,
        criteria={
            str(k): float(v)
            for k, v in (result.get("scores") or {}).items()
            if isinstance(v, (int, float))
        },
    )


run_check = deprecated_alias(run_grader_script, "run_check")
check_reward = deprecated_alias(script_reward, "check_reward")


# --------------------------------------------------------------------------- grounding and
# verifying


async def ground_task(
    ctx: Any,
    env: EnvSpec,
    *,
    task_id: str,
    request: str,
    calls: list[ToolCall],
    check: str,
    answer: str = "",
    sampler: str = "",
    difficulty: float = 0.0,
    strict: bool = True,
) -> Task:
    """Execute the reference chain in a sandbox and return the Task it grounds: every call must
    succeed and, when ``strict``, the check must give every criterion 1 on the result and 0 overall
    on the untouched workspace (an imported task is not strict: the gate judges it). The expected
    state is the workspace diff the chain produced."""
    async with ctx.sandbox(env) as sb:
        initial = await sb.state()
        outputs: list[Any] = []
        for i, call in enumerate(calls):
            res = await sb.call(call.name, dict(call.arguments))
            if not res.ok:
                err = res.error
                raise GroundingError(
                    f"reference call {i} ({call.name}) failed: {err.code if err else ''}: "
                    f"{err.message if err else ''}"
                )
            outputs.append(res.value)
        final = await sb.state()
    draft = Task(
        id=task_id,
        env_id=env.id,
        request=request,
        calls=list(calls),
        outputs=outputs,
        outcome=Outcome(mutates=True, check=check, answer=answer),
        sampler=sampler,
    )
    ref = Trajectory(
        task_id=task_id,
        policy="reference",
        final_state=final,
        final_answer=answer,
        calls=[_record(c, o) for c, o in zip(calls, outputs, strict=True)],
    )
    if strict:
        got = await run_grader_script(ctx, env, check, final, transcript(draft, ref))
        score, reasons = _score_of(got)
        if score < 1.0:
            raise GroundingError(
                f"the reference chain scores {score:.2f} on its own check: {'; '.join(reasons)}"
            )
        untouched = await run_grader_script(
            ctx,
            env,
            check,
            initial,
            transcript(draft, Trajectory(task_id=task_id, policy="nothing")),
        )
        nothing, _ = _score_of(untouched)
        if nothing > 0.0:
            raise GroundingError(
                f"the untouched workspace already scores {nothing:.2f} on the check; it does "
                "not test the request"
            )
    expected = {
        TABLE: [{k: r[k] for k in ("path", "change", "sha256")} for r in final.get(TABLE, [])]
    }
    return msgspec.structs.replace(
        draft,
        outcome=Outcome(mutates=True, check=check, answer=answer, expected_state=expected),
        signature=">".join(c.name for c in calls),
        difficulty=difficulty or min(1.0, len(calls) / 10),
    )


def _record(call: ToolCall, output: Any) -> Any:
    from envkernel_schemas import CallRecord, ToolResult

    return CallRecord(call=call, result=ToolResult(ok=True, value=output))


_PROBE = "envkernel-verify.txt"


async def verify_workspace(ctx: Any, env: EnvSpec, verifier: str = "") -> VerifyReport:
    """Verify a workspace environment by running each claw tool once on it in a sandbox (a
    write, read, edit, patch, list, glob, grep and a shell command), then restoring the seed.
    App tools are kept when the environment loads with them."""
    import time

    t0 = time.perf_counter()
    patch = f"*** Begin Patch\n*** Update File: {_PROBE}\n@@\n-beta\n+gamma\n*** End Patch"
    steps = [
        ("list", {"path": "."}, None),
        ("write", {"path": _PROBE, "content": "alpha\nbeta\n"}, None),
        ("read", {"path": _PROBE}, lambda v: v.get("content") == "alpha\nbeta\n"),
        ("edit", {"path": _PROBE, "old_string": "alpha", "new_string": "omega"}, None),
        ("apply_patch", {"patch": patch}, None),
        ("glob", {"pattern": "**/*.txt"}, lambda v: _PROBE in v.get("paths", [])),
        ("grep", {"pattern": "gamma", "path": "."}, lambda v: v.get("count", 0) >= 1),
        (
            "exec",
            {
                "command": f"cat {_PROBE} && git --version >/dev/null && sqlite3 --version "
                ">/dev/null && python3 -c 'print(1)'"
            },
            lambda v: v.get("exit_code") == 0 and v.get("stdout", "").startswith("omega\ngamma\n"),
        ),
    ]
    kept: list[str] = []
    dropped: dict[str, str] = {}
    names = {t.name for t in env.tools}
    aliases = tool_aliases(env)
    try:
        async with ctx.sandbox(env) as sb:
            seed = await sb.snapshot()
            for canon, args, ok in steps:
                tool = aliases.get(canon, canon)
                if tool not in names:
                    continue
                call_args: dict[str, Any] = dict(args)
                if tool == "read_file":
                    call_args = {"files": [args["path"]]}
                    ok = lambda v: v["files"][0].get("content") == "alpha\nbeta\n"  # noqa: E731
                res = await sb.call(tool, call_args)
                if not res.ok:
                    dropped[tool] = (
                        f"{res.error.code if res.error else ''}: "
                        f"{res.error.message if res.error else ''}"
                    )
                elif ok is not None and not ok(res.value or {}):
                    dropped[tool] = f"unexpected result {json.dumps(res.value)[:300]}"
                else:
                    kept.append(tool)
            await sb.restore(seed)
            after = await sb.state()
    except Exception as exc:
        return VerifyReport(
            verifier=verifier,
            kept=False,
            failures=[f"the workspace did not load: {exc}"],
            seconds=round(time.perf_counter() - t0, 6),
        )
    if after.get(TABLE):
        dropped.setdefault(
            "restore", "restoring the seed snapshot did not bring the workspace back"
        )
    kept += [t.name for t in env.tools if t.name not in TOOL_NAMES and t.name not in kept]
    failures = [f"{t}: {r}" for t, r in dropped.items()]
    return VerifyReport(
        verifier=verifier,
        kept=not dropped and bool(kept),
        tools_kept=kept,
        tools_dropped=dropped,
        checks=len(steps),
        failures=failures,
        seconds=round(time.perf_counter() - t0, 6),
    )
