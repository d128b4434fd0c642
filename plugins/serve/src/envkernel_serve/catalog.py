"""What ``envkernel serve`` serves: the environments of an ENV_DIR or a RUN_DIR, and their tasks.

* ``ENV_DIR`` (a run's ``envs/<id>/``): that one environment; tasks come from ``--tasks FILE`` (the
  lines whose ``env_id`` is the environment's), else there are none and an episode is free play.
* ``RUN_DIR`` (a folder with ``envs/`` and usually ``tasks.jsonl``): every kept environment of the
  run, and the run's ``tasks.jsonl`` (or ``--tasks FILE``). The seed is the run's (``config.json``),
  so each session starts from the state its tasks were sampled on, and the reward model is the
  run's (its ``reward``, else its first active reward model, with the run's settings of it).
  An ENV_DIR inside a run folder (``<run>/envs/<id>/``) takes the reward of that run.

A task line that is not a task, or names an environment that is not served, is skipped with a
warning that says which line and why; the rest is served.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog

from envkernel_runtime.envdir import EnvDirError, load_env_dir
from envkernel_schemas import EnvSpec, Task

__all__ = ["Catalog", "CatalogError", "load_catalog", "run_reward", "tool_list"]

log = structlog.get_logger("envkernel.serve")


class CatalogError(ValueError):
    """The served folder or the tasks file cannot be used; the message says what to give instead."""


@dataclass
class Catalog:
    """The environments served (by id), their tasks in file order, and the seed of the initial
    state."""

    envs: dict[str, EnvSpec]
    tasks: list[Task] = field(default_factory=list)
    seed: int = 0
    source: str = ""
    skipped: list[str] = field(default_factory=list)
    """One line per task that was not served, saying why."""
    reward: str = ""
    """The run's reward model ("" when the folder has no run's ``config.json``)."""
    reward_settings: dict[str, Any] = field(default_factory=dict)
    """The run's settings of that reward model (``config.json``'s ``resolved`` table of it)."""

    def __post_init__(self) -> None:
        self.by_id = {t.id: t for t in self.tasks}

    @property
    def default_env(self) -> EnvSpec:
        """The environment of a session with no task (the first served one)."""
        return next(iter(self.envs.values()))

    def task(self, options: dict[str, Any], counter: int) -> Task | None:
        """The task a reset asks for: ``task_id``, else ``task_index``, else ``seed`` (modulo the
        number of tasks), else the next one in turn (``counter``). None when there are no tasks.

        ``env_id`` (optional) names the environment: the task index, seed and turn then count over
        that environment's tasks only, and a ``task_id`` of another environment is refused."""
        env_id = options.get("env_id")
        if env_id is not None and str(env_id) not in self.envs:
            raise CatalogError(
                f"no environment {env_id!r} is served here; the environments are: "
                f"{', '.join(self.envs)}"
            )
        if "task_id" in options and options["task_id"] is not None:
            tid = str(options["task_id"])
            if tid not in self.by_id:
                raise CatalogError(
                    f"no task {tid!r} is served here ({len(self.tasks)} tasks; see GET /metadata)"
                )
            found = self.by_id[tid]
            if env_id is not None and found.env_id != str(env_id):
                raise CatalogError(
                    f"task {tid!r} is in environment {found.env_id!r}, not {env_id!r}"
                )
            return found
        tasks = self.tasks if env_id is None else self.env_tasks(str(env_id))
        if not tasks:
            return None  # free play (of ``env_id``'s environment, when it names one)
        for key in ("task_index", "seed"):
            value = options.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise CatalogError(f"{key} must be an integer, got {value!r}")
                return tasks[value % len(tasks)]
        return tasks[counter % len(tasks)]

    def env_tasks(self, env_id: str) -> list[Task]:
        """The tasks of environment ``env_id``, in file order."""
        return [t for t in self.tasks if t.env_id == env_id]


def tool_list(env: EnvSpec, task: Task | None = None) -> list[dict[str, Any]]:
    """The tools offered in a session, as ``{"name", "description", "input_schema"}`` (the task's
    subset, if it names one)."""
    wanted = set(task.tools) if task is not None and task.tools else None
    return [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.parameters or {"type": "object", "properties": {}},
        }
        for t in env.tools
        if wanted is None or t.name in wanted
    ]


def _read_tasks(path: Path) -> tuple[list[Task], list[str]]:
    tasks: list[Task] = []
    skipped: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read the tasks file {path}: {exc}") from None
    dec = msgspec.json.Decoder(Task)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            tasks.append(dec.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            skipped.append(f"{path}:{n}: not a task ({exc})")
    return tasks, skipped


def run_reward(config_json: Path) -> tuple[str, dict[str, Any]]:
    """The reward model a run scored its training rollouts with, and its settings, from the run's
    ``config.json``: ``reward``, else the first active ``reward_model``. ("", {}) when unknown."""
    try:
        cfg = json.loads(config_json.read_text())
    except (OSError, ValueError):
        return "", {}
    if not isinstance(cfg, dict):
        return "", {}
    active = (cfg.get("components") or {}).get("reward_model") or []
    name = str(cfg.get("reward") or (active[0] if active else ""))
    raw = (cfg.get("resolved") or {}).get(name) if name else None
    return name, dict(raw) if isinstance(raw, dict) else {}


def load_catalog(
    target: str | Path, tasks_file: str | Path | None = None, seed: int | None = None
) -> Catalog:
    """Read ENV_DIR or RUN_DIR (see the module docstring). Raises :class:`CatalogError`."""
    d = Path(target)
    if not d.is_dir():
        raise CatalogError(
            f"{d} is not a folder; give a run folder (envkernel-out/<run-id>/) or one of its "
            "envs/<id>/ folders"
        )
    if (d / "env.json").is_file():
        found = _from_env_folder(d)
    elif (d / "envs").is_dir():
        found = _from_run_folder(d)
    else:
        raise CatalogError(
            f"{d} is neither an environment folder (with env.json) nor a run folder (with envs/); "
            "give envkernel-out/<run-id>/ or envkernel-out/<run-id>/envs/<env-id>/"
        )
    if tasks_file and not Path(tasks_file).is_file():
        raise CatalogError(
            f"--tasks {tasks_file}: no such file; give a tasks.jsonl (one Task per line)"
        )
    path = Path(tasks_file) if tasks_file else found.default_tasks
    tasks, skipped = _served_tasks(path, tasks_file, found.envs)
    for line in skipped:
        log.warning("task not served", detail=line)
    return Catalog(
        envs=found.envs,
        tasks=tasks,
        seed=found.seed if seed is None else seed,
        source=str(d),
        skipped=skipped,
        reward=found.reward[0],
        reward_settings=found.reward[1],
    )


@dataclass
class _Found:
    """What a folder holds: its environments, its tasks file, its run's reward and seed."""

    envs: dict[str, EnvSpec]
    default_tasks: Path | None
    reward: tuple[str, dict[str, Any]]
    seed: int = 0


def _from_env_folder(d: Path) -> _Found:
    """One environment folder (a run's ``envs/<id>/``: the run's reward)."""
    try:
        env = load_env_dir(d)
    except EnvDirError as exc:
        raise CatalogError(str(exc)) from None
    reward = run_reward(d.parent.parent / "config.json") if d.parent.name == "envs" else ("", {})
    return _Found({env.id: env}, None, reward)


def _from_run_folder(d: Path) -> _Found:
    """A run folder: its kept environments, ``tasks.jsonl``, its reward and seed."""
    envs: dict[str, EnvSpec] = {}
    for sub in sorted(p for p in (d / "envs").iterdir() if p.is_dir()):
        if not (sub / "env.json").is_file():
            continue  # a rejected environment (rejected.json) is not served
        try:
            env = load_env_dir(sub)
        except EnvDirError as exc:
            log.warning("environment not served", folder=str(sub), error=str(exc))
            continue
        envs[env.id] = env
    if not envs:
        raise CatalogError(
            f"{d}/envs holds no kept environment (each needs an env.json); was the run's "
            "every environment rejected?"
        )
    try:
        run_seed = int(json.loads((d / "config.json").read_text()).get("seed", 0))
    except (OSError, ValueError, AttributeError):
        run_seed = 0
    return _Found(envs, d / "tasks.jsonl", run_reward(d / "config.json"), run_seed)


def _served_tasks(
    path: Path | None, tasks_file: str | Path | None, envs: dict[str, EnvSpec]
) -> tuple[list[Task], list[str]]:
    """The tasks of ``path`` over the served environments, and why the others are not served."""
    tasks: list[Task] = []
    skipped: list[str] = []
    if path is None or not path.is_file():
        return tasks, skipped
    read, skipped = _read_tasks(path)
    for t in read:
        if t.env_id in envs:
            tasks.append(t)
        elif len(envs) > 1 or tasks_file is None:
            skipped.append(f"task {t.id}: its environment {t.env_id!r} is not served here")
    if tasks_file and read and not tasks:
        raise CatalogError(
            f"--tasks {tasks_file}: none of its {len(read)} tasks is over the served "
            f"environment(s) {', '.join(envs)}"
        )
    return tasks, skipped
