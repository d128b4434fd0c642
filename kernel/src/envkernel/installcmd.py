"""``envkernel install`` and ``envkernel uninstall``: add plugins to, or take them out of, the Python
environment envkernel itself runs from (as ``llm install`` does).

The environment's own pip does the work (``python -m pip``). A venv made by uv has no pip; then
``uv pip --python <this python>`` does it when uv is on PATH, and otherwise the command says what
to do. Both commands print the plugins that appeared, changed or went away. ``install`` never changes the
kernel's own version (see :func:`kernel_pin`).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import entry_points, version
from pathlib import Path

import click
import structlog

from .errors import UsageError
from .hookspecs import PROJECT

log = structlog.get_logger("envkernel.install")


def installer() -> tuple[list[str], str]:
    """The command that manages this Python's packages, and its kind (``pip`` or ``uv``).

    The environment's pip when it has one, else ``uv pip`` (pointed at this Python by
    :func:`pip_args`). Raises :class:`UsageError` when neither is there.
    """
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"], "pip"
    uv = shutil.which("uv")
    if uv is not None:
        return [uv, "pip"], "uv"
    raise UsageError(f"cannot install into {sys.prefix}: this environment has no pip and uv is not on PATH. "
                     f"Add pip with `{sys.executable} -m ensurepip`, or install uv (https://docs.astral.sh/uv/), then retry")


@dataclass(frozen=True)
class InstallFlags:
    """The pip flags ``envkernel install`` passes through."""

    upgrade: bool = False
    editable: tuple[str, ...] = ()
    force_reinstall: bool = False
    pre: bool = False
    find_links: tuple[str, ...] = ()


def pip_args(verb: str, kind: str, flags: InstallFlags = InstallFlags()) -> list[str]:
    """The arguments after ``pip`` / ``uv pip`` for ``verb`` (install or uninstall), in that tool's spelling."""
    args = [verb]
    if kind == "uv":
        args += ["--python", sys.executable]
    elif verb == "uninstall":
        args.append("--yes")
    if flags.upgrade:
        args.append("--upgrade")
    if flags.force_reinstall:
        args.append("--reinstall" if kind == "uv" else "--force-reinstall")
    if flags.pre:
        args.append("--prerelease=allow" if kind == "uv" else "--pre")
    for link in flags.find_links:
        args += ["--find-links", link]
    for path in flags.editable:
        args += ["--editable", path]
    return args


def plugin_versions() -> dict[str, str]:
    """Every installed plugin entry point, as ``name -> "distribution version"`` (read from metadata, nothing imported)."""
    importlib.invalidate_caches()
    found: dict[str, str] = {}
    for ep in entry_points(group=PROJECT):
        dist = ep.dist
        found[ep.name] = f"{dist.name} {dist.version}" if dist is not None else "?"
    return found


def report_changes(before: dict[str, str], after: dict[str, str]) -> None:
    """Print the plugins that appeared (+), changed (~) or went away (-)."""
    lines = [f"+ {n} ({after[n]})" for n in sorted(after.keys() - before.keys())]
    lines += [f"~ {n} ({before[n]} -> {after[n]})" for n in sorted(before.keys() & after.keys()) if before[n] != after[n]]
    lines += [f"- {n} ({before[n]})" for n in sorted(before.keys() - after.keys())]
    click.echo("\n".join(lines) if lines else "no envkernel plugin was added, changed or removed")


def made_by_uv() -> bool:
    """Whether this environment is a venv that uv created (its pyvenv.cfg says so)."""
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    return cfg.is_file() and any(line.split("=")[0].strip() == "uv" for line in cfg.read_text().splitlines())


def kernel_pin(folder: Path) -> Path:
    """A pip constraints file in ``folder`` that keeps the running kernel at its version.

    PyPI's ``envkernel`` is another project (NordicHPC's Jupyter kernel tool, 1.x): without the pin,
    ``--upgrade`` under uv, or ``--force-reinstall``, would replace this kernel with it.
    """
    path = folder / "constraints.txt"
    path.write_text(f"envkernel=={version('envkernel')}\n")
    return path


def run_installer(verb: str, packages: tuple[str, ...], flags: InstallFlags = InstallFlags()) -> None:
    """Run pip (or uv pip) with ``verb`` on this environment, then report the plugin changes; exits with
    the tool's exit code when it fails."""
    cmd, kind = installer()
    before = plugin_versions()
    with tempfile.TemporaryDirectory(prefix="envkernel-install-") as tmp:
        full = [*cmd, *pip_args(verb, kind, flags), *packages]
        if verb == "install":
            full += ["--constraint", str(kernel_pin(Path(tmp)))]
        log.debug("running the installer", command=full)
        code = subprocess.call(full)
    if code != 0:
        click.echo(f"error: `{' '.join(full)}` exited {code}", err=True)
        sys.exit(code)
    report_changes(before, plugin_versions())
    if verb == "install" and made_by_uv():
        click.echo(f"note: {sys.prefix} was made by uv. If `uv sync` manages it, the next sync removes what uv.lock does not list: "
                   "keep these packages with `uv sync --inexact`, or add them to the project with `uv add`", err=True)


INSTALL_EPILOG = """Exit codes: 0 installed; 2 nothing named, or neither pip nor uv to install with;
otherwise pip's (or uv's) own exit code."""


@click.command("install", epilog=INSTALL_EPILOG)
@click.argument("packages", nargs=-1)
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade the packages to their newest versions.")
@click.option("-e", "--editable", multiple=True, metavar="PATH", help="Install a local project in editable mode (repeatable).")
@click.option("--force-reinstall", is_flag=True, help="Reinstall the packages even if they are up to date.")
@click.option("--pre", is_flag=True, help="Allow pre-release versions.")
@click.option("-f", "--find-links", multiple=True, metavar="DIR|URL", help="Also look for packages here (repeatable).")
def install(packages: tuple[str, ...], upgrade: bool, editable: tuple[str, ...], force_reinstall: bool, pre: bool, find_links: tuple[str, ...]) -> None:
    """Install plugins into envkernel's own environment.

    PACKAGES are what pip takes: names, paths, wheels or URLs. The kernel keeps its version.
    """
    if not packages and not editable:
        raise UsageError("nothing to install: name a package (or a path), or give -e PATH")
    run_installer("install", packages, InstallFlags(upgrade, editable, force_reinstall, pre, find_links))


@click.command("uninstall")
@click.argument("packages", nargs=-1, required=True)
def uninstall(packages: tuple[str, ...]) -> None:
    """Uninstall plugins from envkernel's own environment.

    PACKAGES are distribution names; they are removed without asking.
    """
    run_installer("uninstall", packages)
