"""Evaluation mode (``envkernel eval``): tasks from files, per-attempt results, and the figures.

In evaluation mode (``RunConfig.evaluate``) the kernel's stages send every proposed task straight to
``rollouts_per_task`` (k) attempts of the run's policy with purpose ``eval``: no gate, no reference.
Tasks come from the run's sources (an imported benchmark: ``--source pinchbench:PATH``, exported
files too) or from task files (``eval_tasks``: a run folder or its ``tasks.jsonl``, whose
environments are in the ``envs/`` folder beside it), which the coordinator proposes itself
(:func:`load_task_files`).

:class:`EvalRecorder` writes ``results.jsonl`` (one line per attempt) and ``eval.json``
(:func:`figures`): the mean score, pass@1 and pass@k (the unbiased estimator of Chen et al. 2021,
``1 - C(n-c, k) / C(n, k)`` per task, averaged over tasks), overall, by category and by source, each
with a 95 % bootstrap confidence interval over tasks. An attempt *passes* when it scores 1. An
attempt whose rollout or scoring failed has no score: it is listed with its error and left out of
the figures (``attempts_failed``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from envkernel_runtime.envdir import EnvDirError, load_env_dir, write_atomic
from envkernel_schemas import (
    DecodeError,
    EnvRequested,
    EnvSpec,
    EnvSynthesized,
    Event,
    PluginFailed,
    RolloutFinished,
    RolloutRequested,
    RolloutScored,
    Task,
    decode,
    to_json,
)

from .errors import ConfigError

__all__ = [
    "SPLITS",
    "EvalRecorder",
    "FileTask",
    "compare",
    "figures",
    "load_task_files",
    "pass_at_k",
    "table",
]

PASS = 1.0 - 1e-9
"""An attempt passes when it scores at least this (1, as the gate counts a solve)."""
SPLITS = ("heldout", "train", "all")
"""The values of ``eval_split``."""
RESAMPLES = 1000
"""Bootstrap resamples of the confidence intervals (fewer for very many tasks, at least 100)."""


@dataclass
class FileTask:
    """A task read from a task file, with its environment and the file it came from."""

    task: Task
    env: EnvSpec
    source: str
    """The task file (``tasks.jsonl``) it was read from."""


def _tasks_file(spec: str) -> Path:
    p = Path(spec).expanduser()
    if p.is_dir():
        p = p / "tasks.jsonl"
    if not p.is_file():
        raise ConfigError(
            f"--tasks {spec}: no such file (give a run folder or its tasks.jsonl)"
            if not Path(spec).expanduser().is_dir()
            else f"--tasks {spec}: the folder has no tasks.jsonl (the run emitted no task)"
        )
    return p.resolve()


def load_task_files(specs: Iterable[str], split: str = "heldout") -> list[FileTask]:
    """The tasks of these run folders or ``tasks.jsonl`` files in ``split`` (``all``: every task),
    each with its environment from ``envs/<env-id>/`` beside the file. A missing file or
    environment, or a line that is not a Task, is a :class:`ConfigError`."""
    if split not in SPLITS:
        raise ConfigError(f"eval_split {split!r}: expected one of {', '.join(SPLITS)}")
    out: list[FileTask] = []
    dec = msgspec.json.Decoder(Task)
    for spec in specs:
        path = _tasks_file(spec)
        envs: dict[str, EnvSpec] = {}
        for n, line in enumerate(path.read_bytes().splitlines(), 1):
            if not line.strip():
                continue
            try:
                task = dec.decode(line)
            except msgspec.DecodeError as exc:
                raise ConfigError(f"{path}:{n}: not a task: {exc}") from None
            if split != "all" and task.split != split:
                continue
            if task.env_id not in envs:
                try:
                    envs[task.env_id] = load_env_dir(path.parent / "envs" / task.env_id)
                except EnvDirError as exc:
                    raise ConfigError(f"{path}:{n}: task {task.id}: {exc}") from None
            out.append(FileTask(task, envs[task.env_id], str(path)))
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with ``c`` passes in ``n`` attempts (``k <= n``)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _metrics(tasks: list[tuple[int, int, float]], k: int) -> tuple[float, float, float | None]:
    """(mean, pass@1, pass@k) over tasks given as (attempts, passes, mean score)."""
    mean = sum(m for _, _, m in tasks) / len(tasks)
    p1 = sum(c / n for n, c, _ in tasks) / len(tasks)
    with_k = [pass_at_k(n, c, k) for n, c, _ in tasks if n >= k]
    return mean, p1, (sum(with_k) / len(with_k) if with_k else None)


def _group(tasks: list[tuple[int, int, float]], k: int, rng: random.Random) -> dict[str, Any]:
    mean, p1, pk = _metrics(tasks, k)
    reps = max(100, min(RESAMPLES, 2_000_000 // max(1, len(tasks))))
    boot: list[tuple[float, float, float | None]] = []
    for _ in range(reps):
        boot.append(_metrics([tasks[rng.randrange(len(tasks))] for _ in tasks], k))

    def ci(i: int) -> list[float] | None:
        xs = sorted(x for b in boot if (x := b[i]) is not None)
        if not xs:
            return None
        return [round(xs[int(0.025 * (len(xs) - 1))], 4), round(xs[int(0.975 * (len(xs) - 1))], 4)]

    return {
        "tasks": len(tasks),
        "attempts": sum(n for n, _, _ in tasks),
        "passed": sum(c for _, c, _ in tasks),
        "mean": round(mean, 4),
        "mean_ci": ci(0),
        "pass@1": round(p1, 4),
        "pass@1_ci": ci(1),
        "pass@k": None if pk is None else round(pk, 4),
        "pass@k_ci": ci(2),
        "pass@k_tasks": sum(1 for n, _, _ in tasks if n >= k),
    }


def figures(rows: list[dict[str, Any]], k: int, seed: int = 0) -> dict[str, Any]:
    """``eval.json`` from the attempts of ``results.jsonl`` (see the module docstring)."""
    per: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = per.setdefault(
            r["task_id"],
            {
                "task_id": r["task_id"],
                "env_id": r["env_id"],
                "category": r["category"],
                "source": r["source"],
                "source_file": r["source_file"],
                "scores": [],
                "failed": 0,
            },
        )
        if r["score"] is None:
            t["failed"] += 1
        else:
            t["scores"].append(r["score"])
    scored = {tid: t for tid, t in per.items() if t["scores"]}
    for t in per.values():
        n, c = len(t["scores"]), sum(1 for s in t["scores"] if s >= PASS)
        t.update(
            attempts=n,
            passed=c,
            mean=round(sum(t["scores"]) / n, 4) if n else None,
            **{"pass@k": round(pass_at_k(n, c, k), 4) if n >= k else None},
        )

    def stats(ids: list[str]) -> dict[str, Any] | None:
        tasks = [
            (
                scored[i]["attempts"],
                scored[i]["passed"],
                sum(scored[i]["scores"]) / scored[i]["attempts"],
            )
            for i in sorted(ids)
        ]
        return _group(tasks, k, random.Random(seed)) if tasks else None

    by_cat: dict[str, list[str]] = {}
    by_src: dict[str, list[str]] = {}
    for tid, t in scored.items():
        by_cat.setdefault(t["category"] or "-", []).append(tid)
        by_src.setdefault(t["source"] or "-", []).append(tid)
    return {
        "k": k,
        "pass_threshold": 1.0,
        "ci": {"method": "bootstrap over tasks, percentile", "level": 0.95, "resamples": RESAMPLES},
        "tasks": len(per),
        "tasks_unscored": len(per) - len(scored),
        "attempts": sum(len(t["scores"]) for t in per.values()),
        "attempts_failed": sum(t["failed"] for t in per.values()),
        "overall": stats(list(scored)),
        "by_category": {c: stats(ids) for c, ids in sorted(by_cat.items())},
        "by_source": {s: stats(ids) for s, ids in sorted(by_src.items())},
        "per_task": {tid: per[tid] for tid in sorted(per)},
    }


def _turns(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


class EvalRecorder:
    """The evaluation part of a run's recorder: ``results.jsonl`` as attempts arrive, ``eval.json``
    at the end."""

    def __init__(self, out: Path, k: int, seed: int = 0, policy: str = "") -> None:
        """``k``: attempts per task; ``seed`` seeds the bootstrap."""
        self.out, self.k, self.seed, self.policy = out, k, seed, policy
        self.rows: list[dict[str, Any]] = []
        self._done: set[tuple[str, int]] = set()
        self.tasks: set[str] = set()
        """Ids of the tasks that have at least one attempt recorded."""
        self._requests: dict[str, str] = {}
        """EnvRequested id -> the source it asked for (``KIND:VALUE``)."""
        self.envs: dict[str, dict[str, str]] = {}
        """Env id -> its category, source and source file."""

    def add_env(self, env: EnvSpec, source: str, source_file: str = "") -> None:
        """Note an environment's category (its domain) and where it came from."""
        prov = env.provenance
        self.envs[env.id] = {
            "category": env.domain or "",
            "source": source,
            "source_file": source_file or (prov.source if prov is not None else "") or source,
        }

    def record(self, ev: Event) -> tuple[dict[str, Any], Task] | None:
        """Account for one event; returns the ``results.jsonl`` row it made and its task (None:
        none)."""
        if isinstance(ev, EnvRequested):
            self._requests[ev.id] = f"{ev.source_kind}:{ev.source}" if ev.source else ev.source_kind
        elif isinstance(ev, EnvSynthesized):
            self.add_env(ev.env, self._requests.get(ev.parent, ""))
        elif isinstance(ev, RolloutScored) and ev.purpose == "eval":
            t, r = ev.trajectory, ev.reward
            return self._row(
                ev.task,
                t.index,
                # a score whose grading failed (a judge that did not answer, a task its reward
                # cannot score), or an attempt whose model never answered (the policy's call
                # failed: a wrong URL, a server down), is no score: listed with its error, out
                # of the figures; a model that answers badly is scored as it answered
                score=None if r.error or t.termination == "error" else r.score,
                policy=t.policy,
                criteria=dict(r.criteria),
                reasons=list(r.reasons),
                tokens={
                    "prompt": t.usage.prompt_tokens,
                    "completion": t.usage.completion_tokens,
                },
                turns=_turns(t.messages),
                calls=len(t.calls),
                seconds=round(t.seconds, 3),
                termination=t.termination,
                error=r.error or t.error,
            )
        elif isinstance(ev, PluginFailed) and ev.event:
            try:
                original = decode(ev.event)
            except DecodeError:
                return None
            if (
                isinstance(original, (RolloutRequested, RolloutFinished))
                and original.purpose == "eval"
            ):
                index = (
                    original.index
                    if isinstance(original, RolloutRequested)
                    else original.trajectory.index
                )
                return self._row(
                    original.task,
                    index,
                    score=None,
                    policy=getattr(original, "policy", self.policy),
                    termination=f"failed:{ev.classification}",
                    error=f"{ev.plugin} ({ev.role}) failed: {ev.error_type}: {ev.message}",
                )
        return None

    def _row(self, task: Task, attempt: int, **fields: Any) -> tuple[dict[str, Any], Task] | None:
        if (task.id, attempt) in self._done:
            return None
        self._done.add((task.id, attempt))
        env = self.envs.get(task.env_id, {})
        row: dict[str, Any] = {
            "task_id": task.id,
            "env_id": task.env_id,
            "category": env.get("category", ""),
            "source": env.get("source", ""),
            "source_file": env.get("source_file", ""),
            "split": task.split,
            "attempt": attempt,
            "policy": self.policy,
            "score": None,
            "passed": False,
            "criteria": {},
            "reasons": [],
            "tokens": {"prompt": 0, "completion": 0},
            "turns": 0,
            "calls": 0,
            "seconds": 0.0,
            "termination": "",
            "error": "",
        }
        row.update(fields)
        row["passed"] = row["score"] is not None and row["score"] >= PASS
        self.rows.append(row)
        self.tasks.add(task.id)
        return row, task

    def encode(self, row: dict[str, Any]) -> bytes:
        """One ``results.jsonl`` line."""
        return to_json(row)

    def write(self) -> dict[str, Any]:
        """Write ``eval.json`` and return it."""
        data = {"policy": self.policy, **figures(self.rows, self.k, self.seed)}
        write_atomic(self.out / "eval.json", json.dumps(data, indent=2))
        return data


# --------------------------------------------------------------------------- terminal output


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(x: list[float] | None) -> str:
    return "" if not x else f" [{x[0]:.2f}, {x[1]:.2f}]"


def table(data: dict[str, Any], per_task_limit: int = 50) -> str:
    """``eval.json`` as a text table: overall, by category and by source (and per task, when there
    are few)."""
    k = data.get("k", 1)
    head = f"{'':<34} {'tasks':>5} {'tries':>5}  {'mean':<20} {'pass@1':<20} {'pass@' + str(k):<20}"
    lines = [f"policy {data.get('policy') or '?'}, k = {k}", head]

    def line(name: str, g: dict[str, Any] | None) -> None:
        name = name if len(name) <= 34 else name[:9] + "…" + name[-24:]  # a path's end says most
        if g is None:
            lines.append(f"{name[:34]:<34} {'0':>5}")
            return
        lines.append(
            f"{name[:34]:<34} {g['tasks']:>5} {g['attempts']:>5}  "
            f"{(_fmt(g['mean']) + _ci(g['mean_ci'])):<20} "
            f"{(_fmt(g['pass@1']) + _ci(g['pass@1_ci'])):<20} "
            f"{(_fmt(g['pass@k']) + _ci(g['pass@k_ci'])):<20}"
        )

    line("overall", data.get("overall"))
    for c, g in (data.get("by_category") or {}).items():
        line(f"category {c}", g)
    for s, g in (data.get("by_source") or {}).items():
        line(f"source {s}", g)
    per = data.get("per_task") or {}
    if per and len(per) <= per_task_limit:
        lines.append("")
        lines.append(f"{'task':<34} {'category':<14} scores")
        for tid, t in per.items():
            scores = " ".join(f"{s:.2f}" for s in t["scores"]) + (
                f" (+{t['failed']} failed)" if t["failed"] else ""
            )
            lines.append(f"{(t['env_id'] or tid)[:34]:<34} {t['category'][:14]:<14} {scores}")
    if data.get("attempts_failed"):
        lines.append(
            f"{data['attempts_failed']} attempts failed (no score; see results.jsonl and "
            "failures.jsonl)"
        )
    return "\n".join(lines)


def load_eval(path: str) -> dict[str, Any]:
    """``eval.json`` of an evaluation run (its folder, or the file)."""
    p = Path(path).expanduser()
    f = p / "eval.json" if p.is_dir() else p
    try:
        data: dict[str, Any] = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--compare {path}: no readable eval.json ({exc}); name the folder of an "
            "`envkernel eval` run"
        ) from None
    return data


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two ``eval.json`` side by side: per task (by task id) and overall, with B - A deltas."""

    def d(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else round(y - x, 4)

    pa, pb = a.get("per_task") or {}, b.get("per_task") or {}
    tasks = []
    for tid in sorted(set(pa) | set(pb)):
        ta, tb = pa.get(tid), pb.get(tid)
        ma, mb = ta and ta.get("mean"), tb and tb.get("mean")
        ka, kb = ta and ta.get("pass@k"), tb and tb.get("pass@k")
        tasks.append(
            {
                "task_id": tid,
                "env_id": (ta or tb or {}).get("env_id", ""),
                "a": {"mean": ma, "pass@k": ka},
                "b": {"mean": mb, "pass@k": kb},
                "delta": {"mean": d(ma, mb), "pass@k": d(ka, kb)},
            }
        )
    oa, ob = a.get("overall") or {}, b.get("overall") or {}
    overall = {
        m: {"a": oa.get(m), "b": ob.get(m), "delta": d(oa.get(m), ob.get(m))}
        for m in ("mean", "pass@1", "pass@k")
    }
    common = [t for t in tasks if t["task_id"] in pa and t["task_id"] in pb]
    return {
        "a": {"policy": a.get("policy"), "k": a.get("k"), "tasks": a.get("tasks")},
        "b": {"policy": b.get("policy"), "k": b.get("k"), "tasks": b.get("tasks")},
        "common_tasks": len(common),
        "overall": overall,
        "per_task": tasks,
    }


def compare_table(c: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """The comparison of :func:`compare` as a text table."""
    a, b = names
    lines = [
        f"A = {a} (policy {c['a']['policy']}, k = {c['a']['k']}, {c['a']['tasks']} tasks)",
        f"B = {b} (policy {c['b']['policy']}, k = {c['b']['k']}, {c['b']['tasks']} tasks); "
        f"{c['common_tasks']} tasks in both",
        f"{'task':<34} {'mean A':>7} {'mean B':>7} {'delta':>7}  {'pass@k A':>8} "
        f"{'pass@k B':>8} {'delta':>7}",
    ]
    for t in c["per_task"]:
        lines.append(
            f"{(t['env_id'] or t['task_id'])[:34]:<34} {_fmt(t['a']['mean']):>7} "
            f"{_fmt(t['b']['mean']):>7} {_sign(t['delta']['mean']):>7}  "
            f"{_fmt(t['a']['pass@k']):>8} {_fmt(t['b']['pass@k']):>8} "
            f"{_sign(t['delta']['pass@k']):>7}"
        )
    for m, v in c["overall"].items():
        lines.append(
            f"{'overall ' + m:<34} {_fmt(v['a']):>7} {_fmt(v['b']):>7} {_sign(v['delta']):>7}"
        )
    return "\n".join(lines)


def _sign(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3f}"
