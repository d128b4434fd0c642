"""Running ``envkernel serve``: where the sandboxes come from, and the uvicorn server.

Sandboxes come from one of two places:

* **a runner in this process** (default, ``--sandbox process``): the runner component is built
  here and each session's sandbox is one of its sandboxes (a confined subprocess, or a Podman
  container with ``--sandbox podman``), as ``envkernel env call`` and ``env serve --http`` do;
* **the sandbox service on NATS** (``--nats-url URL``): sandboxes are opened through the kernel's
  sandbox service (``envk.svc.sandbox.<runner>.open``) on whichever process serves the runner
  there: ``envkernel worker --plugins process`` processes on any host, or, with
  ``--serve-runner``, this process itself. Large observations must then fit the NATS server's
  ``max_payload`` (8 MiB on envkernel's embedded server).

:func:`start` runs a server in a background thread (for :func:`envkernel_serve.gym.make`, notebooks
and tests) and returns a :class:`Running` handle; the CLI runs it in the foreground.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import uvicorn

from envkernel.errors import UsageError
from envkernel_runtime.calls import close_instance
from envkernel_schemas import EnvSpec

from .app import build_app
from .catalog import Catalog, load_catalog
from .sessions import ServeCore, WarmPool

__all__ = [
    "bind",
    "run_server",
    "NatsSandboxes",
    "Running",
    "RunnerSandboxes",
    "ServeSettings",
    "make_server",
    "reward_model",
    "serve_local",
    "start",
]

log = structlog.get_logger("envkernel.serve")


@dataclass
class ServeSettings:
    """How a server runs (the CLI's options)."""

    host: str = "127.0.0.1"
    port: int = 8000
    max_steps: int = 64
    tau: float | None = None
    """τ of the trace + outcome reward (``traceoutcome``'s ``tau``); None: the reward's own."""
    reward: str | None = None
    """The reward model grading tasks without a check script; None: the run's (the catalog's), and
    the trace + outcome score when the catalog names none; "": that score, without a component."""
    warm: int = 2
    """Sandboxes of the default environment opened before the first session."""
    keep_idle: int = 256
    """Warm sandboxes kept for later sessions, per environment."""
    fresh: bool = True
    """No sandbox serves two sessions (False: a used one is restored for the next; see
    ``WarmPool``)."""
    max_message_mb: float = 0
    """Largest WebSocket message in MiB (0: no limit)."""
    mcp_idle_seconds: float = 600.0
    ws_compression: bool = False
    """Offer permessage-deflate on the WebSocket (off: on loopback it costs both sides more CPU than
    it saves)."""
    show_reasons: bool = False
    """Show the grading's reasons (they quote the expected values) in every state, the agent's
    MCP state resource and ``submit_answer`` result included (``--show-reasons``)."""
    trainer_token: str | None = None
    """The token a trainer sends to get the reasons; None: ``ENVKERNEL_SERVE_TOKEN``, else a new
    random one (``ServeCore.trainer_token``)."""


def trainer_token(given: str | None) -> str:
    """``given``, else ``ENVKERNEL_SERVE_TOKEN``, else a new random token."""
    import os
    import secrets

    return given or os.environ.get("ENVKERNEL_SERVE_TOKEN") or secrets.token_urlsafe(24)


class RunnerSandboxes:
    """Sandboxes from a runner built in this process (``runner.open(env, seed)``)."""

    def path_of(self, sandbox: Any) -> str:
        """``runner``: calls without a direct lane go to the runner's session here."""
        return "runner"

    def __init__(self, runner: Any) -> None:
        self.runner = runner

    async def open(self, env: EnvSpec, seed: int) -> Any:
        """A sandbox of the runner."""
        return await self.runner.open(env, seed)

    async def start(self) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Close the runner (every sandbox it still holds)."""
        aclose = getattr(self.runner, "aclose", None)
        if aclose is not None:
            await aclose()


class NatsSandboxes:
    """Sandboxes from the kernel's sandbox service on a NATS server (optionally served by this
    process too)."""

    def path_of(self, sandbox: Any) -> str:
        """The bus client's own answer: ``lane`` (same host) or ``bus``."""
        return str(sandbox.last_path)

    def __init__(
        self, url: str, runner_name: str, local_runner: Any = None, call_timeout: float = 60.0
    ) -> None:
        self.url = url
        self.runner_name = runner_name
        self.local_runner = local_runner
        self.call_timeout = call_timeout
        self.bus: Any = None
        self.service: Any = None

    async def start(self) -> None:
        """Connect, and serve the local runner on the bus when there is one."""
        from envkernel.sandbox import SandboxService
        from envkernel_bus import Bus

        self.bus = await Bus.connect(self.url, name="envkernel-serve", setup=False)
        if self.local_runner is not None:
            self.service = SandboxService(self.bus, self.runner_name, self.local_runner)
            await self.service.start()

    async def open(self, env: EnvSpec, seed: int) -> Any:
        """A sandbox from whichever process serves the runner on the bus."""
        from envkernel.sandbox import open_sandbox

        return await open_sandbox(
            self.bus, self.runner_name, env, seed=seed, call_timeout=self.call_timeout
        )

    async def aclose(self) -> None:
        """Stop serving the local runner and disconnect."""
        if self.service is not None:
            await self.service.stop()
        if self.bus is not None:
            await self.bus.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one; read it back with
    ``getsockname()``)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def run_server(server: uvicorn.Server, sock: socket.socket) -> None:
    """Serve until stopped, on uvloop's event loop when it is installed (libuv's loop: each step's
    socket reads and writes, timers and wake-ups cost a fraction of the standard loop's), else
    asyncio's own."""
    try:
        import uvloop  # optional speed-up
    except ImportError:
        asyncio.run(server.serve(sockets=[sock]))
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(server.serve(sockets=[sock]))


def reward_model(
    name: str, raw: dict[str, Any] | None = None, tau: float | None = None
) -> tuple[Any, Any]:
    """Build the reward model component ``name`` with its settings (``raw``, a run's resolved table
    of it, < ``ENVKERNEL_*`` variables < ``tau`` when given): ``(instance, settings)``. Raises
    ``envkernel.errors.UsageError`` for an unknown reward model or a ``tau`` it has no field for."""
    from envkernel.envcmd import role_component

    comp, _ = role_component("reward_model", name)
    fields = getattr(comp.settings_type, "__struct_fields__", ())
    if tau is not None and "tau" not in fields:
        raise UsageError(f"--tau is a setting of the trace + outcome reward; {name!r} has none")
    _, settings = role_component(
        "reward_model", name, raw, {"tau": tau} if tau is not None else None
    )
    return (comp.factory(settings) if comp.settings_type is not None else comp.factory()), settings


def make_server(
    catalog: Catalog, source: Any, settings: ServeSettings
) -> tuple[uvicorn.Server, ServeCore]:
    """A uvicorn server (not started) serving ``catalog`` with sandboxes from ``source``, graded by
    the reward model ``settings.reward`` (default: the run's, ``catalog.reward``)."""
    name = catalog.reward if settings.reward is None else settings.reward
    model = None
    if name:
        raw = catalog.reward_settings if name == catalog.reward else None
        try:
            model, _ = reward_model(name, raw, settings.tau)
        except UsageError as exc:
            if settings.reward is not None:
                raise
            # the run's reward model is not installed here: grade as serve did before it read it
            log.warning("the run's reward model is not available; trace + outcome", error=str(exc))
            name = ""
    core = ServeCore(
        catalog=catalog,
        pool=WarmPool(
            source, seed=catalog.seed, keep_idle=settings.keep_idle, fresh=settings.fresh
        ),
        max_steps=settings.max_steps,
        tau=0.0 if settings.tau is None else settings.tau,
        reward_model=model,
        reward_name=name or "serve",
        show_reasons=settings.show_reasons,
        trainer_token=trainer_token(settings.trainer_token),
    )

    async def on_start() -> None:
        await source.start()
        if settings.warm > 0:
            await core.pool.warm(catalog.default_env, settings.warm)
        log.info("serving", envs=list(catalog.envs), tasks=len(catalog.tasks), warm=core.pool.idle)

    async def on_stop() -> None:
        await source.aclose()
        if model is not None:
            await close_instance(model)

    app = build_app(
        core,
        host=settings.host,
        mcp_idle_seconds=settings.mcp_idle_seconds,
        on_start=on_start,
        on_stop=on_stop,
    )
    max_size = int(settings.max_message_mb * 1024 * 1024) if settings.max_message_mb > 0 else 2**40
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=max_size,
        ws_ping_interval=None,
        ws_per_message_deflate=settings.ws_compression,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config), core


@dataclass
class Running:
    """A server running in a background thread."""

    server: uvicorn.Server
    core: ServeCore
    thread: threading.Thread
    host: str
    port: int

    @property
    def url(self) -> str:
        """``http://HOST:PORT``: the base URL clients take (OpenEnv's ``base_url``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        """The session WebSocket, ``ws://HOST:PORT/ws``."""
        return f"ws://{self.host}:{self.port}/ws"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint (streamable HTTP), ``http://HOST:PORT/mcp``."""
        return f"{self.url}/mcp"

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving: every session's sandbox and the runner are closed."""
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(
    catalog: Catalog, source: Any, settings: ServeSettings | None = None, timeout: float = 60.0
) -> Running:
    """Start a server in a background thread (port 0 picks a free port) and wait until it serves."""
    settings = settings or ServeSettings(port=0)
    sock = bind(settings.host, settings.port)
    port = sock.getsockname()[1]
    server, core = make_server(catalog, source, settings)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            run_server(server, sock)
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, name="envkernel-serve", daemon=True)
    thread.start()
    import time

    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or failed:
            raise RuntimeError(
                "envkernel serve did not start: "
                f"{failed[0] if failed else 'the server thread ended'}"
            )
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"envkernel serve did not start within {timeout:g} s")
        time.sleep(0.02)
    return Running(server, core, thread, settings.host, port)


def serve_local(
    target: str | Path,
    *,
    tasks: str | Path | None = None,
    runner: str = "process",
    sets: tuple[str, ...] = (),
    seed: int | None = None,
    settings: ServeSettings | None = None,
) -> Running:
    """Serve ENV_DIR or RUN_DIR in a background thread, with sandboxes of the runner component
    ``runner`` (``sets``: its settings as ``KEY=VALUE``); what ``envkernel serve`` does, for a
    notebook or a test."""
    from envkernel.envcmd import runner_component

    catalog = load_catalog(target, tasks, seed)
    component, runner_settings = runner_component(runner, None, sets)
    built = (
        component.factory(runner_settings)
        if component.settings_type is not None
        else component.factory()
    )
    return start(catalog, RunnerSandboxes(built), settings or ServeSettings(port=0))
