"""``envkernel workspace export RUN_DIR``: write a finished run's workspace tasks as PinchBench
task files (the same files the ``pinchbench-export`` exporter writes during a run). Added to the
``envkernel`` command through the ``register_commands`` hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import msgspec

from envkernel_runtime.envdir import EnvDirError, load_env_dir, write_atomic
from envkernel_schemas import Task

from .pinchbench import PinchBenchError, export_name, export_task


@click.group("workspace")
def workspace() -> None:
    """Workspace environments (the workspace plugin)."""


@workspace.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the task files (default: RUN_DIR/pinchbench).",
)
def export_cmd(run_dir: Path, out: Path | None) -> None:
    """Write every workspace task of RUN_DIR/tasks.jsonl as a PinchBench task file."""
    tasks_file = run_dir / "tasks.jsonl"
    if not tasks_file.is_file():
        raise click.UsageError(
            f"{run_dir} has no tasks.jsonl; give the folder of a finished run "
            "(envkernel-out/<run-id>)"
        )
    out = out or run_dir / "pinchbench"
    out.mkdir(parents=True, exist_ok=True)
    written, skipped = 0, 0
    for n, line in enumerate(tasks_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            task = msgspec.convert(json.loads(line), Task)
        except (ValueError, msgspec.ValidationError) as exc:
            click.echo(f"{tasks_file}:{n}: not a task ({exc}); skipped", err=True)
            skipped += 1
            continue
        if not task.outcome.check:
            continue
        try:
            env = load_env_dir(run_dir / "envs" / task.env_id)
            assets: dict[str, bytes] = {}
            write_atomic(out / export_name(task), export_task(task, env, assets=assets))
            for name, data in assets.items():
                (out / "assets").mkdir(exist_ok=True)
                write_atomic(out / "assets" / name, data)
            written += 1
        except (EnvDirError, PinchBenchError) as exc:
            click.echo(f"task {task.id}: {exc}; skipped", err=True)
            skipped += 1
    click.echo(f"{written} task files in {out}" + (f" ({skipped} skipped)" if skipped else ""))


def add_commands(cli: Any) -> None:
    """Add the ``workspace`` group."""
    if "workspace" not in cli.commands:
        cli.add_command(workspace)
