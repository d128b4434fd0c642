"""Run configuration: one TOML file, environment variables and flags, in that rising precedence.

The file has top-level run settings and one table per component::

    plugins = "+my-sampler,-chains"
    seed = 7
    policy = "reference"
    [traceoutcome]
    tau = 0.7

Each component's table is decoded into its ``Settings`` Struct, so a wrong key is a clear error.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import msgspec

from envkernel_bus import REDACTED, redact

from .errors import ConfigError

PRESET_GROUP = "envkernel.presets"
"""Entry-point group of the presets (the one :mod:`envkernel.plugins` reads the plugins from)."""
PRESET_CONFIG = "default-config"
"""Entry point of the group that gives the default preset's run settings: ``KEY=VALUE; ...``, a
list's items separated by commas (``policy=reference; sources=openapi``)."""


@functools.cache
def preset_config() -> dict[str, str]:
    """The run settings the default preset declares (read once per process): the components a
    run uses unless told otherwise, so no plugin name is wired into the kernel."""
    out: dict[str, str] = {}
    for ep in entry_points(group=PRESET_GROUP, name=PRESET_CONFIG):
        for item in ep.value.split(";"):
            key, eq, value = item.partition("=")
            if eq and key.strip():
                out[key.strip()] = value.strip()
    return out


def _preset(key: str) -> str:
    return preset_config().get(key, "")


def _preset_list(key: str) -> list[str]:
    return [v.strip() for v in _preset(key).split(",") if v.strip()]


class RunConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The resolved configuration of one run (what ``config.json`` and the runs bucket hold)."""

    run_id: str = ""
    """Run id (a NATS token); generated when empty."""
    plugins: str = ""
    """Plugin selection: a full list ``a,b,c`` or changes ``+x,-y`` to the default preset."""
    selected: list[str] = msgspec.field(default_factory=list)
    """Resolved entry-point names (filled in by the kernel)."""
    components: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """Role -> active component names (filled in by the kernel)."""
    seed: int = 0
    """Seed of everything random in the run."""
    policy: str = msgspec.field(default_factory=lambda: _preset("policy"))
    """Policy that rolls out the emitted tasks (default: the preset's, ``reference``)."""
    gate_reference: str = msgspec.field(default_factory=lambda: _preset("gate_reference"))
    """Policy whose rollout must score 1 for a task to pass the gate (default: the preset's)."""
    gate_nothing: str = msgspec.field(default_factory=lambda: _preset("gate_nothing"))
    """Policy whose rollout must score 0 for a task to pass the gate (default: the preset's)."""
    gate_mutant: str = msgspec.field(default_factory=lambda: _preset("gate_mutant"))
    """Policy of the gate's near-miss mutants of the reference, each of which must score below 1
    (default: the preset's; off when no selected plugin provides it, or ``""``)."""
    gate_mutants: int = 5
    """Mutant rollouts per task at the gate (role ``mutant``, kind numbers 0, 1, ...: the mutant
    policy plays the kind its request's ``mutant`` names)."""
    runner: str = ""
    """Sandbox runner component (default: the first active one)."""
    verifier: str = ""
    """Verifier component (default: the first active one)."""
    reward: str = ""
    """Reward-model component that scores the training rollouts (default: the first active one)."""
    calibrate: int = 0
    """Calibration attempts per gated task (0: off); tasks solved in all or none are dropped."""
    calibrate_policy: str = ""
    """Policy of the calibration attempts (default: ``policy``)."""
    calibrate_keep: bool = False
    """Keep the tasks solved in all or none of the calibration attempts (with their solve rate)
    instead of dropping them: for a real model whose solve rates are to be recorded, not
    filtered on."""
    user: str = ""
    """User component a policy talks with over several turns (default: the first active one; none:
    one turn)."""
    gate_solver: str = ""
    """Policy that looks for a reference of a task that has none (an imported benchmark task): its
    first of ``gate_solver_k`` attempts the gate's judge scores 1 becomes the task's reference, and
    the task then goes through the gate; a task it never solves is rejected as ``unsolved`` (empty:
    off)."""
    gate_solver_k: int = 4
    """Attempts of ``gate_solver`` per task without a reference."""
    evaluate: bool = False
    """Evaluation mode (``envkernel eval``): no gate and no reference; every task (from ``sources``
    or ``eval_tasks``) gets ``rollouts_per_task`` attempts of ``policy`` (purpose ``eval``),
    recorded in ``results.jsonl`` and summed up in ``eval.json``."""
    eval_tasks: list[str] = msgspec.field(default_factory=list)
    """Task files to evaluate (evaluation mode): a run folder or its ``tasks.jsonl`` (the
    environments are read from the ``envs/`` folder beside it)."""
    eval_split: str = "heldout"
    """Which tasks of ``eval_tasks`` to evaluate: ``heldout`` (default), ``train`` or ``all``."""
    gate_reward: str = msgspec.field(default_factory=lambda: _preset("gate_reward"))
    """Reward-model component that scores the gate's rollouts (default: the preset's, the trace +
    outcome check ``traceoutcome``), so the training reward never decides which tasks exist."""
    sources: list[str] = msgspec.field(default_factory=lambda: _preset_list("sources"))
    """Sources: a source kind (``openapi`` = the shipped corpus, ``sample``) or ``KIND:VALUE``
    (``openapi:specs/shop.yaml``); default: the preset's."""
    envs: int = 1
    """Environment requests per source."""
    rollouts_per_task: int = 1
    """Group size G: rollouts of the chosen policy per emitted task."""
    iterations: int = 1
    """Training iterations."""
    infra_retries: int = 2
    """Times a rollout that met an infrastructure fault (a sandbox died, the bus did not answer) is
    tried again before it fails as ``infra``."""
    remote: list[str] = msgspec.field(default_factory=list)
    """``ROLE:COMPONENT`` entries this run uses but does not serve: ``envkernel worker`` processes
    elsewhere (a GPU box for a trainer) serve them over NATS. They need not be installed here."""
    own_work: bool = False
    """The run's own process and its local workers (``--workers``) serve its work, on consumers of
    their own; other processes leave it (but ``remote``)."""
    out: str = ""
    """Run folder (resolved)."""
    settings: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Component -> its settings table from the file (secrets removed when stored)."""
    overrides: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Component -> settings given as flags (``--set``); they win over environment and file."""
    resolved: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Component -> its settings with every default filled in (filled in by the kernel; secrets
    redacted)."""


TOP_LEVEL = set(RunConfig.__struct_fields__) - {
    "settings",
    "overrides",
    "selected",
    "components",
    "resolved",
}
"""Keys allowed at the top of the TOML file."""

ENV_VARS = {
    "ENVKERNEL_PLUGINS": "plugins",
    "ENVKERNEL_SEED": "seed",
    "ENVKERNEL_POLICY": "policy",
    "ENVKERNEL_RUNNER": "runner",
    "ENVKERNEL_ROLLOUTS_PER_TASK": "rollouts_per_task",
}
"""Environment variables for top-level settings (below flags, above the file)."""


def read_file(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Read a TOML config file; a missing or malformed file is a :class:`ConfigError`."""
    if path is None:
        return {}
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
    return data


def split_file(
    data: dict[str, Any], path: str = "config"
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Split file data into top-level settings and component tables; unknown keys are errors."""
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            sections[key] = value
        elif key in TOP_LEVEL:
            top[key] = value
        else:
            raise ConfigError(
                f"{path}: unknown setting {key!r}; valid top-level settings are "
                f"{', '.join(sorted(TOP_LEVEL))}, "
                "and each component has its own [table]"
            )
    return top, sections


def from_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Top-level settings from ``ENVKERNEL_*`` variables."""
    environ = dict(os.environ if environ is None else environ)
    out: dict[str, Any] = {}
    for var, key in ENV_VARS.items():
        if environ.get(var):
            out[key] = environ[var]
    return out


def build(
    file_top: dict[str, Any],
    env: dict[str, Any],
    flags: dict[str, Any],
    sections: dict[str, dict[str, Any]],
) -> RunConfig:
    """Merge file < env < flags into a :class:`RunConfig` (types checked and converted)."""
    merged: dict[str, Any] = {
        **file_top,
        **env,
        **{k: v for k, v in flags.items() if v is not None},
    }
    merged["settings"] = sections
    try:
        return msgspec.convert(merged, RunConfig, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"bad setting: {exc}") from None


def settings_for(
    component: str,
    settings_type: type | None,
    raw: dict[str, Any] | None,
    environ: dict[str, str] | None = None,
    flags: dict[str, Any] | None = None,
) -> Any:
    """Decode a component's settings into its Struct: file table < environment (``__env__``) <
    flags."""
    if settings_type is None:
        if raw or flags:
            raise ConfigError(f"[{component}] has settings, but component {component!r} takes none")
        return None
    data = {k: v for k, v in (raw or {}).items() if v != REDACTED}
    env: Mapping[str, str] = os.environ if environ is None else environ
    for field, var in getattr(settings_type, "__env__", {}).items():
        if env.get(var):
            data[field] = env[var]
    data.update({k: v for k, v in (flags or {}).items() if v != REDACTED})
    try:
        return msgspec.convert(data, settings_type, strict=False)
    except msgspec.ValidationError as exc:
        fields = ", ".join(getattr(settings_type, "__struct_fields__", ()))
        raise ConfigError(f"[{component}]: {exc} (valid settings: {fields or 'none'})") from None


def public(config: RunConfig) -> dict[str, Any]:
    """The config as plain data with secrets removed (for ``config.json``, the KV bucket,
    events)."""
    data: dict[str, Any] = msgspec.to_builtins(config)
    data["settings"] = {k: redact(v) for k, v in data.get("settings", {}).items()}
    data["overrides"] = {k: redact(v) for k, v in data.get("overrides", {}).items()}
    data["resolved"] = {k: redact(v) for k, v in data.get("resolved", {}).items()}
    return data
