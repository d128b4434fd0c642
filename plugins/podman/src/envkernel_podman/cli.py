"""``envkernel sandbox …``: build the image, list and reap sandbox containers.

Added to the ``envkernel`` command through the ``register_commands`` hook, so the kernel never
imports this plugin.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

import click

from .errors import SandboxError
from .image import DEFAULT_IMAGE, build_image


def _with_client(fn: Any, url: str = "") -> Any:
    from .runner import Settings
    from .service import Service, containers_conf, default_run_dir

    base = Settings().run_dir or default_run_dir()
    os.makedirs(base, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="cli-", dir=base)
    service = Service(url, folder, containers_conf(), idle=30)
    try:
        return fn(service.client(), base)
    finally:
        service.stop()
        shutil.rmtree(folder, ignore_errors=True)


def add_commands(cli: click.Group) -> None:
    """Add the ``sandbox`` group (or its commands, if another plugin already made the group)."""
    existing = cli.commands.get("sandbox")
    group = existing if isinstance(existing, click.Group) else sandbox
    if group is not sandbox:
        for cmd in sandbox.commands.values():
            if cmd.name not in group.commands:
                group.add_command(cmd)
    else:
        cli.add_command(sandbox)


@click.group("sandbox")
def sandbox() -> None:
    """Sandbox images and containers (the podman runner)."""


@sandbox.command("build-image")
@click.option(
    "--image", default=DEFAULT_IMAGE, show_default=True, help="Name of the image to build."
)
@click.option(
    "--mirror", default="", help="Debian mirror (default: the one this machine's apt uses)."
)
@click.option("--suite", default="bookworm", show_default=True, help="Debian suite.")
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def build_image_cmd(image: str, mirror: str, suite: str, force: bool) -> None:
    """Build the sandbox image offline: debootstrap a minimal Debian with python3, podman import it.

    Needs root, podman and debootstrap (scripts/install-podman.sh installs them). Podman's storage
    keeps the image: a second run returns at once unless --force.
    """
    from rich.console import Console

    console = Console(stderr=True)
    try:
        # a live line with the build's latest output; otherwise only the summary (or the failure's
        # tail)
        if console.is_terminal:
            with console.status(f"building {image}") as status:
                result = build_image(
                    image,
                    mirror=mirror,
                    suite=suite,
                    force=force,
                    on_line=lambda line: status.update(f"building {image}: {line[:100]}"),
                )
        else:
            result = build_image(
                image, mirror=mirror, suite=suite, force=force, on_line=lambda line: None
            )
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from None
    if result.built:
        click.echo(f"built {result.image} in {result.seconds:.0f} s")
    else:
        click.echo(f"{result.image} is already built (--force rebuilds it)")


@sandbox.command("ps")
@click.option(
    "--url", default="", help="A running podman service (default: start one for this command)."
)
def ps_cmd(url: str) -> None:
    """List envkernel sandbox containers, with their owner and expiry."""
    from .runner import LABEL, LABEL_EXPIRES, list_status
    from .service import Owner

    def go(client: Any, base: str) -> None:
        rows = client.containers.list(all=True, filters={"label": LABEL})
        if not rows:
            click.echo("no sandbox containers")
            return
        now = time.time()
        for c in rows:
            labels = c.labels or {}
            owner = Owner.from_labels(labels)
            alive = owner.alive() if owner else False
            left = float(labels.get(LABEL_EXPIRES, "0")) - now
            who = f"pid {owner.pid} on {owner.host}" if owner else "no owner"
            state = {True: "alive", False: "DEAD", None: "other host"}[alive]
            click.echo(
                f"{c.name}  {list_status(c)}  owner {who} ({state})  expires in {left:.0f} s"
            )

    try:
        _with_client(go, url)
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from None


@sandbox.command("reap")
@click.option(
    "--url", default="", help="A running podman service (default: start one for this command)."
)
def reap_cmd(url: str) -> None:
    """Remove sandbox containers whose owner process is gone or whose lifetime passed."""
    from .runner import reap_containers, reap_folders

    def go(client: Any, base: str) -> tuple[list[str], int]:
        return reap_containers(client), reap_folders(base)

    try:
        removed, folders = _with_client(go, url)
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"removed {len(removed)} container(s) and {folders} folder(s) of dead runners")
    for name in removed:
        click.echo(f"  {name}")
