"""Memory of the ``rl`` exporter's ``finish`` (``rl.jsonl`` -> ``rl.parquet``) at the size of a
20,000-task run.

One real ``envkernel run`` over the OpenAPI corpus (``--set chains.tasks_per_env=15``, about 100
tasks) gives real RL rows. Its ``rl.jsonl`` is repeated up to ``--rows`` rows (default 20,000).
Then two ways of writing ``rl.parquet`` from it run alternately, each in a fresh process so that
its peak RSS (``ru_maxrss``) is its own:

- **A**, all rows at once: every row of ``rl.jsonl`` into a list, one ``rl_table``, one
  ``pq.write_table``. This is what ``Rl.finish`` did before.
- **B**, ``Rl.finish`` as it is: ``PARQUET_BATCH`` rows at a time into a ``ParquetWriter``.

Both must give the same table. Prints figures; the last line is JSON.

    python benchmarks/bench_rl_parquet.py [--rows 20000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENVKERNEL = Path(sys.executable).with_name("envkernel")


def _trial(side: str, src: Path, out: Path) -> dict[str, Any]:
    """One trial in this process: write ``out/rl.parquet`` from ``src`` (A: all at once, B:
    ``Rl.finish``)."""
    import asyncio
    import types

    import pyarrow.parquet as pq

    from envkernel_export import Rl
    from envkernel_export.rows import rl_table

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, out / "rl.jsonl")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if side == "A":
        rows = [json.loads(line) for line in open(out / "rl.jsonl", "rb") if line.strip()]
        pq.write_table(rl_table(rows), out / "rl.parquet")
    else:
        ctx = types.SimpleNamespace(
            out_dir=str(out), log=types.SimpleNamespace(info=lambda *a, **k: None)
        )
        asyncio.run(Rl().finish(ctx))
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "side": side,
        "rows": pq.read_metadata(out / "rl.parquet").num_rows,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_before_mb": round(before / 1024, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rows", type=int, default=20000, help="rows of rl.jsonl to write out (default 20000)"
    )
    ap.add_argument("--rounds", type=int, default=2, help="A/B rounds (default 2)")
    ap.add_argument("--trial", nargs=3, metavar=("SIDE", "SRC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial:
        print(json.dumps(_trial(args.trial[0], Path(args.trial[1]), Path(args.trial[2]))))
        return
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="bench-rlpq-") as tmp:
        root = Path(tmp)
        print("a real run for its RL rows ...", flush=True)
        subprocess.run(
            [
                str(ENVKERNEL),
                "run",
                "--source",
                "openapi",
                "--plugins",
                "+users",
                "--set",
                "chains.tasks_per_env=15",
                "--no-progress",
                "--run-id",
                "rlpq",
                "--out",
                str(root),
            ],
            check=True,
            capture_output=True,
            timeout=900,
        )
        lines = [
            x
            for x in (root / "rlpq" / "rl.jsonl").read_bytes().splitlines(keepends=True)
            if x.strip()
        ]
        src = root / "rl-big.jsonl"
        with open(src, "wb") as f:
            for i in range(args.rows):
                f.write(lines[i % len(lines)])
        print(
            f"rl.jsonl: {args.rows} rows ({len(lines)} distinct), "
            f"{src.stat().st_size / 1e6:.1f} MB",
            flush=True,
        )
        trials: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
        for r in range(args.rounds):
            for side in ("A", "B"):
                out = root / f"{side}{r}"
                got = json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--trial", side, str(src), str(out)],
                        check=True,
                        capture_output=True,
                        text=True,
                        timeout=900,
                    ).stdout.splitlines()[-1]
                )
                trials[side].append(got)
                print(
                    f"{side}{r + 1}: {got['rows']} rows in {got['seconds']} s, peak RSS "
                    f"{got['peak_rss_mb']} MB (process start {got['rss_before_mb']} MB)",
                    flush=True,
                )
        same = pq.read_table(root / "A0" / "rl.parquet").equals(
            pq.read_table(root / "B0" / "rl.parquet")
        )
        print(f"the same table both ways: {same}")

    def mean(side: str, key: str) -> float:
        return round(sum(t[key] for t in trials[side]) / len(trials[side]), 2)

    a, b = mean("A", "peak_rss_mb"), mean("B", "peak_rss_mb")
    print(
        json.dumps(
            {
                "benchmark": "rl_parquet",
                "rows": args.rows,
                "rounds": args.rounds,
                "same_table": same,
                "all_rows_at_once_peak_rss_mb": a,
                "batched_peak_rss_mb": b,
                "batched_over_all_rows_peak_rss": round(b / a, 3),
                "all_rows_at_once_seconds": mean("A", "seconds"),
                "batched_seconds": mean("B", "seconds"),
            }
        )
    )


if __name__ == "__main__":
    main()
