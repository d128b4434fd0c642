"""``envkernel env``: try an environment by hand.

``envkernel env call ENV_DIR TOOL --args JSON`` opens a sandbox holding the environment stored in
ENV_DIR (a run's ``envs/<id>/``), calls one tool and prints the result, or the error, as one JSON
object. The environment's code runs only inside the sandbox (the runner's subprocess or
container), never in this process. It is how a suspicious environment can be tried from outside.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

import click
import msgspec

from .errors import SandboxError, UsageError

EXIT_TOOL_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_SANDBOX = 3

ENV_CALL_EPILOG = """Prints {"ok": true, "value": ...} or {"ok": false, "error": {"code": ..., "message": ...}}.
Exit codes: 0 the tool succeeded; 1 the tool returned an error; 2 usage error (bad folder,
arguments or runner); 3 the sandbox could not be opened."""


class EnvGroup(click.Group):
    """``envkernel env``: built-in subcommands, plus those plugins add (``env serve``) on first use."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and hasattr(ctx.find_root().command, "_load_plugin_commands"):
            ctx.find_root().command._load_plugin_commands()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.get_command(ctx, "")
        return super().list_commands(ctx)


@click.group("env", cls=EnvGroup)
def env() -> None:
    """Try an environment by hand (in a sandbox)."""


@env.command("call", epilog=ENV_CALL_EPILOG)
@click.argument("env_dir", type=click.Path(file_okay=False))
@click.argument("tool")
@click.option("--args", "args_json", default="{}", show_default=True, help="The tool's arguments, a JSON object.")
@click.option("--sandbox", "runner", default="process", show_default=True, help="Sandbox runner component.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the environment's state.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None, help="TOML config file; its [RUNNER] table configures the runner.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set one runner setting, e.g. call_timeout=2 (repeatable).")
@click.option("--verbose", is_flag=True, help="Also print, on stderr, how long the call took and what the sandbox was confined with.")
def call(env_dir: str, tool: str, args_json: str, runner: str, seed: int, config_file: str | None, sets: tuple[str, ...], verbose: bool) -> None:
    """Call TOOL of the environment in ENV_DIR once, in a fresh sandbox, and print the result as JSON."""
    from envkernel_runtime.envdir import EnvDirError, load_env_dir

    try:
        spec = load_env_dir(env_dir)
    except EnvDirError as exc:
        raise UsageError(str(exc)) from None
    try:
        arguments = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UsageError(f"--args must be a JSON object, got {type(arguments).__name__}")
    component, settings = _runner(runner, config_file, sets)
    out, code = asyncio.run(_call(component, settings, spec, tool, arguments, seed, verbose))
    click.echo(json.dumps(out, ensure_ascii=False))
    sys.exit(code)


def _runner(name: str, config_file: str | None, sets: tuple[str, ...]) -> tuple[Any, Any]:
    """The sandbox-runner component ``name`` (through the plugin registry) and its settings."""
    from . import config as cfgmod
    from .plugins import installed, load

    available = installed()
    registry = load([name] if name in available else sorted(available))
    comp = registry.components.get(name)
    if comp is None or comp.role != "sandbox_runner":
        runners = sorted(c.name for c in registry.components.values() if c.role == "sandbox_runner")
        broken = f"; broken plugins: {', '.join(sorted(registry.broken))}" if registry.broken else ""
        raise UsageError(f"no sandbox runner named {name!r}; installed runners: {', '.join(runners) or 'none'}{broken}")
    _top, sections = cfgmod.split_file(cfgmod.read_file(config_file), str(config_file or "config"))
    flags: dict[str, Any] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not (eq and key):
            raise UsageError(f"--set {item!r}: expected KEY=VALUE (a setting of runner {name!r})")
        try:
            flags[key] = json.loads(value)
        except json.JSONDecodeError:
            flags[key] = value
    # the file's [RUNNER] table < ENVKERNEL_* variables < --set, as for `envkernel run`
    return comp, cfgmod.settings_for(name, comp.settings_type, sections.get(name), flags=flags)


async def _call(component: Any, settings: Any, spec: Any, tool: str, arguments: dict[str, Any], seed: int, verbose: bool) -> tuple[dict[str, Any], int]:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        try:  # a terminated `env call` still closes its sandbox
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    runner = component.factory(settings) if component.settings_type is not None else component.factory()
    try:
        try:
            session = await runner.open(spec, seed)
        except Exception as exc:  # noqa: BLE001 - any runner failure is reported as JSON
            message = str(exc) if isinstance(exc, SandboxError) else f"{type(exc).__name__}: {exc}"
            return {"ok": False, "error": {"code": "sandbox_error", "message": f"could not open a {component.name!r} sandbox for {spec.id!r}: {message}"}}, EXIT_SANDBOX
        try:
            t0 = time.perf_counter()
            try:
                result = await session.call(tool, arguments)
            except Exception as exc:  # noqa: BLE001 - a runner bug is still an answer
                result = {"ok": False, "error": {"code": "sandbox_error", "message": f"{type(exc).__name__}: {exc}"}}
            if verbose:
                info = {"seconds": round(time.perf_counter() - t0, 6), "confinement": getattr(session, "confinement", None),
                        "events": getattr(session, "events", None)}
                click.echo(f"sandbox: {json.dumps(info, default=str)}", err=True)
        finally:
            await session.close()
    finally:
        aclose = getattr(runner, "aclose", None)
        if aclose is not None:
            await aclose()
        try:
            loop.remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError):
            pass
    out = msgspec.to_builtins(result)
    if not isinstance(out, dict) or "ok" not in out:
        out = {"ok": False, "error": {"code": "sandbox_error", "message": f"the runner answered {out!r}, not a tool result"}}
    if out.get("ok"):
        return {"ok": True, "value": out.get("value")}, EXIT_TOOL_OK
    return {"ok": False, "error": out.get("error")}, EXIT_TOOL_ERROR
