"""The ``envkernel`` command line."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from .errors import EXIT_USAGE, EnvkernelError, UsageError

EXIT_CODES_HELP = """Exit codes: 0 finished, tasks emitted, nothing failed; 1 finished, but \
plugins failed,
rollouts failed as infra or a selected plugin is broken (see summary.json); 2 usage or config
error; 3 interrupted or lost its bus (what was produced is written); 4 finished, nothing failed,
but no task was emitted."""

BUILTIN_LAZY: dict[str, tuple[str, str]] = {
    "env": ("envkernel.envcmd:env", "Try an environment by hand (a sandbox, one tool call)."),
    "install": (
        "envkernel.installcmd:install",
        "Install plugins into the environment envkernel runs from.",
    ),
    "uninstall": ("envkernel.installcmd:uninstall", "Remove plugins from that environment."),
}
"""Built-in commands kept in their own modules: name -> (module:attribute, short help), imported
only when run (``--help`` lists them from here)."""


class Group(click.Group):
    """The top-level group: built-in commands, plus plugin commands loaded only when asked for.

    ``--help`` imports no plugin: plugins name their commands in the ``envkernel.commands``
    entry-point group (see :func:`envkernel.plugins.declared_commands`), and a declared command
    imports only its own plugin when it runs. A command added only through the
    ``register_commands`` hook runs too (an unknown name loads every plugin)."""

    _loaded: set[str] | None = None

    def _plugins_done(self) -> set[str]:
        if self._loaded is None:
            self._loaded = set()
        return self._loaded

    def load_plugin_commands(self, only: set[str] | None = None) -> None:
        """Add the commands that installed plugins register: those of the plugins in ``only``, or
        of every plugin (each plugin once)."""
        from .plugins import installed, plugin_manager

        for name in BUILTIN_LAZY:  # the groups plugins add to (`env serve`) are there first
            self._builtin(name)
        done = self._plugins_done()
        pm = plugin_manager()
        for name, ep in installed().items():
            if name in done or (only is not None and name not in only):
                continue
            done.add(name)
            try:
                pm.register(ep.load(), name=name)
            except Exception as exc:  # a broken plugin must not break the CLI
                click.echo(
                    f"warning: plugin {name!r} failed to load: {type(exc).__name__}: {exc}",
                    err=True,
                )
        pm.hook.register_commands(cli=self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name in BUILTIN_LAZY:
            cmd = self._builtin(cmd_name)
        if cmd is None:
            from .plugins import declared_commands

            declared = declared_commands().get(cmd_name)
            self.load_plugin_commands(set(declared.plugins) if declared else None)
            cmd = super().get_command(ctx, cmd_name)
        return cmd

    def _builtin(self, name: str) -> click.Command:
        """The built-in command ``name`` of :data:`BUILTIN_LAZY`, imported and added once."""
        if name not in self.commands:
            module, _, attr = BUILTIN_LAZY[name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return self.commands[name]

    def list_commands(self, ctx: click.Context) -> list[str]:
        from .plugins import declared_commands

        return sorted({*self.commands, *BUILTIN_LAZY, *declared_commands()})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands with their short help, read without importing a plugin."""
        from .plugins import declared_commands

        declared = declared_commands()
        rows = []
        for name in self.list_commands(ctx):
            limit = formatter.width - 6 - len(name)
            cmd = self.commands.get(name)
            if cmd is not None:
                if not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit)))
            else:
                text = BUILTIN_LAZY[name][1] if name in BUILTIN_LAZY else declared[name].help
                rows.append((name, textwrap.shorten(text, max(limit, 20), placeholder="...")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EnvkernelError as exc:
            if isinstance(exc, UsageError):
                click.echo(f"error: {exc}", err=True)
                sys.exit(EXIT_USAGE)
            click.echo(f"error: {exc}", err=True)
            sys.exit(3)
        except Exception as exc:
            bus = sys.modules.get("envkernel_bus")  # a bus error comes from an imported bus
            if bus is None or not isinstance(exc, (bus.BusError, bus.ServerError)):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(3)


@click.group(cls=Group)
@click.version_option(package_name="envkernel")
@click.option(
    "--log-level",
    default=None,
    help="debug, info, warning or error (default info; or ENVKERNEL_LOG_LEVEL).",
)
@click.option(
    "--json-logs/--console-logs",
    default=None,
    help="Log format (default: console on a terminal, JSON otherwise).",
)
@click.pass_context
def cli(ctx: click.Context, log_level: str | None, json_logs: bool | None) -> None:
    """envkernel: synthesize executable tool environments, sample tasks, roll out agents, score,
    export."""
    ctx.obj = (log_level, json_logs)
    if ctx.invoked_subcommand not in PRINT_ONLY:
        configure_logs(ctx)


PRINT_ONLY = frozenset({"plugins", "schemas"})
"""Commands that print and log nothing themselves: logging is set up by them if they need it (the
structlog console renderer costs a second of start-up)."""


def configure_logs(ctx: click.Context) -> None:
    """Set up logging from the top-level ``--log-level`` / ``--json-logs``."""
    from envkernel_bus import logs

    root = ctx.find_root()
    log_level, json_logs = root.obj if isinstance(root.obj, tuple) else (None, None)
    logs.configure(log_level, json_logs)


@cli.command(epilog=EXIT_CODES_HELP)
@click.option(
    "--plugins",
    envvar="ENVKERNEL_PLUGINS",
    default=None,
    help="Full list a,b,c or changes +x,-y to the default preset.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML config file.",
)
@click.option(
    "--seed",
    type=int,
    envvar="ENVKERNEL_SEED",
    default=None,
    help="Seed; the same seed gives the same run.",
)
@click.option(
    "--policy",
    envvar="ENVKERNEL_POLICY",
    default=None,
    help="Policy that rolls out the emitted tasks (default: reference).",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    help="Source: KIND or KIND:VALUE (repeatable; default: openapi, the shipped corpus).",
)
@click.option("--envs", type=int, default=None, help="Environment requests per source.")
@click.option(
    "--rollouts-per-task",
    "-G",
    type=int,
    default=None,
    help="Group size: rollouts per emitted task.",
)
@click.option("--iterations", type=int, default=None, help="Training iterations.")
@click.option(
    "--remote",
    "remote",
    multiple=True,
    metavar="ROLE:COMPONENT",
    help="A component this run uses but leaves to `envkernel worker` processes elsewhere, e.g. "
    "trainer:mytrainer (repeatable).",
)
@click.option("--runner", default=None, help="Sandbox runner component.")
@click.option(
    "--reward",
    default=None,
    help="Reward model of the training rollouts (default: the first active one).",
)
@click.option(
    "--gate-reward",
    default=None,
    help="Reward model of the gate's rollouts (default: traceoutcome).",
)
@click.option(
    "--calibrate",
    type=int,
    default=None,
    metavar="K",
    help="K attempts of --calibrate-policy per gated task; drop those always or never solved.",
)
@click.option(
    "--calibrate-policy",
    default=None,
    help="Policy of the calibration attempts (default: --policy).",
)
@click.option(
    "--gate-solver",
    default=None,
    metavar="POLICY",
    help="Policy that looks for the reference of a task that has none (imported benchmark tasks).",
)
@click.option(
    "--gate-solver-k",
    "--k",
    "gate_solver_k",
    type=int,
    default=None,
    metavar="K",
    help="Attempts of --gate-solver per task; a task it never solves is rejected as unsolved "
    "(default 4).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="COMPONENT.KEY=VALUE",
    help="Set one component setting (repeatable).",
)
@click.option(
    "--out",
    "out_root",
    type=click.Path(file_okay=False),
    default="envkernel-out",
    show_default=True,
    help="Folder that receives <run-id>/.",
)
@click.option("--run-id", default=None, help="Run id (default: time + random).")
@click.option(
    "--nats-url",
    envvar="ENVKERNEL_NATS_URL",
    default=None,
    help="Use this NATS server instead of the embedded one.",
)
@click.option(
    "--listen",
    default="127.0.0.1",
    show_default=True,
    help="Address the embedded server listens on (0.0.0.0 opens it to workers on other hosts).",
)
@click.option(
    "--timeout", type=float, default=None, help="Give up after this many seconds (exit 3)."
)
@click.option("--progress/--no-progress", default=True, help="Show progress.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    help="Also serve the run from this many local `envkernel worker` processes (more cores).",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False),
    default=None,
    metavar="RUN_DIR",
    help="Carry on a killed run from its folder and stream (its own config; keeps what it "
    "produced).",
)
def run(
    plugins: str | None,
    config_file: str | None,
    seed: int | None,
    policy: str | None,
    sources: tuple[str, ...],
    envs: int | None,
    rollouts_per_task: int | None,
    iterations: int | None,
    remote: tuple[str, ...],
    runner: str | None,
    reward: str | None,
    gate_reward: str | None,
    calibrate: int | None,
    calibrate_policy: str | None,
    gate_solver: str | None,
    gate_solver_k: int | None,
    sets: tuple[str, ...],
    out_root: str,
    run_id: str | None,
    nats_url: str | None,
    listen: str,
    timeout: float | None,
    progress: bool,
    workers: int,
    resume: str | None,
) -> None:
    """Run the whole pipeline: synthesize, verify, sample, gate, roll out, score, export."""
    from .run import execute, prepare, prepare_resume

    flags: dict[str, Any] = {
        "plugins": plugins,
        "seed": seed,
        "policy": policy,
        "sources": list(sources) or None,
        "envs": envs,
        "rollouts_per_task": rollouts_per_task,
        "iterations": iterations,
        "remote": list(remote) or None,
        "runner": runner,
        "reward": reward,
        "gate_reward": gate_reward,
        "calibrate": calibrate,
        "calibrate_policy": calibrate_policy,
        "gate_solver": gate_solver,
        "gate_solver_k": gate_solver_k,
        "run_id": run_id,
    }
    if resume and (config_file or sets or any(v is not None for v in flags.values())):
        raise UsageError(
            "--resume carries on a run with its own config: give no run settings with it, "
            "neither flags nor ENVKERNEL_PLUGINS/SEED/POLICY/ROLLOUTS_PER_TASK (only "
            "--nats-url, --listen, --timeout)"
        )
    prep = prepare_resume(resume) if resume else prepare(config_file, flags, out_root)
    _apply_sets(prep, sets)
    for w in prep.warnings:
        click.echo(f"warning: {w}", err=True)
    # a run's heap is large and long-lived: default thresholds spent ~28 % of its CPU collecting
    from envkernel_runtime.gctune import tune_gc

    tune_gc()
    result = asyncio.run(
        execute(
            prep,
            nats_url=nats_url,
            listen=listen,
            show_progress=progress,
            timeout=timeout,
            resume=bool(resume),
            workers=workers,
        )
    )
    _echo_summary(result.summary, result.out_dir)
    sys.exit(result.exit_code)


def _fmt_curve(xs: list[float | None]) -> str:
    """A reward curve as ``0.500 → 0.750`` (``-``: no figure)."""
    return " → ".join("-" if x is None else f"{x:.3f}" for x in xs)


def _echo_summary(s: dict[str, Any], out_dir: Any) -> None:
    """The run's closing lines on stderr: the reward curve, each env's verification, the totals
    and the gate solver's counts."""
    curve = s.get("reward_curve") or []
    if len(curve) > 1:
        held = s.get("reward_curve_heldout") or []
        click.echo(f"reward per iteration: {_fmt_curve(curve)}", err=True)
        if any(x is not None for x in held):
            click.echo(f"  held-out tasks:     {_fmt_curve(held)}", err=True)
    for env_id, v in sorted((s.get("verification") or {}).items()):
        click.echo(_verification_line(env_id, v), err=True)
    click.echo(
        f"{s['tasks']} tasks, {s['rollouts']} rollouts, mean reward {s['mean_reward']}, "
        f"{s['failures']} failures in {s['seconds']} s -> {out_dir}",
        err=True,
    )
    if s.get("tasks_unsolved") or s.get("tasks_solver_reference"):
        click.echo(
            f"gate solver: {s['tasks_solver_reference']} tasks kept with its solution as "
            f"reference, {s['tasks_unsolved']} unsolved (rejected.jsonl: unsolved)",
            err=True,
        )


def _verification_line(env_id: str, v: dict[str, Any]) -> str:
    """One environment's verification in a line: kept or rejected, tools, operations, tasks."""
    ops = v.get("operations")
    skipped = ", ".join(f"{n} {why}" for why, n in (v.get("skipped") or {}).items())
    if not ops:
        of = ""
    elif v.get("kind") != "workspace":
        of = f" of {ops} operations"
    else:
        of = f" (its source: {ops} task files{'; skipped ' + skipped if skipped else ''})"
    return (
        f"env {env_id}: {'kept' if v['kept'] else 'rejected'}, {v['tools_kept']} tools "
        f"kept{of}, {v.get('tasks', 0)} tasks"
    )


@cli.command("eval", epilog=EXIT_CODES_HELP)
@click.option(
    "--tasks",
    "tasks",
    multiple=True,
    metavar="RUN_DIR|TASKS_JSONL",
    help="Evaluate the tasks of a previous run (its folder or tasks.jsonl; repeatable).",
)
@click.option(
    "--split",
    type=click.Choice(["heldout", "train", "all"]),
    default=None,
    help="Which tasks of --tasks to evaluate (default: heldout).",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    help="Tasks from a source: KIND or KIND:VALUE, e.g. pinchbench:PATH (repeatable).",
)
@click.option(
    "--policy", envvar="ENVKERNEL_POLICY", default=None, help="Policy to evaluate, e.g. openai."
)
@click.option("--k", "k", type=int, default=None, help="Attempts per task (default 1).")
@click.option(
    "--plugins",
    envvar="ENVKERNEL_PLUGINS",
    default=None,
    help="Full list a,b,c or changes +x,-y to the default preset.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML config file.",
)
@click.option("--seed", type=int, envvar="ENVKERNEL_SEED", default=None, help="Seed.")
@click.option("--envs", type=int, default=None, help="Environment requests per source.")
@click.option("--runner", default=None, help="Sandbox runner component.")
@click.option("--reward", default=None, help="Reward model that grades the attempts.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="COMPONENT.KEY=VALUE",
    help="Set one component setting (repeatable).",
)
@click.option(
    "--out",
    "out_root",
    type=click.Path(file_okay=False),
    default="envkernel-out",
    show_default=True,
    help="Folder that receives <run-id>/.",
)
@click.option("--run-id", default=None, help="Run id (default: time + random).")
@click.option(
    "--nats-url",
    envvar="ENVKERNEL_NATS_URL",
    default=None,
    help="Use this NATS server instead of the embedded one.",
)
@click.option(
    "--timeout", type=float, default=None, help="Give up after this many seconds (exit 3)."
)
@click.option("--progress/--no-progress", default=True, help="Show progress.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    help="Also serve the run from this many local `envkernel worker` processes.",
)
@click.option(
    "--compare",
    nargs=2,
    default=None,
    metavar="A B",
    help="Print two evaluation runs (folders or eval.json) side by side instead; runs nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="With --compare: print JSON.")
def eval_cmd(
    tasks: tuple[str, ...],
    split: str | None,
    sources: tuple[str, ...],
    policy: str | None,
    k: int | None,
    plugins: str | None,
    config_file: str | None,
    seed: int | None,
    envs: int | None,
    runner: str | None,
    reward: str | None,
    sets: tuple[str, ...],
    out_root: str,
    run_id: str | None,
    nats_url: str | None,
    timeout: float | None,
    progress: bool,
    workers: int,
    compare: tuple[str, str] | None,
    as_json: bool,
) -> None:
    """Evaluate a policy on tasks (a benchmark's files, a previous run's tasks): k attempts each, no
    gate.

    Writes results.jsonl (one line per attempt) and eval.json (mean, pass@1, pass@k with confidence
    intervals, by category and by source), and prints a table."""
    from . import evaluation

    if compare:
        a, b = (evaluation.load_eval(p) for p in compare)
        c = evaluation.compare(a, b)
        click.echo(json.dumps(c, indent=2) if as_json else evaluation.compare_table(c, compare))
        return
    from .run import execute, prepare

    if not tasks and not sources:
        raise UsageError(
            "envkernel eval: give the tasks: --source KIND:VALUE (e.g. pinchbench:PATH) or "
            "--tasks RUN_DIR"
        )
    flags: dict[str, Any] = {
        "evaluate": True,
        "eval_tasks": list(tasks) or None,
        "eval_split": split,
        "sources": list(sources),
        "plugins": plugins,
        "seed": seed,
        "policy": policy,
        "envs": envs,
        "rollouts_per_task": k,
        "runner": runner,
        "reward": reward,
        "run_id": run_id,
    }
    prep = prepare(config_file, flags, out_root)
    _apply_sets(prep, sets)
    for w in prep.warnings:
        click.echo(f"warning: {w}", err=True)
    from envkernel_runtime.gctune import tune_gc

    tune_gc()
    result = asyncio.run(
        execute(prep, nats_url=nats_url, show_progress=progress, timeout=timeout, workers=workers)
    )
    f = result.out_dir / "eval.json"
    if f.exists():
        click.echo(evaluation.table(json.loads(f.read_text())))
    s = result.summary
    click.echo(
        f"{s['tasks']} tasks, {s['rollouts']} attempts, {s['failures']} failures in "
        f"{s['seconds']} s -> {result.out_dir}",
        err=True,
    )
    sys.exit(result.exit_code)


def _apply_sets(prep: Any, sets: tuple[str, ...]) -> None:
    import msgspec

    from . import config as cfgmod
    from .errors import ConfigError

    if not sets:
        return
    overrides: dict[str, dict[str, Any]] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        comp, dot, field = key.partition(".")
        if not (eq and dot and comp and field):
            raise ConfigError(f"--set {item!r}: expected COMPONENT.KEY=VALUE")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        overrides.setdefault(comp, {})[field] = parsed
    for comp, flags in overrides.items():
        c = prep.registry.components.get(comp)
        if c is None and comp in {n for names in prep.config.components.values() for n in names}:
            continue  # a remote component: its worker checks the settings
        if c is None:
            raise ConfigError(
                f"--set: no active component {comp!r}; components: "
                f"{', '.join(sorted(prep.registry.components))}"
            )
        cfgmod.settings_for(comp, c.settings_type, prep.config.settings.get(comp), flags=flags)
    prep.config = msgspec.structs.replace(prep.config, overrides=overrides)


@cli.command()
@click.option(
    "--plugins",
    envvar="ENVKERNEL_PLUGINS",
    help="Plugins whose stages this worker serves (a,b,c or +x,-y).",
)
@click.option(
    "--nats-url", envvar="ENVKERNEL_NATS_URL", help="The NATS server (cluster) the runs use."
)
@click.option(
    "--run-from-stdin",
    "local",
    is_flag=True,
    hidden=True,
    help="A local worker of `envkernel run --workers`: one run's URL and config, as JSON on stdin.",
)
def worker(plugins: str | None, nats_url: str | None, local: bool) -> None:
    """Serve some plugins' stages for every run in progress on a NATS server."""
    import msgspec

    from envkernel_runtime.gctune import tune_gc

    from .config import RunConfig
    from .plugins import resolve_selection
    from .run import serve

    tune_gc()
    if local:  # the run's settings (secrets too) and URL (credentials too) stay off argv
        got = msgspec.json.decode(sys.stdin.buffer.read(), type=dict[str, Any])
        run_cfg = msgspec.convert(got["config"], RunConfig)
        return asyncio.run(serve(run_cfg.selected, got["nats_url"], run=run_cfg))
    if not plugins or not nats_url:
        raise UsageError(
            f"worker: missing option {'--plugins' if not plugins else '--nats-url'} (or "
            "ENVKERNEL_PLUGINS / ENVKERNEL_NATS_URL)"
        )
    asyncio.run(serve(resolve_selection(plugins), nats_url))


@cli.command()
@click.argument("subject", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of summaries.")
@click.option(
    "--from-start", is_flag=True, help="Replay from the beginning of the stream, then follow."
)
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Replay a finished run from its folder, then exit.",
)
@click.option(
    "--nats-url",
    envvar="ENVKERNEL_NATS_URL",
    default=None,
    help="Server to tap (default: the newest run in progress here).",
)
@click.option("--all", "show_all", is_flag=True, help="Also show the kernel's bookkeeping events.")
@click.option("--limit", type=int, default=None, help="Stop after this many events.")
def tap(
    subject: str | None,
    as_json: bool,
    from_start: bool,
    run_dir: str | None,
    nats_url: str | None,
    show_all: bool,
    limit: int | None,
) -> None:
    """Show the live event stream. SUBJECT filters it (e.g. 'rollout.>' or envk.ev.RUN.>)."""
    from envkernel_bus import Bus
    from envkernel_bus import tap as tapmod

    subj = subject or tapmod.DEFAULT_SUBJECT
    if not subj.startswith("envk."):
        subj = f"envk.ev.*.{subj}"

    async def go(url: str, until_caught_up: bool) -> None:
        bus = await Bus.connect(
            url, name="envkernel-tap", setup=False, lost_after=5.0
        )  # a run's server gone: its tap ends
        try:
            await tapmod.tap(
                bus,
                subj,
                from_start=from_start,
                as_json=as_json,
                show_all=show_all,
                until_caught_up=until_caught_up,
                limit=limit,
            )
        finally:
            await bus.close()

    import signal

    def _term(*_: object) -> None:
        raise KeyboardInterrupt  # unwind, so a replay's server is stopped

    signal.signal(signal.SIGTERM, _term)
    try:
        if run_dir:
            with tapmod.Replay(Path(run_dir)) as url:
                asyncio.run(go(url, True))
        else:
            asyncio.run(go(nats_url or tapmod.find_live_url(), False))
    except KeyboardInterrupt:
        pass
    except tapmod.TapError as exc:
        raise UsageError(str(exc)) from None


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array (loads each plugin).")
@click.option(
    "--check",
    is_flag=True,
    help="Load each plugin: show its roles and components, or why it fails.",
)
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool, check: bool) -> None:
    """List the installed plugins (from their metadata; --check loads them)."""
    from .plugins import describe_installed

    if as_json or check:
        configure_logs(ctx)
    infos = describe_installed(check=as_json or check)
    if as_json:
        rows = [
            {
                "name": i.name,
                "distribution": i.distribution,
                "version": i.version,
                "roles": i.roles,
                "default": i.default,
                "components": i.components,
                **({"error": i.error} if i.error else {}),
            }
            for i in infos
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    print_plugins(infos, check)


def print_plugins(infos: list[Any], check: bool) -> None:
    """The plugin table, readable at 80 columns: the names and versions never cut, the last
    column wraps."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    widest = max((len(i.name) for i in infos), default=4)
    table.add_column("name", no_wrap=True, min_width=widest)
    table.add_column("version", no_wrap=True, min_width=7)
    table.add_column("default", no_wrap=True)
    table.add_column("roles: components" if check else "what it is", overflow="fold")
    room = max(Console().width - widest - 7 - 7 - 10, 20)
    for i in infos:
        if not check:  # one line a plugin
            what = textwrap.shorten(i.summary, max(room, 20), placeholder="...")
        elif i.error:
            what = f"[red]broken: {i.error}[/red]"
        else:
            what = f"{', '.join(i.roles) or '(commands)'}: {', '.join(i.components)}".rstrip(": ")
        table.add_row(i.name, i.version, "yes" if i.default else "", what)
    Console().print(table)
    if not check:
        click.echo("(envkernel plugins --check loads each plugin and lists its components)")


@cli.command()
@click.option("--json-schema", is_flag=True, help="Print the JSON Schema of every type.")
def schemas(json_schema: bool) -> None:
    """Print every event and record type."""
    import envkernel_schemas as s

    if json_schema:
        click.echo(json.dumps(s.json_schemas(), indent=2))
        return
    for t in s.EVENT_TYPES:
        fields = ", ".join(t.__struct_fields__)
        click.echo(f"event  {t.kind:<18} {t.__name__:<16} {fields}")
    from envkernel_schemas import records

    for name in sorted(
        n
        for n, v in vars(records).items()
        if isinstance(v, type) and issubclass(v, records.Record) and v is not records.Record
    ):
        t = getattr(records, name)
        click.echo(f"record {name:<35} {', '.join(t.__struct_fields__)}")


def main() -> None:
    """Entry point of the ``envkernel`` script."""
    cli()


if __name__ == "__main__":
    main()
