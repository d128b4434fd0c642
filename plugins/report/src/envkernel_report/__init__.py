"""envkernel-report: ``envkernel report RUN_DIR``, one self-contained HTML page of a run.

The page shows the verification yield per domain and environment, the reward histograms per
policy and iteration, the reward curve, the chain-length and difficulty distributions, the gate's
results (rejections by reason, near-miss mutants killed), a few sample tasks per environment
with their reference and one rollout transcript, the table of an ``envkernel eval`` run, each
environment's tool graph (drawn per resource, or a table when dense) and the failures table.
Charts are matplotlib SVG inlined in the page (no JavaScript, no network), laid out by a Jinja2
template. An interrupted run's folder gets a page too, with a note on what is
missing. See docs/report.md.
"""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkernel.hookspecs import hookimpl

if TYPE_CHECKING:
    from .load import RunData

__all__ = ["build_report", "report_cmd"]
# matplotlib, networkx and jinja2 are imported only when a report is made: loading the plugin
# (``envkernel --help``, ``envkernel plugins``) must stay cheap.


def build_report(
    run_dir: Path, out: Path | None = None, *, show_progress: bool = True
) -> tuple[Path, RunData]:
    """Read ``run_dir``, write its report page to ``out`` (default ``RUN_DIR/report.html``), and
    return both.

    On a terminal it shows a live progress bar (rich) while it reads the run's JSON-lines files and
    draws the charts; otherwise it shows nothing (the caller prints the one-line summary).
    """
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir / "report.html"
    total = (
        sum(p.stat().st_size for p in run_dir.glob("*.jsonl") if p.is_file())
        if run_dir.is_dir()
        else 0
    )
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    from .load import load_run
    from .page import render

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not (show_progress and console.is_terminal),
        transient=True,
    ) as bar:
        reading = bar.add_task("reading the run", total=total or None)
        data = load_run(run_dir, progress=lambda n: bar.advance(reading, n))
        bar.update(reading, completed=total)
        drawing = bar.add_task("drawing", total=8)
        page = render(
            data,
            step=lambda name: (
                bar.update(drawing, description=f"drawing {name}"),
                bar.advance(drawing),
            ),
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out, data


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the page (default: RUN_DIR/report.html).",
)
@click.option(
    "--open",
    "open_",
    is_flag=True,
    help="Open the page in the default web browser when it is written.",
)
def report_cmd(run_dir: Path, out: Path | None, open_: bool) -> None:
    """Write one self-contained HTML page of a run folder: yield, rewards, tasks, gate, tool graphs,
    failures."""
    from envkernel.errors import UsageError

    from .load import NotARunFolder

    t0 = time.monotonic()
    try:
        path, data = build_report(run_dir, out)
    except NotARunFolder as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(
            f"cannot write the report to {out or run_dir / 'report.html'}: {exc.strerror or exc}; "
            "pick another place with --out"
        ) from None
    size = path.stat().st_size
    rollouts = sum(len(v) for v in data.rewards.values())
    notes = f", {len(data.notes)} note(s) on missing or damaged files" if data.notes else ""
    click.echo(
        f"report of run {data.run_id}: {len(data.envs)} envs, "
        f"{sum(data.chain_lengths.values())} tasks, {rollouts} rollouts{notes} -> {path} "
        f"({size / 1024:.0f} KiB) in {time.monotonic() - t0:.1f} s"
    )
    if open_:
        webbrowser.open(path.resolve().as_uri())


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``envkernel report RUN_DIR``."""
    cli.add_command(report_cmd)
