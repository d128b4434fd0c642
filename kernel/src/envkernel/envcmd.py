"""``envkernel env``: try an environment by hand.

``envkernel env call ENV_DIR TOOL --args JSON`` opens a sandbox holding the environment stored in
ENV_DIR (a run's ``envs/<id>/``), calls one tool and prints the result, or the error, as one JSON
object. The environment's code runs only inside the sandbox (the runner's subprocess or
container), never in this process. It is how a suspicious environment can be tried from outside.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click

from envkernel_runtime.oneshot import call_once

from .errors import SandboxError, UsageError

ENV_CALL_EPILOG = """Prints {"ok": true, "value": ...} or {"ok": false, "error": {"code": ..., \
"message": ...}}.
Exit codes: 0 the tool succeeded; 1 the tool returned an error; 2 usage error (bad folder,
arguments or runner); 3 the sandbox could not be opened."""


class EnvGroup(click.Group):
    """``envkernel env``: built-in subcommands, plus those plugins add (``env serve``) on first
    use."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        root = ctx.find_root().command
        if cmd_name not in self.commands and (load := getattr(root, "load_plugin_commands", None)):
            load()
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
@click.option(
    "--args",
    "args_json",
    default="{}",
    show_default=True,
    help="The tool's arguments, a JSON object.",
)
@click.option(
    "--sandbox", "runner", default="process", show_default=True, help="Sandbox runner component."
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the environment's state."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML config file; its [RUNNER] table configures the runner.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set one runner setting, e.g. call_timeout=2 (repeatable).",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Also print, on stderr, how long the call took and what the sandbox was confined with.",
)
def call(
    env_dir: str,
    tool: str,
    args_json: str,
    runner: str,
    seed: int,
    config_file: str | None,
    sets: tuple[str, ...],
    verbose: bool,
) -> None:
    """Call TOOL of the environment in ENV_DIR once, in a fresh sandbox, and print the result as
    JSON."""
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
    component, settings = runner_component(runner, config_file, sets)
    built = (
        component.factory(settings) if component.settings_type is not None else component.factory()
    )
    out, code = asyncio.run(
        call_once(
            built,
            component.name,
            spec,
            tool,
            arguments,
            seed,
            known=(SandboxError,),
            verbose=verbose,
        )
    )
    click.echo(json.dumps(out, ensure_ascii=False))
    sys.exit(code)


_ROLE_NAMES = {
    "sandbox_runner": ("sandbox runner", "runners"),
    "reward_model": ("reward model", "reward models"),
}


def role_component(
    role: str, name: str, raw: dict[str, Any] | None = None, flags: dict[str, Any] | None = None
) -> tuple[Any, Any]:
    """The component ``name`` of ``role`` (through the plugin registry) and its settings: the
    table ``raw`` < ``ENVKERNEL_*`` variables < ``flags``, as for ``envkernel run``. Raises
    :class:`UsageError` naming the installed components of the role when there is no such one."""
    from . import config as cfgmod
    from .plugins import installed, load

    available = installed()
    registry = load([name] if name in available else sorted(available))
    comp = registry.components.get(name)
    if comp is None or comp.role != role:
        one, many = _ROLE_NAMES.get(role, (role, f"{role} components"))
        names = sorted(c.name for c in registry.components.values() if c.role == role)
        broken = (
            f"; broken plugins: {', '.join(sorted(registry.broken))}" if registry.broken else ""
        )
        raise UsageError(
            f"no {one} named {name!r}; installed {many}: {', '.join(names) or 'none'}{broken}"
        )
    return comp, cfgmod.settings_for(name, comp.settings_type, raw, flags=flags)


def runner_component(name: str, config_file: str | None, sets: tuple[str, ...]) -> tuple[Any, Any]:
    """The sandbox-runner component ``name`` (through the plugin registry) and its settings."""
    from . import config as cfgmod

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
    return role_component("sandbox_runner", name, sections.get(name), flags)
