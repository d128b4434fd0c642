"""Read a run folder into what the report shows, tolerating the gaps of an interrupted run.

Every file is optional. A missing or unreadable file, or a torn JSON line (a run killed while
writing), adds a *note* (shown at the top of the page) and the rest of the report is built from
what is there: counts that ``summary.json`` would hold are recomputed from the JSON-lines files.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec


class NotARunFolder(ValueError):
    """The folder holds none of the files a run writes."""


class _Reward(msgspec.Struct):
    score: float = 0.0


class _Trajectory(msgspec.Struct):
    policy: str = "?"


class _Rollout(msgspec.Struct):
    """The few fields of a ``rollouts.jsonl`` line the report needs (the rest is skipped
    unparsed)."""

    task_id: str = ""
    env_id: str = "?"
    iteration: int = 0
    purpose: str = "train"
    trajectory: _Trajectory = msgspec.field(default_factory=_Trajectory)
    reward: _Reward | None = None


class _Call(msgspec.Struct):
    name: str = ""
    arguments: Any = None


class _Outcome(msgspec.Struct):
    mutates: bool = False
    answer: Any = None


class _Task(msgspec.Struct):
    """The fields of a ``tasks.jsonl`` line the report needs."""

    id: str = ""
    env_id: str = "?"
    request: str = ""
    calls: list[_Call] = msgspec.field(default_factory=list)
    outcome: _Outcome | None = None
    difficulty: float | None = None
    split: str = "train"


_ROLLOUT = msgspec.json.Decoder(_Rollout)
_TASK = msgspec.json.Decoder(_Task)
_ANY = msgspec.json.Decoder()

RUN_FILES = (
    "summary.json",
    "config.json",
    "tasks.jsonl",
    "rollouts.jsonl",
    "rejected.jsonl",
    "failures.jsonl",
    "envs",
)
"""What marks a folder as a run folder (any one of them)."""


@dataclass
class EnvInfo:
    """One environment of the run, from ``envs/<id>/`` and ``summary.json``'s ``verification``."""

    id: str
    domain: str = ""
    name: str = ""
    kept: bool | None = None
    operations: int | None = None
    kind: str = ""
    """What the env was made from (``model``, ``code`` or ``workspace``; a workspace's
    ``operations`` count task files)."""
    tools_built: int | None = None
    tools_kept: int | None = None
    tasks: int | None = None
    checks: int | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    graph: dict[str, Any] | None = None


SAMPLE_KINDS = ("read-only", "change", "multi-step")
"""The kinds of sample task the page shows per environment, one of each where the env has it."""


def task_kind(calls: int, mutates: bool) -> str:
    """A task's kind for the samples: ``multi-step`` (3 calls or more), else ``change`` (it
    changes state), else ``read-only``."""
    return "multi-step" if calls >= 3 else ("change" if mutates else "read-only")


@dataclass
class SampleTask:
    """One sample task of an environment: its request, reference and one rollout of it."""

    id: str
    env_id: str
    kind: str
    request: str
    calls: list[tuple[str, Any]]
    """The reference's calls: (tool name, arguments)."""
    answer: str
    rollout: dict[str, Any] | None = None
    """One rollout of the task (a ``rollouts.jsonl`` line), the latest iteration's first."""


@dataclass
class RunData:
    """Everything the page shows, with the notes on what was missing or damaged."""

    folder: Path
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    envs: dict[str, EnvInfo] = field(default_factory=dict)
    rewards: dict[tuple[str, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    """(policy, iteration) → the training rollouts' scores."""
    unscored: int = 0
    chain_lengths: Counter[int] = field(default_factory=Counter)
    difficulty: list[float] = field(default_factory=list)
    splits: Counter[str] = field(default_factory=Counter)
    tasks_per_env: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    samples: dict[str, list[SampleTask]] = field(default_factory=dict)
    """env id → its sample tasks (at most one per kind of :data:`SAMPLE_KINDS`)."""
    eval: dict[str, Any] | None = None
    """``eval.json`` of an ``envkernel eval`` run."""
    notes: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The run id (from the summary or config, else the folder's name)."""
        return str(self.summary.get("run_id") or self.config.get("run_id") or self.folder.name)

    @property
    def complete(self) -> bool:
        """Whether the run wrote its summary and was not aborted."""
        return bool(self.summary) and not self.summary.get("aborted")

    def reward_curve(self) -> dict[str, list[tuple[int, float]]]:
        """Mean reward per iteration: the summary's overall and held-out curves, else per policy
        from the rollouts."""
        curves: dict[str, list[tuple[int, float]]] = {}
        its = [it for it in self.summary.get("iterations") or [] if isinstance(it, dict)]
        for key, label in (
            ("mean_reward", "all rollouts"),
            ("mean_reward_train", "train tasks"),
            ("mean_reward_heldout", "held-out tasks"),
        ):
            pts = [
                (int(it.get("iteration", i)), float(it[key]))
                for i, it in enumerate(its)
                if isinstance(it.get(key), int | float)
            ]
            if pts:
                curves[label] = pts
        if not curves:
            for policy in sorted({p for p, _ in self.rewards}):
                pts = sorted(
                    (i, sum(v) / len(v)) for (p, i), v in self.rewards.items() if p == policy and v
                )
                curves[f"{policy} (from rollouts.jsonl)"] = pts
        return curves

    def holdout_envs(self) -> list[str]:
        """The environments a trainer was told never to learn from (any component's
        ``holdout_envs`` setting in the run's config)."""
        found: list[str] = []
        for table in ("settings", "overrides"):
            for value in (self.config.get(table) or {}).values():
                if isinstance(value, dict) and isinstance(value.get("holdout_envs"), list):
                    found += [str(e) for e in value["holdout_envs"] if str(e) not in found]
        return found

    def learning_curves(self) -> dict[str, list[tuple[int, float]]]:
        """Per kind of task, the mean reward per iteration as a trainer measured it (the
        ``reward_train``, ``reward_heldout_split`` and ``reward_heldout_env`` metrics of its
        updates, as the ``trl`` trainer reports them); {} when no update has them."""
        held = ", ".join(self.holdout_envs()) or "never trained on"
        labels = {
            "reward_train": "train split",
            "reward_heldout_split": "held-out split (chain signatures never trained on)",
            "reward_heldout_env": f"held-out environment ({held})",
        }
        curves: dict[str, list[tuple[int, float]]] = {}
        its = [it for it in self.summary.get("iterations") or [] if isinstance(it, dict)]
        for i, it in enumerate(its):
            for trainer, update in sorted((it.get("updates") or {}).items()):
                metrics = update.get("metrics") if isinstance(update, dict) else None
                for key, label in labels.items():
                    value = (metrics or {}).get(key)
                    if isinstance(value, int | float):
                        name = label if len(it["updates"]) == 1 else f"{trainer}: {label}"
                        curves.setdefault(name, []).append((int(it.get("iteration", i)), value))
        return curves


def _lines(
    path: Path,
    what: str,
    notes: list[str],
    parse: Callable[[bytes], Any],
    progress: Callable[[int], None] | None,
) -> Iterator[Any]:
    """Parsed lines of a JSON-lines file; a line that does not parse is skipped and counted in a
    note."""
    bad = 0
    first_bad = 0
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        notes.append(f"{path.name} could not be read ({exc}); {what} are left out.")
        return
    with fh:
        for n, raw in enumerate(fh, 1):
            if progress is not None:
                progress(len(raw))
            if not raw.strip():
                continue
            try:
                yield parse(raw)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
                bad += 1
                first_bad = first_bad or n
    if bad:
        notes.append(
            f"{path.name}: {bad} line(s) could not be read (first at line {first_bad}; a run "
            f"stopped while writing leaves a torn last line); the {what} on them are left out."
        )


def _json(path: Path, notes: list[str]) -> dict[str, Any] | None:
    """A JSON object file, or None (with a note when it exists but is damaged)."""
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        notes.append(
            f"{path.relative_to(path.parents[1]) if len(path.parents) > 1 else path.name} is "
            f"damaged ({exc}); it is left out."
        )
        return None
    if not isinstance(value, dict):
        notes.append(f"{path.name} does not hold a JSON object; it is left out.")
        return None
    return value


def _int_counts(value: Any) -> dict[str, int]:
    return (
        {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}
        if isinstance(value, dict)
        else {}
    )


def _check_folder(folder: Path) -> None:
    """A folder that holds none of the files a run writes is :class:`NotARunFolder` (naming the run
    folders it holds, if any)."""
    if not folder.is_dir():
        raise NotARunFolder(
            f"{folder} is not a folder: give the folder of one run (envkernel-out/<run-id>/)"
        )
    if not any((folder / name).exists() for name in RUN_FILES):
        subs = sorted(
            p.name for p in folder.iterdir() if p.is_dir() and (p / "config.json").exists()
        )
        hint = f" It holds run folders: {', '.join(subs[-3:])}; give one of them." if subs else ""
        raise NotARunFolder(
            f"{folder} is not a run folder: it holds none of {', '.join(RUN_FILES)}.{hint}"
        )


def _read_summary(data: RunData) -> None:
    """``summary.json`` and ``config.json``, with a note when the run did not finish."""
    notes = data.notes
    data.summary = _json(data.folder / "summary.json", notes) or {}
    data.config = _json(data.folder / "config.json", notes) or {}
    if not data.summary:
        notes.append(
            "summary.json is missing: the run did not finish (killed, or still running). "
            "Counts below are recomputed from the JSON-lines files; the verification counts, "
            "mutants and iteration means are not known."
        )
    elif data.summary.get("aborted"):
        notes.append(
            f"The run stopped early: {data.summary['aborted']}. What it produced up to then "
            "is shown."
        )


def _read_tasks(data: RunData, progress: Callable[[int], None] | None) -> None:
    """The task distributions of ``tasks.jsonl`` and the sample tasks the page shows."""
    pool: dict[tuple[str, str], list[_Task]] = defaultdict(list)
    for t in _lines(data.folder / "tasks.jsonl", "tasks", data.notes, _TASK.decode, progress):
        data.chain_lengths[len(t.calls)] += 1
        data.splits[t.split] += 1
        data.tasks_per_env[t.env_id] += 1
        if t.difficulty is not None:
            data.difficulty.append(t.difficulty)
        _offer(pool, t)
    data.samples = _pick_samples(pool)


def _read_rollouts(data: RunData, progress: Callable[[int], None] | None) -> None:
    """The reward histograms of ``rollouts.jsonl`` and each sample task's rollout: the latest
    iteration's first, preferring one that called a tool."""
    wanted = {s.id: s for ss in data.samples.values() for s in ss}
    best: dict[str, tuple[int, int]] = {}
    purpose = "eval" if data.eval is not None else "train"
    for r, raw in _lines(
        data.folder / "rollouts.jsonl",
        "rollouts",
        data.notes,
        lambda raw: (_ROLLOUT.decode(raw), raw),
        progress,
    ):
        if r.task_id in wanted:
            full = _ANY.decode(raw)
            traj = full.get("trajectory") if isinstance(full, dict) else None
            rank = (r.iteration, int(bool(isinstance(traj, dict) and traj.get("calls"))))
            if r.task_id not in best or rank > best[r.task_id]:
                best[r.task_id] = rank
                wanted[r.task_id].rollout = full
        if r.purpose != purpose:
            continue  # an eval run's histograms are of its eval rollouts
        if r.reward is None:
            data.unscored += 1
        else:
            data.rewards[(r.trajectory.policy, r.iteration)].append(r.reward.score)


def _fill_counts(data: RunData) -> None:
    """Counts an environment or an unfinished summary lacks, from the tasks."""
    for env_id, n in data.tasks_per_env.items():
        if env_id in data.envs and data.envs[env_id].tasks is None:
            data.envs[env_id].tasks = n
    if not data.chain_lengths and isinstance(data.summary.get("chain_lengths"), dict):
        data.chain_lengths.update(
            {int(k): int(v) for k, v in data.summary["chain_lengths"].items()}
        )


def _read_rejected(data: RunData, progress: Callable[[int], None] | None) -> None:
    """Rejection counts: the summary's (complete: env and task), else ``rejected.jsonl``'s and the
    rejected environments'."""
    rows = _lines(
        data.folder / "rejected.jsonl", "rejected tasks", data.notes, _ANY.decode, progress
    )
    for row in rows:
        if isinstance(row, dict):
            data.rejected[f"task:{row.get('reason', '?')}"] += 1
    if isinstance(data.summary.get("rejected"), dict):
        data.rejected = Counter(_int_counts(data.summary["rejected"]))
    else:
        data.rejected.update(
            Counter(f"env:{e.reason or 'rejected'}" for e in data.envs.values() if e.kept is False)
        )
        data.rejected = Counter({k: v for k, v in data.rejected.items() if v})


_MISSING = (
    (
        "rollouts.jsonl",
        "rollouts.jsonl is missing: no training rollout was scored, so there are no "
        "reward histograms.",
    ),
    (
        "tasks.jsonl",
        "tasks.jsonl is missing: no task passed the gate, so the task distributions are empty.",
    ),
)
"""Files whose absence the page explains, and how."""


def load_run(folder: Path, progress: Callable[[int], None] | None = None) -> RunData:
    """Read the run folder ``folder``; ``progress`` is called with the bytes read from the
    JSON-lines files."""
    folder = Path(folder)
    _check_folder(folder)
    data = RunData(folder)
    _read_summary(data)
    data.eval = _json(folder / "eval.json", data.notes)
    _load_envs(data)
    _read_tasks(data, progress)
    _read_rollouts(data, progress)
    _fill_counts(data)
    _read_rejected(data, progress)
    data.failures = [
        row
        for row in _lines(folder / "failures.jsonl", "failures", data.notes, _ANY.decode, progress)
        if isinstance(row, dict)
    ]
    data.notes.extend(note for name, note in _MISSING if not (folder / name).exists())
    return data


_KEEP = 3  # candidates kept per (env, kind): the smallest ids, so the pick does not depend on order


def _offer(pool: dict[tuple[str, str], list[_Task]], t: _Task) -> None:
    """Keep ``t`` as a sample candidate if its id is among the smallest of its env and kind."""
    kind = task_kind(len(t.calls), bool(t.outcome and t.outcome.mutates))
    cands = pool[(t.env_id, kind)]
    cands.append(t)
    cands.sort(key=lambda c: c.id)
    del cands[_KEEP:]


def _pick_samples(pool: dict[tuple[str, str], list[_Task]]) -> dict[str, list[SampleTask]]:
    """Per environment, one task of each kind (the smallest id), topped up from the other kinds
    to :data:`SAMPLE_KINDS`'s length when a kind is missing."""
    out: dict[str, list[SampleTask]] = {}
    for env_id in sorted({e for e, _ in pool}):
        chosen: list[tuple[str, _Task]] = []
        for kind in SAMPLE_KINDS:
            if pool.get((env_id, kind)):
                chosen.append((kind, pool[(env_id, kind)][0]))
        for kind in SAMPLE_KINDS:
            for t in pool.get((env_id, kind), [])[1:]:
                if len(chosen) < len(SAMPLE_KINDS):
                    chosen.append((kind, t))
        out[env_id] = [
            SampleTask(
                id=t.id,
                env_id=env_id,
                kind=kind,
                request=t.request,
                calls=[(c.name, c.arguments) for c in t.calls],
                answer=_text(t.outcome.answer if t.outcome else ""),
            )
            for kind, t in chosen
        ]
    return out


def _text(value: Any) -> str:
    """A value as text: strings as they are, anything else as compact JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _apply_spec(env: EnvInfo, spec: dict[str, Any]) -> None:
    """What ``env.json`` says of an environment: its names, operations, tools and report."""
    env.domain, env.name = str(spec.get("domain") or ""), str(spec.get("name") or "")
    env.operations = spec.get("operations") if isinstance(spec.get("operations"), int) else None
    report = spec.get("report") if isinstance(spec.get("report"), dict) else {}
    env.kept = bool(report.get("kept", True))
    kept = report.get("tools_kept")
    env.tools_kept = len(kept) if isinstance(kept, list) else len(spec.get("tools") or [])
    env.tools_built = env.tools_kept + len(report.get("tools_dropped") or {})
    env.skipped = _int_counts(spec.get("skipped"))


def _load_env_folder(data: RunData, d: Path) -> None:
    """One ``envs/<id>/`` folder: env.json, rejected.json, graph.json (a kept env's missing graph
    noted, but in an eval run, which samples nothing)."""
    env = data.envs.setdefault(d.name, EnvInfo(d.name))
    spec = _json(d / "env.json", data.notes)
    if spec is not None:
        _apply_spec(env, spec)
    rejected = _json(d / "rejected.json", data.notes)
    if rejected is not None:
        env.kept = False
        env.reason = str(rejected.get("reason") or "")
    graph = _json(d / "graph.json", data.notes)
    if graph is not None:
        env.graph = graph
    elif spec is not None and env.kept and data.eval is None:  # eval runs sample nothing
        data.notes.append(
            f"envs/{d.name}/graph.json is missing: its tool graph is not drawn (the "
            "sampler writes it)."
        )


_VERIFIED_COUNTS = ("operations", "tools_built", "tools_kept", "tasks", "checks")
"""Counts of ``summary.json``'s ``verification`` entries that win over the folder's."""


def _apply_verification(env: EnvInfo, v: dict[str, Any]) -> None:
    """What ``summary.json``'s ``verification`` says of an environment (it wins)."""
    env.kept = bool(v.get("kept", env.kept))
    env.kind = str(v.get("kind") or env.kind)
    for key in _VERIFIED_COUNTS:
        if isinstance(v.get(key), int):
            setattr(env, key, v[key])
    env.dropped = _int_counts(v.get("dropped")) or env.dropped
    env.skipped = _int_counts(v.get("skipped")) or env.skipped


def _load_envs(data: RunData) -> None:
    """Environments from ``envs/<id>/`` (env.json, rejected.json, graph.json) and
    ``summary.json``."""
    verification = (
        data.summary.get("verification")
        if isinstance(data.summary.get("verification"), dict)
        else {}
    )
    envs_dir = data.folder / "envs"
    folders = sorted(p for p in envs_dir.iterdir() if p.is_dir()) if envs_dir.is_dir() else []
    for d in folders:
        _load_env_folder(data, d)
    for env_id, v in verification.items():
        if isinstance(v, dict):
            _apply_verification(data.envs.setdefault(env_id, EnvInfo(env_id)), v)
    if not data.envs:
        data.notes.append(
            "No environment is recorded (no envs/ folder and no verification in summary.json)."
        )
