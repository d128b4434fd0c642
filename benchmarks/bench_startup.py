"""Start-up and whole-run wall time of the ``envkernel`` command, against baselines from the same
run.

Each round runs every command once, in the same order, as a user would type it (a subprocess of
this venv's ``envkernel`` script, in a fresh folder): ``python -c pass`` and
``python -c "import envkernel"`` (the baselines), ``envkernel plugins --json``, ``envkernel
--help``, then (in the first ``--run-rounds`` rounds) a bare ``envkernel run`` and ``envkernel run
--source sample``. The machine is noisy, so the commands alternate and the figures are medians.
For runs, ``outside_summary`` is the wall time the run's own ``summary.json`` ``seconds`` leaves
out (interpreter, imports, plugin loading, server start and stop). Prints figures; the last line
is JSON.

    python benchmarks/bench_startup.py [--rounds 7] [--run-rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENVKERNEL = Path(sys.executable).with_name("envkernel")
"""The ``envkernel`` script of this venv."""

QUICK: dict[str, list[str]] = {
    "python_pass": [sys.executable, "-c", "pass"],
    "import_envkernel": [sys.executable, "-c", "import envkernel"],
    "plugins": [str(ENVKERNEL), "plugins", "--json"],
    "help": [str(ENVKERNEL), "--help"],
}
"""The commands run in every round, by figure name."""

RUNS: dict[str, list[str]] = {
    "run_bare": [str(ENVKERNEL), "run"],
    "run_sample": [str(ENVKERNEL), "run", "--source", "sample"],
}
"""The runs, in the first ``--run-rounds`` rounds."""


def clean_env(xdg: Path) -> dict[str, str]:
    """The environment without envkernel settings (so a run is bare), with a private
    ``XDG_RUNTIME_DIR`` (so ``envkernel tap`` elsewhere does not find the benchmark's runs)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ENVKERNEL_", "OPENAI_")) and k != "PYTHONPATH"
    }
    return {**env, "XDG_RUNTIME_DIR": str(xdg)}


def timed(cmd: list[str], cwd: Path) -> tuple[float, float | None]:
    """Run ``cmd`` in ``cwd``; its wall time, and the ``seconds`` of the summary.json it wrote (if
    any)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=clean_env(cwd.parent / "xdg"), capture_output=True, text=True, timeout=600
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    summaries = list(cwd.glob("envkernel-out/*/summary.json"))
    return wall, (json.loads(summaries[0].read_text())["seconds"] if summaries else None)


def main(rounds: int, run_rounds: int) -> dict[str, Any]:
    """Run the rounds; return the medians and ratios."""
    walls: dict[str, list[float]] = {name: [] for name in [*QUICK, *RUNS]}
    inside: dict[str, list[float]] = {name: [] for name in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "xdg").mkdir(mode=0o700)
        for r in range(rounds):
            todo = {**QUICK, **(RUNS if r < run_rounds else {})}
            for name, cmd in todo.items():
                cwd = Path(tmp) / f"{name}-{r}"
                cwd.mkdir()
                wall, seconds = timed(cmd, cwd)
                walls[name].append(wall)
                if seconds is not None:
                    inside[name].append(seconds)
            print(
                f"round {r + 1}/{rounds}: " + ", ".join(f"{n} {walls[n][-1]:.2f} s" for n in todo),
                flush=True,
            )
    med = {name: round(statistics.median(v), 3) for name, v in walls.items() if v}
    result: dict[str, Any] = {
        "benchmark": "startup",
        "rounds": rounds,
        "run_rounds": run_rounds,
        "cpus": os.cpu_count(),
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        **{f"{name}_wall_s": v for name, v in med.items()},
        **{
            f"{name}_wall_s_min_max": [round(min(v), 3), round(max(v), 3)]
            for name, v in walls.items()
            if v
        },
        "plugins_over_python_pass": round(med["plugins"] / med["python_pass"], 2),
        "plugins_over_import_envkernel": round(med["plugins"] / med["import_envkernel"], 2),
        "help_over_python_pass": round(med["help"] / med["python_pass"], 2),
    }
    for name, v in inside.items():
        if v:
            result[f"{name}_summary_seconds"] = round(statistics.median(v), 3)
            result[f"{name}_outside_summary_s"] = round(
                statistics.median(w - s for w, s in zip(walls[name], v, strict=True)), 3
            )
    print(
        f"median wall: python -c pass {med['python_pass']:.3f} s, import envkernel "
        f"{med['import_envkernel']:.3f} s, envkernel plugins {med['plugins']:.3f} s "
        f"({result['plugins_over_python_pass']}x python -c pass), envkernel --help "
        f"{med['help']:.3f} s"
    )
    for name in RUNS:
        if name in med:
            print(
                f"median wall: {' '.join(RUNS[name][1:])} {med[name]:.2f} s (summary.json "
                f"seconds {result[f'{name}_summary_seconds']:.2f}, start-up and shut-down "
                f"{result[f'{name}_outside_summary_s']:.2f} s)"
            )
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=7, help="Rounds of the quick commands.")
    ap.add_argument(
        "--run-rounds",
        type=int,
        default=3,
        help="Rounds that also do the two runs (at most --rounds).",
    )
    args = ap.parse_args()
    print(json.dumps(main(args.rounds, min(args.run_rounds, args.rounds))))
