"""The learner's reward curve:
``envkernel run --plugins +reinforce --policy reinforce --iterations N``.

Runs the real pipeline (embedded NATS, process sandboxes, chains tasks, traceoutcome rewards) for
several seeds at once, then prints, per iteration, the mean reward on train and on held-out tasks
(averaged over seeds), and the held-out gain of the trained policy over the random policy
(iteration 0: all weights 0), with its standard error over tasks. Each run folder holds its
``reward_curve.png``. The last line is JSON; ``reward_curve`` / ``reward_curve_heldout`` are lists.

    python benchmarks/bench_learner.py [--seeds 1,2,3] [--iterations 8] [-G 4] [--all-envs]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from envkernel_reinforce.evaluate import compare

CORPUS = (
    Path(__file__).resolve().parents[1]
    / "plugins"
    / "openapi"
    / "src"
    / "envkernel_openapi"
    / "corpus"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("-G", type=int, default=4)
    ap.add_argument(
        "--all-envs",
        action="store_true",
        help="the whole 7-domain corpus (default: shop, travel, bank)",
    )
    ap.add_argument("--out", default="", help="keep the runs here (default: a temporary folder)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-learner-"))
    exe = Path(sys.executable).with_name("envkernel")
    sources = (
        []
        if args.all_envs
        else [
            a
            for n in ("shop.yaml", "travel.json", "bank.json")
            for a in ("--source", f"openapi:{CORPUS / n}")
        ]
    )
    t0 = time.perf_counter()
    procs = {
        seed: subprocess.Popen(
            [
                str(exe),
                "run",
                "--plugins",
                "+reinforce",
                "--policy",
                "reinforce",
                "--iterations",
                str(args.iterations),
                "-G",
                str(args.G),
                "--seed",
                str(seed),
                *sources,
                "--no-progress",
                "--out",
                str(out),
                "--run-id",
                f"learner-{seed}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in seeds
    }
    for seed, p in procs.items():
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"seed {seed} failed (exit {p.returncode}):\n{err[-3000:]}")
    seconds = time.perf_counter() - t0
    runs = [out / f"learner-{seed}" for seed in seeds]
    summaries = [json.loads((d / "summary.json").read_text()) for d in runs]

    def mean_over_seeds(key: str) -> list[float | None]:
        curve = []
        for k in range(args.iterations):
            vals = [
                s["iterations"][k][key] for s in summaries if s["iterations"][k][key] is not None
            ]
            curve.append(round(sum(vals) / len(vals), 4) if vals else None)
        return curve

    train, held = mean_over_seeds("mean_reward_train"), mean_over_seeds("mean_reward_heldout")
    print(
        f"{len(seeds)} seeds x {args.iterations} iterations, G={args.G}, "
        f"{summaries[0]['tasks']} tasks (seed {seeds[0]}), {seconds:.1f} s"
    )
    print("iteration  train   held-out")
    for k in range(args.iterations):
        print(
            f"{k:>9}  {train[k]:.3f}  {held[k]:.3f}"
            if train[k] is not None and held[k] is not None
            else f"{k:>9}  {train[k]}  {held[k]}"
        )
    result = compare(runs)
    print(
        f"held-out gain over the random policy: {result['mean_gain']:+.3f} ± "
        f"{result['se']:.3f} (SE, {result['tasks']} task-seeds), z = {result['z']}"
    )
    for d in runs:
        print(f"plot: {d / 'reward_curve.png'}")
    rollouts = sum(s["rollouts"] + s["gate_rollouts"] for s in summaries)
    print(
        json.dumps(
            {
                "seeds": seeds,
                "iterations": args.iterations,
                "G": args.G,
                "reward_curve": train,
                "reward_curve_heldout": held,
                "heldout_gain": result["mean_gain"],
                "heldout_gain_se": result["se"],
                "z": result["z"],
                "random_heldout": [r["random"] for r in result["runs"]],
                "trained_heldout": [r["trained"] for r in result["runs"]],
                "seconds": round(seconds, 1),
                "rollouts_per_s": round(rollouts / seconds, 1),
                "png": [str(d / "reward_curve.png") for d in runs],
            }
        )
    )


if __name__ == "__main__":
    main()
