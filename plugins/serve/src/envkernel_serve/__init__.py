"""envkernel-serve: ``envkernel serve ENV_DIR|RUN_DIR`` — environments served live to trainers.

An OpenEnv-compatible server (``reset``/``step``/``state`` over a WebSocket, as ``openenv-core``'s
own server and client speak it), with the tools also listed and called over MCP (the official
``mcp`` package, streamable HTTP) on the same port. Each session is an isolated sandbox from a
warm pool; ``reset`` loads a task's initial state and returns its request, ``step`` runs a tool
call, and the reward is the task's own check, computed in the server. See docs/serve.md.

Clients and adapters, each in its own module:

- :mod:`envkernel_serve.gym`: ``envkernel.make(...)``, a Gymnasium ``Env`` (passes ``check_env``);
- :mod:`envkernel_serve.client`: the WebSocket client the others use (sync and async);
- :mod:`envkernel_serve.trl`: a TRL ``environment_factory`` class (one method per tool,
  ``get_reward``);
- :mod:`envkernel_serve.verl`: a verl ``BaseTool`` keyed by trajectory instance id.

The server's modules: :mod:`.catalog` (what is served), :mod:`.sessions` (episodes, warm pool),
:mod:`.app` (routes), :mod:`.server` (sandbox sources, uvicorn).
"""

from __future__ import annotations

from typing import Any

from envkernel.hookspecs import hookimpl

__all__ = ["register_commands", "serve_command"]


_FILE = "file"
"""Stands for ``click.Path(dir_okay=False)`` in :data:`_OPTIONS` (click is imported on use)."""


def _opt(*decls: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One row of :data:`_OPTIONS`."""
    return decls, kwargs


REUSE_HELP = (
    "Restore a used sandbox for the next session instead of giving each session one no "
    "session used (a restore brings back the database, the working folder and env code's "
    "module state, not a thread or process env code started; for one client's sessions only)."
)


_OPTIONS = [
    _opt(
        "--tasks",
        "tasks_file",
        type=_FILE,
        default=None,
        help="Tasks to serve (a tasks.jsonl; default: the run's own tasks.jsonl).",
    ),
    _opt("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
    _opt(
        "--port",
        type=int,
        default=8000,
        show_default=True,
        help="Port to listen on (0: any free port).",
    ),
    _opt(
        "--sandbox",
        "runner",
        default="process",
        show_default=True,
        help="Sandbox runner component.",
    ),
    _opt(
        "--config",
        "config_file",
        type=_FILE,
        default=None,
        help="TOML config file; its [RUNNER] table configures the runner.",
    ),
    _opt(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="Set one runner setting (repeatable).",
    ),
    _opt(
        "--seed",
        type=int,
        default=None,
        help="Seed of each session's initial state (default: the run's seed, else 0).",
    ),
    _opt(
        "--max-steps",
        type=int,
        default=64,
        show_default=True,
        help="Tool calls per episode before it is truncated.",
    ),
    _opt(
        "--tau",
        type=float,
        default=None,
        help="Weight of the trace part of the reward (traceoutcome's tau; default: the run's, "
        "else 0).",
    ),
    _opt(
        "--reward",
        "reward",
        metavar="NAME",
        default=None,
        help="Reward model grading tasks without a check script (default: the run's, from "
        "its config.json; else the trace + outcome score).",
    ),
    _opt(
        "--warm",
        type=int,
        default=2,
        show_default=True,
        help="Sandboxes opened before the first session.",
    ),
    _opt(
        "--reuse-sandboxes",
        is_flag=True,
        default=False,
        help=REUSE_HELP,
    ),
    _opt(
        "--max-message-mb",
        type=float,
        default=0,
        show_default=True,
        help="Largest WebSocket message (0: no limit).",
    ),
    _opt(
        "--nats-url",
        default=None,
        help="Take sandboxes from the sandbox service on this NATS server.",
    ),
    _opt(
        "--serve-runner/--no-serve-runner",
        default=True,
        show_default=True,
        help="With --nats-url: also serve the runner from this process (else only workers "
        "serve it).",
    ),
    _opt(
        "--show-reasons",
        is_flag=True,
        default=False,
        help="Show why a reward is below 1 (the reasons quote the expected values) in every "
        "state, the agent's MCP state and submit_answer result included; off: only a "
        "trainer's explicit request and the log get them.",
    ),
]
"""The command's options, in ``--help`` order."""


def serve_command() -> Any:
    """The click command ``envkernel serve`` (built on first use)."""
    import click

    def serve_cmd(target: str, **opts: Any) -> None:
        """Serve the environment(s) of ENV_DIR or RUN_DIR to trainers: OpenEnv's protocol on /ws,
        MCP on /mcp."""
        _serve(click, target, **opts)

    for decls, kwargs in reversed(_OPTIONS):
        if kwargs.get("type") == _FILE:
            kwargs = {**kwargs, "type": click.Path(dir_okay=False)}
        serve_cmd = click.option(*decls, **kwargs)(serve_cmd)
    serve_cmd = click.argument(
        "target", metavar="ENV_DIR|RUN_DIR", type=click.Path(file_okay=False)
    )(serve_cmd)
    return click.command("serve")(serve_cmd)


def _serve(
    click: Any,
    target: str,
    *,
    tasks_file: str | None,
    host: str,
    port: int,
    runner: str,
    config_file: str | None,
    sets: tuple[str, ...],
    seed: int | None,
    max_steps: int,
    tau: float | None,
    reward: str | None,
    warm: int,
    max_message_mb: float,
    nats_url: str | None,
    serve_runner: bool,
    reuse_sandboxes: bool = False,
    show_reasons: bool = False,
) -> None:
    """What ``envkernel serve`` does: read the catalog, bind, serve until a signal."""
    from envkernel.errors import UsageError

    from .catalog import CatalogError, load_catalog
    from .server import ServeSettings, make_server, run_server

    if max_steps < 1 or warm < 0 or (tau is not None and not 0.0 <= tau <= 1.0):
        raise UsageError("--max-steps must be at least 1, --warm at least 0 and --tau in [0, 1]")
    try:
        catalog = load_catalog(target, tasks_file, seed)
    except CatalogError as exc:
        raise UsageError(str(exc)) from None
    source = _sandbox_source(runner, config_file, sets, nats_url, serve_runner)
    opts = ServeSettings(host=host, port=port, max_steps=max_steps, tau=tau, reward=reward,
                         warm=warm, max_message_mb=max_message_mb,
                         fresh=not reuse_sandboxes, show_reasons=show_reasons)  # fmt: skip
    sock = _listen(host, port)
    port = sock.getsockname()[1]
    server, core = make_server(catalog, source, opts)
    skipped = (
        f", {len(catalog.skipped)} task lines skipped (see the log)" if catalog.skipped else ""
    )
    click.echo(
        f"serving {', '.join(catalog.envs)} ({len(catalog.tasks)} tasks{skipped}) at "
        f"http://{host}:{port} from {runner!r} sandboxes, graded by {core.reward_name!r}: "
        f"OpenEnv on ws://{host}:{port}/ws, MCP on http://{host}:{port}/mcp; Ctrl-C stops",
        err=True,
    )
    click.echo(
        "a trainer gets the grading's reasons with this token (agents must not): "
        f"export ENVKERNEL_SERVE_TOKEN={core.trainer_token}",
        err=True,
    )
    import signal

    # uvicorn stops on these, then re-raises them: exit 0, not a kill
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    run_server(server, sock)
    if not server.started:
        # the lifespan failed (a runner that cannot open a sandbox): uvicorn logged why
        raise SystemExit(3)


def _sandbox_source(
    runner: str,
    config_file: str | None,
    sets: tuple[str, ...],
    nats_url: str | None,
    serve_runner: bool,
) -> Any:
    """Where sessions' sandboxes come from: the runner built here, or the sandbox service on
    ``nats_url`` (with the runner also served from here if ``serve_runner``)."""
    from envkernel.envcmd import runner_component

    from .server import NatsSandboxes, RunnerSandboxes

    built = None
    if nats_url is None or serve_runner:
        component, settings = runner_component(runner, config_file, sets)
        built = (
            component.factory(settings)
            if component.settings_type is not None
            else component.factory()
        )
    return RunnerSandboxes(built) if nats_url is None else NatsSandboxes(nats_url, runner, built)


def _listen(host: str, port: int) -> Any:
    """The listening socket (a usage error naming the port if it cannot bind)."""
    from envkernel.errors import UsageError

    from .server import bind

    try:
        return bind(host, port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc}; pick another --port (0: any free one)"
        ) from None


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``envkernel serve``."""
    if "serve" not in cli.commands:
        cli.add_command(serve_command())
