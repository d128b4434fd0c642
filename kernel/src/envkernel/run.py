"""Run lifecycle: resolve the config, start the bus, serve the plugins, coordinate, write the
summary."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog
from nats.js.errors import KeyNotFoundError

from envkernel_bus import Bus, EmbeddedServer, discovery, env_seconds, on_signals, without_secrets
from envkernel_bus.progress import Progress, Status
from envkernel_bus.subjects import STREAM, durable_name
from envkernel_runtime.envdir import write_atomic
from envkernel_runtime.workers import check_remote, start_local_workers, stop_local_workers
from envkernel_schemas import RunFinished, event_id, is_token

from . import config as cfgmod
from .config import RunConfig
from .coordinator import Coordinator
from .errors import (
    EXIT_ABORTED,
    EXIT_EMPTY,
    EXIT_FAILURES,
    EXIT_OK,
    ConfigError,
    PluginError,
    RunError,
)
from .evaluation import EvalRecorder
from .event_routes import BROADCAST_INPUTS, WORK_INPUTS, first, synthesizer_for
from .plugins import Registry, load, resolve_selection
from .recorder import Recorder
from .roles import ROLES
from .stages import KERNEL
from .worker import Worker

log = structlog.get_logger("envkernel.run")

REQUIRED_ROLES = ("synthesizer", "sandbox_runner", "verifier", "sampler", "policy", "reward_model")
"""Roles a full run cannot do without (trainers are optional)."""


def new_run_id() -> str:
    """A fresh run id: time plus randomness, a valid NATS token."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _path_source(source: str, registry: Registry) -> str:
    """A bare path (``--source specs/``) goes to the first synthesizer that reads files
    (``accepts_paths``).

    A path that does not exist (bare, or ``KIND:PATH`` for a synthesizer that reads files) is a
    :class:`ConfigError`.
    """
    kind, _, value = source.partition(":")
    readers = [
        c for c in registry.by_role("synthesizer") if getattr(c.factory, "accepts_paths", False)
    ]
    if kind in {k for c in registry.by_role("synthesizer") for k in c.sources}:
        path = value if any(kind in c.sources for c in readers) else ""
    else:
        path = (
            source
            if "/" in source
            or source.startswith((".", "~"))
            or Path(source).suffix
            or Path(source).exists()
            else ""
        )
    if path and not Path(path).expanduser().exists():
        raise ConfigError(f"--source {source!r}: no such file or folder: {path}")
    if not path or path == value:
        return source
    if readers:
        return f"{readers[0].sources[0]}:{source}"
    raise PluginError(
        f"--source {source!r} is a path, but no selected synthesizer reads files (add one, "
        "e.g. --plugins +openapi)"
    )


def _check_source(source: str, registry: Registry) -> None:
    """Check a ``KIND:VALUE`` source up front with its synthesizer's ``check_source`` (a factory
    attribute, like ``accepts_paths``: ``check_source(value) -> str | None``, what is wrong): a bad
    spec file is a usage error (exit 2) before anything runs, not a plugin failure mid-run."""
    kind, colon, value = source.partition(":")
    if not colon or not value:
        return
    for c in registry.by_role("synthesizer"):
        check = getattr(c.factory, "check_source", None)
        if kind in c.sources and callable(check):
            problem = check(value)
            if problem:
                raise ConfigError(f"--source {source!r}: {problem}")
            return


@dataclass
class Prepared:
    """A resolved run: its config and the loaded plugins."""

    config: RunConfig
    registry: Registry
    out_dir: Path
    warnings: list[str] = field(default_factory=list)


def remote_components(entries: list[str]) -> list[tuple[str, str]]:
    """Parse ``--remote ROLE:COMPONENT`` entries (components served by workers elsewhere)."""
    out = []
    for entry in entries:
        role, colon, name = entry.partition(":")
        if not colon or role not in ROLES or not is_token(name):
            raise ConfigError(
                f"--remote {entry!r}: expected ROLE:COMPONENT with ROLE one of "
                f"{', '.join(ROLES)}, e.g. trainer:mytrainer"
            )
        out.append((role, name))
    return out


def stall_seconds() -> float:
    """``ENVKERNEL_STALL_SECONDS``: how long a run may make no progress before it says what it waits
    for (≥ 1; default 60)."""
    try:
        return env_seconds("ENVKERNEL_STALL_SECONDS", 60)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _check_numbers(config: RunConfig, run_id: str) -> None:
    """The run id is a token and the counts are in range."""
    if not is_token(run_id):
        raise ConfigError(
            f"run id {run_id!r} is not valid: use letters, digits, - and _ (at most 64)"
        )
    stall_seconds()
    if (
        config.iterations < 1
        or config.rollouts_per_task < 1
        or config.infra_retries < 0
        or config.calibrate < 0
        or config.gate_solver_k < 1
    ):
        raise ConfigError(
            "iterations, rollouts_per_task and gate_solver_k must be at least 1, "
            f"infra_retries and calibrate at least 0 (got {config.iterations}, "
            f"{config.rollouts_per_task}, {config.gate_solver_k}, {config.infra_retries} and "
            f"{config.calibrate})"
        )


def _components(registry: Registry, remote: list[tuple[str, str]]) -> dict[str, list[str]]:
    """The components of each role: the loaded ones, then the remote ones (``--remote``)."""
    components = {role: [c.name for c in registry.by_role(role)] for role in ROLES}
    for role, name in remote:
        local = registry.components.get(name)
        if local is not None and local.role != role:
            raise ConfigError(
                f"--remote {role}:{name}: the selected component {name!r} is a {local.role}, "
                f"not a {role}"
            )
        if name not in components[role]:
            components[role].append(name)
    return components


def _check_eval(config: RunConfig) -> None:
    """The evaluation settings are set only in evaluation mode, and make sense there."""
    if config.eval_tasks and not config.evaluate:
        raise ConfigError("eval_tasks is a setting of evaluation mode (envkernel eval)")
    if config.evaluate:
        from .evaluation import SPLITS

        if config.eval_split not in SPLITS:
            raise ConfigError(
                f"eval_split {config.eval_split!r}: expected one of {', '.join(SPLITS)}"
            )
        if not config.sources and not config.eval_tasks:
            raise ConfigError("envkernel eval: no tasks: give --source or --tasks")


def _check_roles(config: RunConfig, components: dict[str, list[str]], selected: list[str]) -> None:
    """Every role the run needs has a component (no source: no synthesizer, verifier, sampler)."""
    needed = (
        REQUIRED_ROLES
        if config.sources
        else tuple(r for r in REQUIRED_ROLES if r not in ("synthesizer", "verifier", "sampler"))
    )
    for role in needed:
        if not components[role]:
            raise PluginError(
                f"no plugin for role {role!r} is selected (plugins: "
                f"{', '.join(selected) or 'none'}); add one with --plugins +NAME"
            )


def _check_policies(config: RunConfig, policies: set[str]) -> None:
    """The policies the run names are selected; the gate's two rollouts are two policies."""
    if (
        config.gate_reference == config.gate_nothing and not config.evaluate
    ):  # the gate's two rollouts must be two policies
        raise ConfigError(
            f"gate_reference and gate_nothing are both {config.gate_reference!r}: the gate "
            "compares two policies"
        )
    checked = [("--policy", config.policy)]
    if not config.evaluate:  # an evaluation has no gate
        checked += [
            ("gate_reference", config.gate_reference),
            ("gate_nothing", config.gate_nothing),
        ]
        if config.gate_solver:
            checked.append(("--gate-solver", config.gate_solver))
    for what, name in checked:
        if name not in policies:
            raise PluginError(
                f"{what} names policy {name!r}, which no selected plugin provides; policies: "
                f"{', '.join(sorted(policies))}"
            )


def _check_named(config: RunConfig, components: dict[str, list[str]]) -> None:
    """The runner, verifier and reward models the run names are active."""
    for what, role, name in (
        ("runner", "sandbox_runner", config.runner),
        ("verifier", "verifier", config.verifier),
        ("reward", "reward_model", config.reward),
    ):
        if name and name not in components[role]:
            raise PluginError(
                f"{what} = {name!r} is not an active {role}; active: {', '.join(components[role])}"
            )
    if config.gate_reward not in components["reward_model"] and not config.evaluate:
        raise PluginError(
            f"gate_reward = {config.gate_reward!r} (the gate's judge) is not an active "
            f"reward_model; active: {', '.join(components['reward_model'])}. Select its "
            "plugin, or set gate_reward (--gate-reward NAME)"
        )


def _resolve_sources(
    config: RunConfig, registry: Registry, components: dict[str, list[str]]
) -> list[str]:
    """The run's sources, bare paths given their kind; each has a synthesizer and checks out."""
    sources = {c.name: c.sources for c in registry.by_role("synthesizer")}
    resolved = [_path_source(s, registry) for s in config.sources]
    for source in resolved:
        kind = source.partition(":")[0]
        if not synthesizer_for(RunConfig(components=components), sources, kind):
            raise PluginError(
                f"no selected synthesizer handles source kind {kind!r}; handled: "
                f"{sorted({k for v in sources.values() for k in v})}"
            )
        _check_source(source, registry)
    return resolved


def _resolve_settings(
    config: RunConfig, registry: Registry, remote: list[tuple[str, str]]
) -> dict[str, Any]:
    """Each component's decoded settings: a setting of no component, or a wrong key, fails now,
    not mid-run."""
    unknown = set(config.settings) - set(registry.components) - {n for _, n in remote}
    if unknown:
        raise ConfigError(
            f"config has settings for {', '.join(sorted(unknown))}, which no selected plugin "
            f"provides; components: {', '.join(sorted(registry.components))}"
        )
    resolved = {}
    for comp in registry.components.values():
        decoded = cfgmod.settings_for(comp.name, comp.settings_type, config.settings.get(comp.name))
        if decoded is not None:
            resolved[comp.name] = msgspec.to_builtins(decoded)
    return resolved


def _out_dir(config: RunConfig, run_id: str, out_root: str | None) -> Path:
    """The run folder: ``out``, else ``OUT_ROOT/RUN-ID``; one that holds a run is refused."""
    out_dir = Path(config.out) if config.out else Path(out_root or "envkernel-out") / run_id
    out_dir = out_dir.resolve()
    if (out_dir / "config.json").exists():
        raise ConfigError(
            f"{out_dir} already holds a run (config.json): choose another --run-id or --out, "
            "or remove it"
        )
    return out_dir


def _warnings(config: RunConfig, registry: Registry) -> list[str]:
    """What the run does that is likely not what its user meant."""
    warnings = [
        f"plugin {n!r} is broken and was skipped: {why}" for n, why in registry.broken.items()
    ]
    if config.eval_tasks:  # a missing file or environment is a usage error now, not mid-run
        from .evaluation import load_task_files

        if not load_task_files(config.eval_tasks, config.eval_split):
            warnings.append(
                f"--tasks {', '.join(config.eval_tasks)}: no task in split {config.eval_split!r}"
                " (--split all evaluates every task)"
            )
    if config.calibrate and (config.calibrate_policy or config.policy) == config.gate_reference:
        warnings.append(
            f"--calibrate with policy {config.gate_reference!r}: it replays the reference "
            "and solves every task, so every task is dropped as always solved; name a real "
            "policy with --calibrate-policy"
        )
    return warnings


def prepare(file: str | None, flags: dict[str, Any], out_root: str | None = None) -> Prepared:
    """Resolve the config (flags > env > file), load the selected plugins and check the roles."""
    top, sections = cfgmod.split_file(cfgmod.read_file(file), str(file or "config"))
    config = cfgmod.build(top, cfgmod.from_env(), flags, sections)
    run_id = config.run_id or new_run_id()
    _check_numbers(config, run_id)
    selected = resolve_selection(config.plugins)
    registry = load(selected)
    remote = remote_components(config.remote)
    components = _components(registry, remote)
    _check_eval(config)
    _check_roles(config, components, selected)
    policies = set(components["policy"])
    _check_policies(config, policies)
    if (
        config.gate_mutant and config.gate_mutant not in policies
    ):  # no mutant policy selected: the gate runs none
        config = msgspec.structs.replace(config, gate_mutant="")
    _check_named(config, components)
    config = msgspec.structs.replace(config, sources=_resolve_sources(config, registry, components))
    resolved = _resolve_settings(config, registry, remote)
    out_dir = _out_dir(config, run_id, out_root)
    config = msgspec.structs.replace(
        config,
        run_id=run_id,
        selected=selected,
        components=components,
        out=str(out_dir),
        resolved=resolved,
    )
    return Prepared(config, registry, out_dir, _warnings(config, registry))


def prepare_resume(run_dir: str) -> Prepared:
    """``--resume RUN_DIR``: the config of a run that was killed (or stopped, exit 3) and its
    plugins, to carry it on."""
    out = Path(run_dir).expanduser().resolve()
    try:
        config = msgspec.json.decode((out / "config.json").read_bytes(), type=RunConfig)
        done = (
            json.loads((out / "summary.json").read_text())
            if (out / "summary.json").exists()
            else {}
        )
    except (OSError, ValueError, msgspec.DecodeError) as exc:
        raise ConfigError(
            f"--resume {run_dir}: not the folder of a run ({type(exc).__name__}: {exc}); "
            "name envkernel-out/RUN-ID"
        ) from None
    if done and not done.get("aborted"):
        raise ConfigError(
            f"--resume {run_dir}: the run finished (exit {done.get('exit_code')}); only a "
            "killed or stopped run can be resumed"
        )
    registry = load(config.selected)
    return Prepared(
        msgspec.structs.replace(config, out=str(out)),
        registry,
        out,
        [f"plugin {n!r} is broken and was skipped: {why}" for n, why in registry.broken.items()],
    )


@dataclass
class RunResult:
    """What a finished run returns."""

    exit_code: int
    summary: dict[str, Any]
    out_dir: Path


@dataclass
class _Link:
    """The run's bus connection and, without ``--nats-url``, the embedded server it runs on."""

    url: str = ""
    server: EmbeddedServer | None = None
    announced: Path | None = None
    bus: Bus | None = None

    async def open(
        self, config: RunConfig, out: Path, nats_url: str | None, listen: str, resume: bool
    ) -> Bus:
        """Start the server (none given), connect, and check the run id is new (or, ``resume``,
        still on the bus); on any failure, undo what was done."""
        try:
            if resume and not nats_url and not (out / "nats" / "jetstream").is_dir():
                raise ConfigError(
                    f"--resume {out}: the run used an external NATS server (no nats/ store "
                    "here): give its --nats-url"
                )
            if not nats_url:
                out.mkdir(parents=True, exist_ok=True)
                self.server = EmbeddedServer(out / "nats", host=listen)
                # in this thread: the server dies with it (PR_SET_PDEATHSIG)
                nats_url = self.server.start()
                self.announced = discovery.announce(config.run_id, nats_url, out)
            self.url = nats_url
            self.bus = await Bus.connect(nats_url, name=f"envkernel-run-{config.run_id}")
            await self._check_taken(self.bus, config.run_id, resume)
        except BaseException:
            await self.close()
            raise
        return self.bus

    async def _check_taken(self, bus: Bus, run_id: str, resume: bool) -> None:
        """A new run's id is unused on the bus; a resumed run's is still there."""
        try:
            await bus.runs.get(run_id)
            taken = True
        except KeyNotFoundError:
            taken = False
        if resume and not taken:
            raise ConfigError(
                f"--resume: run {run_id!r} is not on {without_secrets(self.url)} (its "
                "stream is gone): it cannot be resumed"
            )
        if taken and not resume:
            raise ConfigError(
                f"run id {run_id!r} is already used on {without_secrets(self.url)}: "
                "choose another --run-id"
            )

    async def close(self) -> None:
        """Close the bus, stop the embedded server, withdraw its announcement."""
        if self.bus is not None:
            await self.bus.close()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
        if self.announced is not None:
            self.announced.unlink(missing_ok=True)


def _exit_code(summary: dict[str, Any], aborted: str) -> int:
    """The exit code a run's summary calls for."""
    if aborted:
        return EXIT_ABORTED
    if summary["failures"] or summary["infra_failures"] or summary["broken_plugins"]:
        return EXIT_FAILURES
    if not summary["tasks"]:
        return EXIT_EMPTY
    return EXIT_OK


def _write_summary(out: Path, summary: dict[str, Any]) -> None:
    """Write ``summary.json``; a full disk makes the run aborted (exit 3) and says so."""
    try:
        write_atomic(out / "summary.json", json.dumps(summary, indent=2))
    except OSError as exc:  # a full disk: say so, exit 3
        summary["aborted"], summary["exit_code"] = (
            summary.get("aborted") or f"cannot write summary.json: {exc} (free space in {out})",
            EXIT_ABORTED,
        )
        log.error(
            "could not write summary.json; free space where the run folder is",
            out=str(out),
            error=str(exc),
        )


class _Run:
    """One run in progress: its recorder, its worker, its coordinator and local workers."""

    def __init__(self, prep: Prepared, bus: Bus, url: str, *, resume: bool, progress: Progress):
        config, out = prep.config, prep.out_dir
        self.prep, self.bus, self.url, self.resume, self.progress = (
            prep,
            bus,
            url,
            resume,
            progress,
        )
        self.recorder = Recorder(
            out,
            rebuild=resume,
            evaluation=EvalRecorder(
                out, max(1, config.rollouts_per_task), config.seed, config.policy
            )
            if config.evaluate
            else None,
        )
        registry = prep.registry
        sources = {c.name: c.sources for c in registry.by_role("synthesizer")}
        remote = {n for _, n in remote_components(config.remote)}
        self.worker = Worker(
            bus,
            registry,
            [n for n in registry.components if n not in remote],
            known={config.run_id: config},
            run_scoped=config.run_id,
            own=config.run_id if config.own_work else None,
        )
        if remote:
            log.info(
                "this run uses remote components: serve them with `envkernel worker --plugins "
                "PLUGIN --nats-url URL`",
                remote=sorted(remote),
                nats=without_secrets(url),
            )
        self.coord = Coordinator(
            bus,
            config,
            self.recorder,
            lambda kind: synthesizer_for(config, sources, kind),
            on_event=progress.update,
            resume=resume,
        )
        coord = self.coord
        progress.work = lambda: (
            coord.reports,
            coord.reports + coord.outstanding,
        )  # handled reports: received, expected
        bus.on_closed(lambda: coord.stop_run(f"lost the bus: {bus.lost}"))
        self.watchdog: asyncio.Task[None] | None = None
        self.helpers: list[Any] = []  # local workers (--workers)

    async def start(self, workers: int) -> None:
        """Serve the stages, start the local workers, check the remote ones, start the run."""
        config, bus = self.prep.config, self.bus
        await self.worker.start()
        log.info("sandbox stack", stack=self.worker.sandbox_stack()["description"])
        self.helpers = await asyncio.to_thread(
            start_local_workers,
            workers,
            msgspec.json.encode({"nats_url": self.url, "config": config}),
            self.prep.out_dir,
        )
        await check_remote(
            lambda durable: bus.js.consumer_info(STREAM, durable),
            [
                (role, name, durable_name(WORK_INPUTS.get(role) or BROADCAST_INPUTS[role][0], name))
                for role, name in remote_components(config.remote)
                if role in WORK_INPUTS or role in BROADCAST_INPUTS
            ],
            without_secrets(self.url),
        )
        await self.coord.start()
        self.watchdog = asyncio.create_task(self.coord.watch(stall_seconds()))

    async def wait(self, stop: asyncio.Event, timeout: float | None) -> str:
        """Wait for the run to finish, a stop or the timeout; why it did not finish, if not."""
        coord = self.coord
        with self.progress:
            waiters = [asyncio.create_task(coord.done.wait()), asyncio.create_task(stop.wait())]
            _, pending = await asyncio.wait(
                waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for t in pending:
                t.cancel()
            if coord.fatal:
                return coord.fatal
            if not coord.done.is_set():
                return "interrupted" if stop.is_set() else f"timed out after {timeout} s"
        return ""

    async def finish(self, aborted: str) -> tuple[int, dict[str, Any]]:
        """Stop the work, write the summary, publish ``run.finished``: the exit code and summary."""
        config, coord = self.prep.config, self.coord
        coord.done.set()  # record nothing more: the summary and the files must agree
        # a signal or a fault: do not wait the whole lost-bus limit for a server that may be gone
        if aborted:
            self.bus.hurry(5.0)
        on_signals(None)
        if self.watchdog is not None:
            self.watchdog.cancel()
        await asyncio.to_thread(stop_local_workers, self.helpers)
        await self.worker.stop(cancel=bool(aborted), finish_run=config.run_id if aborted else None)
        extra: dict[str, Any] = {
            "reward": first(config, "reward_model", config.reward),
            "gate_reward": config.gate_reward,
            "broken_plugins": self.prep.registry.broken,
            "undecodable_events": coord.undecodable,
            "sandbox_stack": self.worker.sandbox_stack(),
            **({"resumed": True} if self.resume else {}),
            **({"aborted": aborted} if aborted else {}),
        }
        summary = self.recorder.summary(config.run_id, config.components, extra)
        summary["exit_code"] = _exit_code(summary, aborted)
        _write_summary(self.prep.out_dir, summary)
        await self._publish_finished(summary)
        self.recorder.close()
        return summary["exit_code"], summary

    async def _publish_finished(self, summary: dict[str, Any]) -> None:
        """Publish ``run.finished`` and stop the coordinator (a failure is logged)."""
        run_id = self.prep.config.run_id
        fin = RunFinished(
            run=run_id,
            id=event_id(run_id, KERNEL, f"finished/{time.time()}" if self.resume else "finished"),
            time=time.time(),
            summary=summary,
        )
        try:
            await self.coord._publish(fin, None)
            await self.coord.stop()
        except Exception as exc:
            log.warning("could not publish run.finished", error=str(exc))


async def execute(
    prep: Prepared,
    *,
    nats_url: str | None = None,
    listen: str = "127.0.0.1",
    show_progress: bool = True,
    timeout: float | None = None,
    resume: bool = False,
    workers: int = 0,
) -> RunResult:
    """Run the pipeline to completion and write the run folder (``resume``: carry on a killed run
    from its stream; ``workers``: local ``envkernel worker`` processes that share its work, see
    ``envkernel_runtime.workers``)."""
    if (
        workers and not prep.config.own_work
    ):  # its work then goes to consumers of its own, which its local workers share
        if resume:
            raise ConfigError(
                "--resume --workers: the run was started without local workers (its work is "
                "on shared consumers); resume it without --workers"
            )
        prep.config = msgspec.structs.replace(prep.config, own_work=True)
    config, out = prep.config, prep.out_dir
    public = cfgmod.public(config)
    link = _Link()
    bus = await link.open(config, out, nats_url, listen, resume)
    out.mkdir(parents=True, exist_ok=True)
    if not resume:
        write_atomic(out / "config.json", json.dumps(public, indent=2))
    log.info(
        "run resuming" if resume else "run starting",
        run=config.run_id,
        out=str(out),
        nats=without_secrets(link.url),
        plugins=",".join(config.selected),
    )
    # workers on other hosts read the run's config from here (secrets stay in this process)
    await bus.runs.put(config.run_id, msgspec.json.encode(public))
    run = _Run(prep, bus, link.url, resume=resume, progress=Progress(enabled=show_progress))
    aborted = ""
    stop = asyncio.Event()
    on_signals(stop.set, EXIT_ABORTED)
    try:
        await run.start(workers)
        aborted = await run.wait(stop, timeout)
    except (
        BaseException
    ) as exc:  # the kernel itself failed: the summary must say the run did not finish
        aborted = aborted or f"{type(exc).__name__}: {exc}"
        raise
    finally:
        exit_code, summary = await run.finish(aborted)
        await link.close()
    log.info(
        "run finished",
        run=config.run_id,
        exit_code=exit_code,
        tasks=summary["tasks"],
        rollouts=summary["rollouts"],
        mean_reward=summary["mean_reward"],
        failures=summary["failures"],
        seconds=summary["seconds"],
        out=str(out),
    )
    return RunResult(exit_code, summary, out)


async def serve(
    names: list[str],
    nats_url: str,
    *,
    stop: asyncio.Event | None = None,
    run: RunConfig | None = None,
) -> None:
    """``envkernel worker``: serve these plugins' stages for every run in progress until stopped
    (``run``: a local worker of that run, ``envkernel_runtime.workers``: only its work components,
    only its work)."""
    registry = load(names)
    if not registry.components:
        raise PluginError(f"plugins {', '.join(names)} provide no components to serve")
    bus = await Bus.connect(nats_url, name=f"envkernel-worker-{os.getpid()}")
    served = [
        n
        for n, c in registry.components.items()
        if run is None or c.role in WORK_INPUTS and f"{c.role}:{n}" not in run.remote
    ]
    worker = Worker(
        bus,
        registry,
        served,
        known={run.run_id: run} if run else None,
        own=run.run_id if run else None,
    )
    stop = stop or asyncio.Event()
    on_signals(stop.set, EXIT_ABORTED)
    bus.on_closed(stop.set)
    await worker.start()
    log.info(
        "worker serving", components=",".join(registry.components), nats=without_secrets(nats_url)
    )
    try:
        with Status(
            interval=60, event="worker progress"
        ) as status:  # live on a terminal, else a line a minute
            while not stop.is_set():
                status.show(worker.progress_line(), handled=dict(worker.handled))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
    finally:
        await worker.stop(cancel=bool(bus.lost))
        await bus.close()
        log.info("worker stopped", reason=bus.lost or "asked to", handled=dict(worker.handled))
    if bus.lost:
        raise RunError(f"the worker lost its bus: {bus.lost}")
