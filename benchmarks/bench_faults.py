"""Fault benchmark: run the same seed clean and under faults, and compare the outputs.

Each scenario runs ``envkernel run --nats-url`` against a nats-server this script owns (on a fixed
loopback port, its store in a temp folder), so the server can be killed and restarted under the run:

- ``clean``: nothing fails (the reference);
- ``worker_kill``: an ``envkernel worker`` serving the run's stages (``process`` included, so the
  run leases sandboxes that live in it) is killed with SIGKILL mid-run;
- ``server_restart``: the nats-server is killed with SIGKILL mid-run and started again on the same
  port and store after ``--down`` seconds;
- ``cluster_node_kill``: a 3-node nats-server cluster on loopback (stream, KV and object store
  replicated, ``ENVKERNEL_STREAM_REPLICAS=3``); the node the run connected to first is killed with
  SIGKILL mid-run and stays down;
- ``run_kill_resume``: ``envkernel run`` itself is killed with SIGKILL mid-run, then carried on with
  ``envkernel run --resume`` (the time is both together).

For each it prints the outputs lost and duplicated against the clean run (tasks, rollouts, SFT and
RL rows, by key), the exit code, and the wall time against the clean run; then one JSON line.
Target (issue 18): 0 lost, 0 duplicated, at most 3x the clean time plus 60 s.

    python benchmarks/bench_faults.py                      # the default corpus, -G 4
    python benchmarks/bench_faults.py --source sample --tasks-per-env 20 --scenarios worker_kill
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from envkernel_bus import EmbeddedServer, LocalCluster

ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
WORKER_PLUGINS = "process,baselines,traceoutcome,probe,chains,sample,openapi"


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keys(run_dir: Path) -> dict[str, Counter[str]]:
    """Each output file's line keys, counted (a count above 1 is a duplicate)."""

    def lines(name: str) -> list[dict[str, Any]]:
        p = run_dir / name
        return (
            [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []
        )

    out: dict[str, Counter[str]] = {
        "tasks": Counter(t["id"] for t in lines("tasks.jsonl")),
        "rollouts": Counter(
            f"{r['task_id']}/{r['iteration']}/{r['trajectory']['index']}"
            for r in lines("rollouts.jsonl")
        ),
        "sft": Counter(
            f"{m['task_id']}/{m['iteration']}/{m['index']}"
            for r in lines("sft.jsonl")
            for m in [r.get("metadata", {})]
        ),
        "rl": Counter(json.dumps(r, sort_keys=True) for r in lines("rl.jsonl")),
    }
    return out


def wait_lines(path: Path, proc: subprocess.Popen[bytes], n: int, timeout: float = 300) -> None:
    """Wait until ``path`` holds ``n`` lines (or the run ends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and len(path.read_bytes().splitlines()) >= n:
            return
        time.sleep(0.05)


def scenario(name: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Run one scenario; return its run folder, exit code and wall time."""
    port = free_port()
    store = tmp / name / "nats"
    env = {
        **os.environ,
        "ENVKERNEL_ACK_WAIT": str(args.ack_wait),
        "ENVKERNEL_BUS_LOST_SECONDS": "120",
    }
    server: Any
    if name == "cluster_node_kill":
        server = LocalCluster(tmp / name / "cluster")
        server.wait_ready()
        url = server.url
        env["ENVKERNEL_STREAM_REPLICAS"] = "3"
    else:
        server = EmbeddedServer(store, port=port)
        url = server.start()
    worker = None
    logs = tmp / name / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if name == "worker_kill":
        worker = subprocess.Popen(
            [ENVKERNEL, "--json-logs", "worker", "--plugins", WORKER_PLUGINS, "--nats-url", url],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(logs / "worker.log", "wb"),
        )
        time.sleep(3)
    out = tmp / name / "out"
    cmd = [
        ENVKERNEL,
        "--json-logs",
        "run",
        "--nats-url",
        url,
        "--out",
        str(out),
        "--run-id",
        name,
        "--no-progress",
        "--seed",
        str(args.seed),
        "-G",
        str(args.group),
        *(["--source", args.source] if args.source else []),
        *(["--set", f"chains.tasks_per_env={args.tasks_per_env}"] if args.tasks_per_env else []),
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(logs / "run.log", "wb")
    )
    try:
        if name != "clean":  # the fault goes in mid-run, never after the run ended
            wait_lines(out / name / "rollouts.jsonl", proc, args.after)
            if proc.poll() is not None:
                raise SystemExit(
                    f"{name}: the run ended (exit {proc.returncode}) before {args.after} "
                    "rollouts were written: the fault would come too late (lower --after, or "
                    "make the run bigger)"
                )
        if name == "worker_kill" and worker is not None:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        elif name == "cluster_node_kill":
            server.kill(0)
        elif name == "run_kill_resume":
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = subprocess.Popen(
                [
                    ENVKERNEL,
                    "--json-logs",
                    "run",
                    "--resume",
                    str(out / name),
                    "--nats-url",
                    url,
                    "--no-progress",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=open(logs / "resume.log", "wb"),
            )
        elif name == "server_restart":
            assert server._proc is not None
            server._proc.send_signal(signal.SIGKILL)
            server._proc.wait()
            time.sleep(args.down)
            server = EmbeddedServer(store, port=port)
            server.start()
        code = proc.wait(timeout=args.timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if worker is not None and worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
        server.stop()
    if code != 0:  # say why
        for f in sorted(logs.glob("*.log")):
            print(
                f"{name}: exit {code}; {f.name} ends with:",
                *f.read_text(errors="replace").splitlines()[-3:],
                sep="\n  ",
                file=sys.stderr,
            )
    return {"dir": out / name, "exit_code": code, "seconds": round(time.monotonic() - t0, 2)}


def main() -> None:
    """Run the scenarios and print the comparison."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--scenarios",
        default="worker_kill,server_restart,cluster_node_kill,run_kill_resume",
        help="comma-separated, run after the clean one",
    )
    ap.add_argument(
        "--source", default="", help="--source of the runs (default: the run's default corpus)"
    )
    ap.add_argument("--tasks-per-env", type=int, default=0)
    ap.add_argument("-G", "--group", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--after", type=int, default=40, help="rollouts written before the fault")
    ap.add_argument("--down", type=float, default=1.0, help="seconds the server stays down")
    ap.add_argument("--ack-wait", type=float, default=10.0)
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="envk-faults-") as t:
        tmp = Path(t)
        clean = scenario("clean", args, tmp)
        ref = keys(clean["dir"])
        print(
            f"clean: exit {clean['exit_code']}, {clean['seconds']} s, "
            + ", ".join(f"{k} {sum(v.values())}" for k, v in ref.items())
        )
        results: dict[str, Any] = {
            "clean": {
                "exit_code": clean["exit_code"],
                "seconds": clean["seconds"],
                **{k: sum(v.values()) for k, v in ref.items()},
            }
        }
        for name in [s for s in args.scenarios.split(",") if s]:
            got = scenario(name, args, tmp)
            k = keys(got["dir"])
            lost = {f: sum((ref[f] - Counter(set(k[f]))).values()) for f in ref}
            dup = {f: sum(n - 1 for n in k[f].values() if n > 1) for f in ref}
            summary = (
                json.loads((got["dir"] / "summary.json").read_text())
                if (got["dir"] / "summary.json").exists()
                else {}
            )
            agree = summary.get("tasks") == sum(k["tasks"].values()) and summary.get(
                "rollouts"
            ) == sum(k["rollouts"].values())
            ratio = round(got["seconds"] / clean["seconds"], 2) if clean["seconds"] else None
            within = got["seconds"] <= 3 * clean["seconds"] + 60
            results[name] = {
                "exit_code": got["exit_code"],
                "seconds": got["seconds"],
                "vs_clean": ratio,
                "within_target": within,
                "lost": lost,
                "duplicated": dup,
                "summary_agrees": agree,
            }
            print(
                f"{name}: exit {got['exit_code']}, {got['seconds']} s ({ratio}x clean; "
                f"target {'met' if within else 'MISSED'}), lost {lost}, duplicated {dup}, "
                f"summary agrees with files: {agree}"
            )
        print(json.dumps({"bench": "faults", **results}))


if __name__ == "__main__":
    main()
