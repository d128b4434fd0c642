"""``envkernel install`` / ``uninstall``: plugins in and out of the environment envkernel runs from
(as ``llm install`` does), with its own pip, or ``uv pip --python`` in a venv uv made (it has no
pip).

Both print the plugins that appeared, changed or went away. ``install`` keeps the kernel at its
version: PyPI's ``envkernel`` is another project (NordicHPC's Jupyter kernel tool, 1.x), which a
resolver that re-resolves the kernel would otherwise put in its place.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points, version
from pathlib import Path

import click
import structlog

from .errors import UsageError
from .hookspecs import PROJECT

log = structlog.get_logger("envkernel.install")

REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?=\s*(\[|[<>=!~;]|$))")
"""The distribution name at the start of a requirement (``envkernel-foo>=1``); paths and URLs do not
match."""

INSTALL_EPILOG = """Exit codes: 0 installed; 2 nothing named, or neither pip nor uv to install with;
otherwise pip's (or uv's) own exit code."""


def installer(verb: str) -> tuple[list[str], bool]:
    """The command that runs ``verb`` (install or uninstall) on this Python's packages, and whether
    it is uv's: the environment's pip, else ``uv pip --python``; a :class:`UsageError` when there is
    neither."""
    if importlib.util.find_spec("pip") is not None:
        return [
            sys.executable,
            "-m",
            "pip",
            verb,
            *(["--yes"] if verb == "uninstall" else []),
        ], False
    uv = shutil.which("uv")
    if uv is None:
        raise UsageError(
            f"cannot install into {sys.prefix}: this environment has no pip and uv is not on PATH. "
            f"Add pip with `{sys.executable} -m ensurepip`, or install uv "
            "(https://docs.astral.sh/uv/), then retry"
        )
    return [uv, "pip", verb, "--python", sys.executable], True


def plugin_versions() -> dict[str, str]:
    """Every installed plugin entry point, as ``name -> "distribution version"`` (metadata only)."""
    importlib.invalidate_caches()
    return {
        ep.name: f"{ep.dist.name} {ep.dist.version}" if ep.dist else "?"
        for ep in entry_points(group=PROJECT)
    }


def run_installer(cmd: list[str], before: dict[str, str]) -> None:
    """Run ``cmd``, then print the plugin changes since ``before``; exit with its code when it
    fails."""
    log.debug("running the installer", command=cmd)
    code = subprocess.call(cmd)
    if code != 0:
        click.echo(f"error: `{' '.join(cmd)}` exited {code}", err=True)
        sys.exit(code)
    after = plugin_versions()
    lines = [f"+ {n} ({after[n]})" for n in sorted(after.keys() - before.keys())]
    lines += [
        f"~ {n} ({before[n]} -> {after[n]})"
        for n in sorted(before.keys() & after.keys())
        if before[n] != after[n]
    ]
    lines += [f"- {n} ({before[n]})" for n in sorted(before.keys() - after.keys())]
    click.echo("\n".join(lines) or "no envkernel plugin was added, changed or removed")


@click.command("install", epilog=INSTALL_EPILOG)
@click.argument("packages", nargs=-1)
@click.option(
    "-U", "--upgrade", is_flag=True, help="Upgrade the packages to their newest versions."
)
@click.option(
    "-e",
    "--editable",
    multiple=True,
    metavar="PATH",
    help="Install a local project in editable mode (repeatable).",
)
@click.option("--pre", is_flag=True, help="Allow pre-release versions.")
@click.option(
    "-f",
    "--find-links",
    multiple=True,
    metavar="DIR|URL",
    help="Also look for packages here (repeatable).",
)
def install(
    packages: tuple[str, ...],
    upgrade: bool,
    editable: tuple[str, ...],
    pre: bool,
    find_links: tuple[str, ...],
) -> None:
    """Install plugins into envkernel's own environment.

    PACKAGES are what pip takes: names, paths, wheels or URLs. The kernel keeps its version, and
    -U upgrades the named packages only (and what they need).
    """
    if not packages and not editable:
        raise UsageError("nothing to install: name a package (or a path), or give -e PATH")
    cmd, uv = installer("install")
    if upgrade and not uv:
        cmd.append("--upgrade")  # pip's default strategy upgrades only the named packages
    elif (
        upgrade
    ):  # uv's --upgrade would upgrade every package (envkernel's own are not on PyPI): name them
        names = [
            m.group(0)
            for p in packages
            if not Path(p).exists() and (m := REQUIREMENT_NAME.match(p))
        ]
        cmd += [a for name in names for a in ("--upgrade-package", name)]
    if pre:
        cmd.append("--prerelease=allow" if uv else "--pre")
    for link in find_links:
        cmd += ["--find-links", link]
    for path in editable:
        cmd += ["--editable", path]
    before = plugin_versions()
    with tempfile.TemporaryDirectory(prefix="envkernel-install-") as tmp:
        pin = Path(tmp) / "constraints.txt"
        pin.write_text(f"envkernel=={version('envkernel')}\n")
        run_installer([*cmd, "--constraint", str(pin), *packages], before)
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.is_file() and any(
        line.split("=")[0].strip() == "uv" for line in cfg.read_text().splitlines()
    ):
        click.echo(
            f"note: {sys.prefix} was made by uv. If `uv sync` manages it, the next sync "
            "removes what uv.lock does not list: keep these packages with `uv sync "
            "--inexact`, or add them to the project with `uv add`",
            err=True,
        )


@click.command("uninstall")
@click.argument("packages", nargs=-1, required=True)
def uninstall(packages: tuple[str, ...]) -> None:
    """Uninstall plugins from envkernel's own environment.

    PACKAGES are distribution names; they are removed without asking.
    """
    run_installer([*installer("uninstall")[0], *packages], plugin_versions())
