"""envkernel-workspace: claw-like workspace environments and their tasks.

Components:

- synthesizer ``workspace`` (``--source workspace`` or ``workspace:ledger,logs``): ``variants``
  seeded variants of each archetype in :mod:`envkernel_workspace.archetypes` (ledger
  reconciliation, inbox triage, a failing test, a key rotation, a log summary, a downloads
  clean-up, a SQLite CRM app fed from a CSV export), each a folder tree with distractors, run by the
  executor's workspace kind;
- synthesizer ``pinchbench`` (``--source pinchbench:PATH``): one environment per PinchBench task
  file (:mod:`envkernel_workspace.pinchbench`); tasks graded only by an LLM judge are imported
  only when ``judge`` is set, and counted apart (``skipped`` of the first environment);
- sampler ``workspace-tasks``: the task of each workspace environment, grounded by executing its
  reference chain in a sandbox (every call must succeed; the check must give the result full
  marks and the untouched workspace 0). Other environments are left to the other samplers;
- exporter ``pinchbench-export`` (plugin ``workspace-export``, not in the preset): writes every
  emitted workspace task as a PinchBench task file under ``pinchbench/`` in the run folder.

The check of a task (``Outcome.check``) runs inside a sandbox; ``traceoutcome`` scores a task that
has one by its check (see ``envkernel_kit.workspace.script_reward``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import AsyncIterator
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.groups import purpose_of
from envkernel_kit.workspace import (
    TOOL_PROFILES,
    GroundingError,
    embed_meta,
    ground_task,
    is_workspace,
    rename_calls,
    workspace_env,
)
from envkernel_schemas import EnvRequested, EnvSpec, GroupScored, Provenance, Task

from .archetypes import ARCHETYPES, make_variant
from .pinchbench import (
    PinchBenchError,
    PinchTask,
    export_name,
    export_task,
    judge_only,
    parse_task,
    task_files,
)

__all__ = [
    "ARCHETYPES",
    "PinchBenchSettings",
    "PinchBenchSynthesizer",
    "PinchBenchExporter",
    "WorkspaceSampler",
    "WorkspaceSettings",
    "WorkspaceSynthesizer",
    "make_variant",
]


def _version() -> str:
    try:
        return metadata.version("envkernel-workspace")
    except metadata.PackageNotFoundError:
        return "0"


def _seed(*parts: object) -> int:
    return int.from_bytes(
        hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=4).digest(), "big"
    )


class WorkspaceSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``workspace`` synthesizer."""

    variants: int = 4
    """Variants of each archetype (each its own environment and task)."""
    archetypes: list[str] = msgspec.field(default_factory=list)
    """Archetypes to make (empty: all, or those named in ``--source workspace:a,b``)."""

    def __post_init__(self) -> None:
        if self.variants < 1:
            raise ValueError("variants must be at least 1")
        unknown = [a for a in self.archetypes if a not in ARCHETYPES]
        if unknown:
            raise ValueError(
                f"unknown archetypes {unknown}; the archetypes are: {', '.join(ARCHETYPES)}"
            )


Settings = WorkspaceSettings
"""Alias: the settings of the ``workspace`` synthesizer."""


class WorkspaceSynthesizer:
    """Synthesizer ``workspace``: seeded variants of the archetypes (see the module docstring)."""

    Settings = WorkspaceSettings
    sources = ("workspace",)

    def __init__(self, settings: WorkspaceSettings | None = None) -> None:
        self.settings = settings or WorkspaceSettings()

    def synthesize(self, request: EnvRequested, ctx: Any = None) -> list[EnvSpec]:
        """One workspace environment per (archetype, variant)."""
        named = [a.strip() for a in (request.source or "").split(",") if a.strip()]
        unknown = [a for a in named if a not in ARCHETYPES]
        if unknown:
            raise ValueError(
                f"--source workspace:{request.source}: unknown archetypes {unknown}; the "
                f"archetypes are: {', '.join(ARCHETYPES)}"
            )
        chosen = named or self.settings.archetypes or list(ARCHETYPES)
        suffix = (
            f"-s{request.seed}"
            if ctx is not None and request.seed != getattr(ctx, "seed", request.seed)
            else ""
        )
        envs = []
        for archetype in chosen:
            for i in range(self.settings.variants):
                seed = _seed(request.seed, archetype, i)
                v = make_variant(archetype, seed)
                envs.append(
                    workspace_env(
                        f"ws-{archetype}-{i + 1}{suffix}",
                        f"{v.name} #{i + 1}",
                        files=v.files,
                        setup=v.setup,
                        description=v.description,
                        domain=v.category,
                        app_source=v.app_source,
                        app_tools=v.app_tools,
                        seed_sql=v.seed_sql,
                        provenance=Provenance(
                            source_kind="workspace",
                            source=archetype,
                            plugin="workspace",
                            plugin_version=_version(),
                            seed=seed,
                        ),
                    )
                )
        return envs


class PinchBenchSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``pinchbench`` importer."""

    judge: str = ""
    """The run's LLM-judge reward model. Empty: tasks graded only by a judge are not imported (they
    are counted apart)."""
    tools: str = "pinchbench"
    """Agent-facing tool names: ``pinchbench`` (``read_file``, ``write_file``, ``edit_file``,
    ``list_files``, ``execute_command``: the names PinchBench's graders look for) or ``claw``
    (OpenClaw's ``read``, ``write``, ``edit``, ``list``, ``exec``)."""
    tool_names: dict[str, str] = msgspec.field(default_factory=dict)
    """Overrides on top of ``tools``: canonical claw name -> the name the agent sees."""

    def __post_init__(self) -> None:
        if self.tools not in TOOL_PROFILES:
            raise ValueError(
                f"pinchbench.tools {self.tools!r}: the profiles are {', '.join(TOOL_PROFILES)}"
            )

    def names(self) -> dict[str, str]:
        """The renaming the environments get (canonical -> agent-facing)."""
        return {**TOOL_PROFILES[self.tools], **self.tool_names}


class PinchBenchSynthesizer:
    """Synthesizer ``pinchbench``: one workspace environment per PinchBench task file."""

    Settings = PinchBenchSettings
    sources = ("pinchbench",)

    def __init__(self, settings: PinchBenchSettings | None = None) -> None:
        self.settings = settings or PinchBenchSettings()

    def synthesize(self, request: EnvRequested, ctx: Any = None) -> list[EnvSpec]:
        """Environments for ``pinchbench:PATH`` (a task file or a folder of them)."""
        if not request.source:
            raise PinchBenchError(
                "--source pinchbench needs a path: --source pinchbench:PATH (a tasks folder "
                "or one task_*.md)"
            )
        root = Path(request.source).expanduser()
        if not root.exists():
            raise PinchBenchError(f"--source pinchbench:{request.source}: no such file or folder")
        log = getattr(ctx, "log", None)
        book = _Accounts(log, *self._judge(ctx))
        envs = [
            self._env(t, f, request.seed) for f in task_files(root) if (t := self._admit(f, book))
        ]
        _write_sources(ctx, root, book.files)
        skipped = book.skipped
        if not envs:
            raise PinchBenchError(
                f"{root}: no task could be imported "
                f"({', '.join(f'{v} {k}' for k, v in skipped.items()) or 'none found'})"
                + (
                    "; set pinchbench.judge to import judge-graded tasks"
                    if skipped.get("llm_judge_only")
                    else ""
                )
            )
        envs[0] = msgspec.structs.replace(
            envs[0], skipped=skipped, operations=len(envs) + sum(skipped.values())
        )
        if log is not None:
            log.info("pinchbench tasks imported", imported=len(envs), skipped=skipped)
        return envs

    def _admit(self, f: Path, book: _Accounts) -> PinchTask | None:
        """The parsed task of file ``f``, accounted for in ``book``; None when it is refused."""
        try:
            t = parse_task(f)
        except PinchBenchError as exc:  # one bad file does not stop the others
            book.refuse(f, "missing_asset" if "asset" in str(exc) else "unreadable", str(exc))
            return None
        if t.id in book.seen:
            why = f"{f.name}: id {t.id!r} is also the id of {book.seen[t.id]}; the second file"
            book.refuse(f, "duplicate_id", f"{why} is refused", t.id)
            return None
        book.seen[t.id] = f.name
        judge = book.judge
        if judge_only(t) and not judge:
            book.refuse(f, "llm_judge_only", book.not_judged, t.id, quiet=True)
            return None
        book.files.append(
            {
                "file": f.name, "path": str(f), "id": t.id, "status": "imported",
                "env": _env_id(t), "grading_type": t.grading_type,
                "sessions": len(t.sessions), "reason": _judge_part(t, judge),
            }
        )  # fmt: skip
        return t

    def _judge(self, ctx: Any) -> tuple[str, str]:
        """The run's judge: ``pinchbench.judge`` when the run's ``reward`` names it too (a run
        whose config says nothing of a reward model, as a bare component context, trusts the
        setting); and, when there is none, why judge-only tasks are not imported."""
        reward = getattr(getattr(ctx, "config", None), "reward", None)
        judge = self.settings.judge
        if not judge:
            return "", NOT_JUDGED
        if isinstance(reward, str) and reward != judge:
            return "", (
                f"not scored: graded only by an LLM judge, and pinchbench.judge is {judge!r} "
                f"but the run's reward model is {reward or 'the default'!r} (set reward = "
                f"{judge!r})"
            )
        return judge, ""

    def _env(self, t: PinchTask, f: Path, seed: int) -> EnvSpec:
        """The workspace environment of task ``t`` (file ``f``)."""
        return workspace_env(
            _env_id(t),
            t.name,
            files=t.files,
            blobs=t.blobs,
            description=f"PinchBench task {t.id} ({t.category})",
            domain=t.category or "pinchbench",
            tool_names=self.settings.names(),
            provenance=Provenance(
                source_kind="pinchbench",
                source=str(f),
                plugin="pinchbench",
                plugin_version=_version(),
                seed=seed,
            ),
        )


NOT_JUDGED = (
    "not scored: graded only by an LLM judge (its ## LLM Judge Rubric) and no judge is "
    'configured: set pinchbench.judge = "judge" with reward = "judge" to evaluate it'
)
"""Why a judge-only task is not imported when the run has no judge (in ``sources.json``)."""


def _env_id(t: PinchTask) -> str:
    return f"pb-{t.id.replace('_', '-')}"


def _judge_part(t: PinchTask, judge: str) -> str:
    """How the judge part of ``t`` is scored ("" for an automated task)."""
    if t.grading_type == "automated":
        return ""
    if not judge:
        return "hybrid: its llm_judge part is reported as not scored (no judge)"
    if t.grading_type == "llm_judge":
        return f"llm_judge: scored by the run's judge ({judge}) by the file's rubric"
    w = t.weights or {"automated": 0.5, "llm_judge": 0.5}
    return (
        f"hybrid: automated x {w.get('automated', 0.5):g} + llm_judge x "
        f"{w.get('llm_judge', 0.5):g}, the llm_judge part scored by the run's judge ({judge})"
    )


class _Accounts:
    """Every task file of a source by name, status and reason (``sources.json``), and the counts of
    those not imported (``skipped``)."""

    def __init__(self, log: Any, judge: str = "", not_judged: str = "") -> None:
        self.log = log
        self.judge = judge
        """The run's judge (empty: none)."""
        self.not_judged = not_judged
        """Why judge-only tasks are not imported (when there is no judge)."""
        self.files: list[dict[str, Any]] = []
        self.skipped: dict[str, int] = {}
        self.seen: dict[str, str] = {}
        """Task id -> the file that has it."""

    def refuse(
        self, f: Path, status: str, reason: str, task_id: str = "", quiet: bool = False
    ) -> None:
        """Account for file ``f`` as not imported (logged as an error unless ``quiet``)."""
        self.skipped[status] = self.skipped.get(status, 0) + 1
        self.files.append(
            {"file": f.name, "path": str(f), "id": task_id, "status": status, "reason": reason}
        )
        if self.log is not None and not quiet:
            self.log.error("pinchbench task refused", file=str(f), status=status, reason=reason)


def _write_sources(ctx: Any, root: Path, accounts: list[dict[str, Any]]) -> None:
    """``sources.json`` in the run folder: every task file by name, with its status and reason."""
    config = getattr(ctx, "config", None)
    if not getattr(config, "out", None) or not hasattr(ctx, "out_dir"):
        return
    import fcntl

    from envkernel_runtime.envdir import write_atomic

    out = Path(ctx.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sources.json"
    counts: dict[str, int] = {}
    for a in accounts:
        counts[a["status"]] = counts.get(a["status"], 0) + 1
    # one source at a time (sources are imported concurrently, in threads or processes): each adds
    # its entry to what the others wrote; the lock is on the run folder, so no file is left over
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except ValueError:
            known = {}
        known[f"pinchbench:{root}"] = {"files": accounts, "counts": counts}
        write_atomic(path, json.dumps(known, indent=2, ensure_ascii=False) + "\n")
    finally:
        os.close(fd)  # and with it the lock


def _task_id(env: EnvSpec, request: str) -> str:
    return hashlib.blake2b(f"{env.id}\n{request}".encode(), digest_size=12).hexdigest()


class WorkspaceSampler:
    """Sampler ``workspace-tasks``: the grounded task of each workspace environment."""

    async def sample(self, env: EnvSpec, ctx: Any) -> AsyncIterator[Task]:
        """Yield the environment's task, grounded in a sandbox (nothing for other environments)."""
        prov = env.provenance
        if (
            not is_workspace(env)
            or prov is None
            or prov.source_kind not in ("workspace", "pinchbench")
        ):
            return
        strict = prov.source_kind == "workspace"
        if strict:
            v = make_variant(prov.source, prov.seed)
            request, calls, check, answer, split_key = v.request, v.calls, v.check, v.answer, env.id
        else:
            t = parse_task(Path(prov.source))
            # the reference's final answer is the file's own (empty: PinchBench ships none), never
            # its rubric; the check carries the file's grading metadata (weights, sessions, ...)
            request, calls, answer, split_key = (
                t.request(),
                rename_calls(env, t.reference),
                t.answer,
                t.id,
            )
            # every imported task carries its metadata, a judge-only one too (its check is then
            # only the metadata: the judge scores it by the rubric, or it is reported not scored)
            check = embed_meta(t.check, t.meta())
        try:
            task = await ground_task(
                ctx,
                env,
                task_id=_task_id(env, request),
                request=request,
                calls=calls,
                check=check,
                answer=answer,
                sampler=ctx.component,
                strict=strict,
            )
        except GroundingError as exc:
            ctx.log.warning("workspace task dropped", env=env.id, reason=str(exc))
            return
        heldout = _seed("split", split_key) % 5 == 0
        yield msgspec.structs.replace(task, split="heldout" if heldout else "train")


class PinchBenchExporter:
    """Exporter ``pinchbench-export``: each emitted workspace task as
    ``pinchbench/task_<id>.md``."""

    def __init__(self) -> None:
        self._envs: dict[str, EnvSpec] = {}
        self._done: set[str] = set()

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Write the group's task once (training groups of workspace tasks only)."""
        task = group.task
        if purpose_of(group) != "train" or not task.outcome.check or task.id in self._done:
            return
        env = self._envs.get(task.env_id) or await ctx.env(task.env_id)
        self._envs[task.env_id] = env
        out = Path(ctx.out_dir) / "pinchbench"
        out.mkdir(parents=True, exist_ok=True)
        from envkernel_runtime.envdir import write_atomic

        self._done.add(task.id)
        assets: dict[str, bytes] = {}
        try:
            text = export_task(task, env, assets=assets)
        except (
            PinchBenchError
        ) as exc:  # e.g. a task of an app environment: the format cannot carry it
            ctx.log.warning("task not exported to pinchbench", task=task.id, reason=str(exc))
            return
        write_atomic(out / export_name(task), text)
        for name, data in assets.items():
            (out / "assets").mkdir(exist_ok=True)
            write_atomic(out / "assets" / name, data)

    async def finish(self, ctx: Any) -> None:
        """Nothing to flush (each file is written whole)."""


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``envkernel workspace export RUN_DIR`` (a finished run's workspace tasks as PinchBench
    files)."""
    from .cli import add_commands

    add_commands(cli)


@hookimpl
def register_synthesizers(register: Any) -> None:
    """Register the ``workspace`` and ``pinchbench`` synthesizers."""
    register("workspace", WorkspaceSynthesizer)
    register("pinchbench", PinchBenchSynthesizer)


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``workspace-tasks`` sampler."""
    register("workspace-tasks", WorkspaceSampler)
