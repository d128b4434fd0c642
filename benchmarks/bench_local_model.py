"""One real model, end to end: the ``openai`` policy rolled out with SmolLM2-135M-Instruct served by
llama-cpp-python's OpenAI-compatible server on this machine's CPU. Prints figures; the last line
is JSON. Not part of the test command (it needs the one-time build of scripts/setup-local-model.sh).

    python benchmarks/bench_local_model.py [--tasks 30] [--tool-choice required] [--max-turns 6]
    # any server:
    python benchmarks/bench_local_model.py --base-url http://127.0.0.1:8000/v1 --model NAME

Without ``--base-url`` it runs ``scripts/setup-local-model.sh --serve`` (build once, cached under
~/.cache/envkernel/llama; then serve on a free loopback port), waits for ``GET /v1/models``, runs

    envkernel run --source sample --plugins +openai --policy openai --set chains.tasks_per_env=N

with ``OPENAI_BASE_URL`` pointing at it, and stops the server. The gate's rollouts use the
``reference`` and do-nothing policies as usual; the training rollouts are the model's. From
``rollouts.jsonl``:

- ``mean_reward``: the reward model's mean score (traceoutcome);
- ``format_error_rate``: format errors (calls with bad JSON, unknown tools, bad arguments, calls
  written as text) per model turn;
- ``tool_call_rate``: share of model turns that made at least one tool call;
- ``rollouts_with_a_call``: share of rollouts that called any tool;
- ``turn_latency_ms_p50`` / ``_p90``: the policy's model call per turn;
- ``tool_choice_refused``: whether the server refused the configured ``tool_choice`` (llama.cpp
  answers ``"required"`` with HTTP 500; the policy then falls back to ``auto``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(base_url: str, proc: subprocess.Popen | None, timeout: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"the model server exited with code {proc.returncode}; see its log")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the model server did not answer {base_url}/models within {timeout:g} s")


def main(args: argparse.Namespace) -> dict:
    server = None
    log_path = Path(tempfile.gettempdir()) / "envkernel-local-model.log"
    base_url, model = args.base_url, args.model
    t0 = time.perf_counter()
    if not base_url:
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        log = open(log_path, "w")
        server = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "setup-local-model.sh"), "--serve"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ENVK_LLAMA_PORT": str(port)},
            start_new_session=True,
        )
    try:
        ready = _wait(base_url, server, args.start_timeout)
        print(
            f"model server ready at {base_url} after {ready:.1f} s (setup and load; log: "
            f"{log_path})"
        )
        out = Path(tempfile.mkdtemp(prefix="envk-local-"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
        env.update(OPENAI_BASE_URL=base_url, OPENAI_MODEL=model, OPENAI_API_KEY="local")
        cmd = [
            ENVKERNEL,
            "--json-logs",
            "run",
            "--out",
            str(out),
            "--run-id",
            "local",
            "--seed",
            str(args.seed),
            "--no-progress",
            "--source",
            "sample",
            "--plugins",
            "+openai",
            "--policy",
            "openai",
            "--timeout",
            str(args.timeout),
            "--set",
            f"chains.tasks_per_env={args.tasks}",
            "--set",
            f"openai.tool_choice={args.tool_choice}",
            "--set",
            f"openai.max_turns={args.max_turns}",
            "--set",
            f"openai.max_tokens={args.max_tokens}",
            "--set",
            "openai.temperature=0.2",
            "--set",
            "openai.concurrency=1",
            "--set",
            "openai.request_timeout=120",
        ]
        r0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - r0
        rows = (
            [
                json.loads(x)
                for x in (out / "local" / "rollouts.jsonl").read_text().splitlines()
                if x.strip()
            ]
            if (out / "local" / "rollouts.jsonl").exists()
            else []
        )
        if not rows:
            raise SystemExit(f"no rollouts (exit {proc.returncode}): {proc.stderr[-2000:]}")
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(30)
    turns = calls_turns = fmt = with_call = 0
    lat: list[float] = []
    terminations: dict[str, int] = {}
    for row in rows:
        t = row["trajectory"]
        assistant = [m for m in t["messages"] if m.get("role") == "assistant"]
        turns += len(assistant)
        calls_turns += sum(1 for m in assistant if m.get("tool_calls"))
        with_call += bool(t["calls"])
        fmt += t["format_errors"]
        lat += t["latencies"]
        terminations[t["termination"]] = terminations.get(t["termination"], 0) + 1
    refused = "the server refused tool_choice" in proc.stderr
    lat_ms = sorted(x * 1000 for x in lat)
    result = {
        "model": model,
        "base_url_local": server is not None,
        "rollouts": len(rows),
        "turns": turns,
        "mean_reward": round(statistics.mean(r["reward"]["score"] for r in rows), 4),
        "format_error_rate": round(fmt / max(1, turns), 4),
        "tool_call_rate": round(calls_turns / max(1, turns), 4),
        "rollouts_with_a_call": round(with_call / len(rows), 4),
        "turn_latency_ms_p50": round(statistics.median(lat_ms), 1) if lat_ms else None,
        "turn_latency_ms_p90": round(lat_ms[int(0.9 * (len(lat_ms) - 1))], 1) if lat_ms else None,
        "terminations": terminations,
        "tool_choice": args.tool_choice,
        "tool_choice_refused": refused,
        "run_exit_code": proc.returncode,
        "run_wall_s": round(wall, 1),
        "total_wall_s": round(time.perf_counter() - t0, 1),
    }
    print(
        f"{len(rows)} rollouts, {turns} model turns: mean reward {result['mean_reward']}, "
        f"format errors per turn {result['format_error_rate']}, tool-call rate "
        f"{result['tool_call_rate']} ({result['rollouts_with_a_call']:.0%} of rollouts "
        f"called a tool), latency per turn p50 {result['turn_latency_ms_p50']} ms, p90 "
        f"{result['turn_latency_ms_p90']} ms"
    )
    print(
        f"terminations {terminations}; tool_choice {args.tool_choice!r} refused by the "
        f"server: {refused}"
    )
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tasks",
        type=int,
        default=30,
        help="Tasks to sample (chains.tasks_per_env on the sample shop).",
    )
    ap.add_argument(
        "--tool-choice",
        default="required",
        help="The policy's tool_choice (required falls back to auto on llama.cpp).",
    )
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3000, help="The run's --timeout in seconds.")
    ap.add_argument(
        "--start-timeout",
        type=float,
        default=3600,
        help="Seconds to wait for the server (includes a first build).",
    )
    ap.add_argument(
        "--base-url", default="", help="Use this running server instead of starting SmolLM2."
    )
    ap.add_argument("--model", default="smollm2", help="Model name to send.")
    print(json.dumps(main(ap.parse_args())))
