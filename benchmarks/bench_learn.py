"""Does a real model learn from envkernel's tasks? Base vs trained SmolLM2-135M-Instruct on the same
held-out tasks, with a control. Prints figures; the last line is JSON. Not part of the test command.

    nice -n 10 python benchmarks/bench_learn.py [--tasks 12] [--train-examples 16] [--epochs 1]
    python benchmarks/bench_learn.py --device cuda --scale large      # on a GPU machine

Steps (the trainers venv, ``.venv-trainers``, runs the torch parts; see docs/training.md):

1. data: ``envkernel run --source sample`` with the ``reference`` policy: tasks with a train and a
   held-out split (held-out tasks have chain signatures never trained on), and ``sft.jsonl``;
2. train (``envkernel_trl.learn.Learner``, LoRA on the GGUF base): SFT on the train split's
   rollouts that scored 1. **Control**, same budget: the same conversations with each task's
   assistant turns swapped for another task's (the reward's link to the task shuffled), so a gain
   that is only format learning shows up in the control too;
3. eval: ``envkernel eval --tasks RUN --split heldout --policy openai`` against
   ``python -m envkernel_trl.server`` serving the base, then each adapter, same seed.

Figures per model (95 % bootstrap CIs over rollouts): mean reward, pass@1, tool-call validity
(calls that ran without error / calls attempted, including the malformed ones), format-error rate
(format errors per model turn), turns per rollout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
TRAINERS = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers")) / "bin/python"
SCALES = {
    "cpu": {"tasks": 12, "train_examples": 16, "max_tokens": 160, "max_turns": 4},
    "large": {"tasks": 60, "train_examples": 400, "max_tokens": 512, "max_turns": 8},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _envkernel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENVKERNEL, "--json-logs", *args], capture_output=True, text=True, env=env, check=False
    )


def make_data(out: Path, tasks: int, seed: int) -> Path:
    """A reference run on the sample shop: its folder."""
    proc = _envkernel(
        "run", "--out", str(out), "--run-id", "data", "--seed", str(seed), "--no-progress",
        "--source", "sample", "--set", f"chains.tasks_per_env={tasks}",
    )  # fmt: skip
    run = out / "data"
    if not (run / "sft.jsonl").exists():
        raise SystemExit(
            f"the data run made no sft.jsonl (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return run


def sft_rows(run: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``limit`` train-split rows of ``sft.jsonl`` (reward 1), in a seeded order."""
    rows = [json.loads(x) for x in (run / "sft.jsonl").read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r.get("metadata", {}).get("split") == "train"]
    random.Random(seed).shuffle(rows)
    return rows[:limit]


def shuffled(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The control: each conversation's prompt (system, user) with another task's later turns."""
    tails = [r["messages"][2:] for r in rows]
    order = list(range(len(rows)))
    rng = random.Random(seed)
    while len(rows) > 1 and any(i == j for i, j in enumerate(order)):
        rng.shuffle(order)
    return [
        {**r, "messages": r["messages"][:2] + tails[j]} for r, j in zip(rows, order, strict=True)
    ]


def train(rows_file: Path, adapter: Path, args: argparse.Namespace) -> dict[str, Any]:
    """SFT in the trainers venv (this file's ``--train-worker`` mode); its metrics."""
    proc = subprocess.run(
        [str(TRAINERS), __file__, "--train-worker", str(rows_file), str(adapter),
         "--device", args.device, "--epochs", str(args.epochs), "--lr", str(args.lr),
         "--lora-rank", str(args.lora_rank), "--max-length", str(args.max_length)],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False,
    )  # fmt: skip
    if proc.returncode:
        raise SystemExit(f"training failed: {proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def train_worker(argv: list[str]) -> None:
    """In the trainers venv: SFT the rows of a JSON-lines file, save the adapter, print metrics."""
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("adapter")
    for name, kind in (("device", str), ("epochs", int), ("lr", float), ("lora_rank", int)):
        ap.add_argument(f"--{name.replace('_', '-')}", type=kind)
    ap.add_argument("--max-length", type=int)
    a = ap.parse_args(argv)
    from envkernel_trl.learn import Learner

    rows = [json.loads(x) for x in Path(a.rows).read_text().splitlines() if x.strip()]
    t0 = time.perf_counter()
    learner = Learner("smollm2", device=a.device, lora_rank=a.lora_rank, learning_rate=a.lr,
                      batch_size=4, max_length=a.max_length)  # fmt: skip
    loaded = time.perf_counter() - t0
    examples = [(r["messages"], _tool_objects(r["tools"]), 1.0) for r in rows]
    metrics = learner.step(examples, seed=0, epochs=a.epochs)
    learner.save(a.adapter)
    metrics.update(load_s=round(loaded, 1), train_s=round(time.perf_counter() - t0 - loaded, 1))
    print(json.dumps(metrics))


def _tool_objects(tools: Any) -> list[dict[str, Any]]:
    tools = json.loads(tools) if isinstance(tools, str) else tools
    for t in tools:
        if isinstance(t["function"].get("parameters"), str):
            t["function"]["parameters"] = json.loads(t["function"]["parameters"])
    return list(tools)


def _wait(url: str, proc: subprocess.Popen[str], timeout: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"the model server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the model server did not answer within {timeout:g} s")


def evaluate(
    run: Path, out: Path, name: str, adapter: Path | None, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """``envkernel eval`` of the held-out split against the server (base, or base + adapter);
    the rollouts' figures per rollout."""
    port = _free_port()
    cmd = [str(TRAINERS), "-m", "envkernel_trl.server", "--model", "smollm2", "--name", "base",
           "--device", args.device, "--port", str(port)]  # fmt: skip
    if adapter is not None:
        cmd += ["--adapter", f"{name}={adapter}"]
    log = open(out / f"server-{name}.log", "w")
    server = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait(base_url, server, 1800)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
        env.update(OPENAI_BASE_URL=base_url, OPENAI_MODEL=name if adapter else "base",
                   OPENAI_API_KEY="local")  # fmt: skip
        proc = _envkernel(
            "eval", "--tasks", str(run), "--split", "heldout", "--policy", "openai",
            "--plugins", "+openai", "--seed", str(args.seed), "--out", str(out), "--run-id",
            f"eval-{name}", "--no-progress", "--timeout", str(args.timeout),
            "--set", f"openai.max_turns={args.max_turns}",
            "--set", f"openai.max_tokens={args.max_tokens}",
            "--set", "openai.temperature=0", "--set", "openai.concurrency=1",
            "--set", "openai.request_timeout=600", "--set", "openai.rollout_timeout=3000",
            env=env,
        )  # fmt: skip
    finally:
        os.killpg(server.pid, 15)
        server.wait(60)
    return rollout_figures(out / f"eval-{name}", proc)


def rollout_figures(folder: Path, proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """Per rollout: score, passed, turns, format errors, calls ok, calls attempted."""
    path = folder / "rollouts.jsonl"
    if not path.exists():
        raise SystemExit(f"no rollouts in {folder} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        t = row["trajectory"]
        turns = sum(1 for m in t["messages"] if m.get("role") == "assistant")
        ok = sum(1 for c in t["calls"] if (c.get("result") or {}).get("ok"))
        score = float(row["reward"]["score"])
        out.append({"score": score, "passed": score >= 1.0, "turns": turns,
                    "format_errors": t["format_errors"], "calls_ok": ok,
                    "attempted": len(t["calls"]) + t["format_errors"]})  # fmt: skip
    return out


def _ci(values: list[float], seed: int, n: int = 2000) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(n))
    return statistics.fmean(values), means[int(0.025 * n)], means[int(0.975 * n) - 1]


def summary(rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """The figures of one model, each as [mean, ci low, ci high]."""
    turns = sum(r["turns"] for r in rows)
    attempted = sum(r["attempted"] for r in rows)
    return {
        "rollouts": len(rows),
        "mean_reward": _ci([r["score"] for r in rows], seed),
        "pass_at_1": _ci([float(r["passed"]) for r in rows], seed),
        "tool_call_validity": sum(r["calls_ok"] for r in rows) / attempted if attempted else None,
        "format_error_rate": sum(r["format_errors"] for r in rows) / turns if turns else None,
        "format_errors_per_rollout": _ci([float(r["format_errors"]) for r in rows], seed),
        "turns": _ci([float(r["turns"]) for r in rows], seed),
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; its figures."""
    for key, value in SCALES[args.scale].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    out = Path(args.out or f"/tmp/envk-learn-{int(time.time())}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run = make_data(out, args.tasks, args.seed)
    rows = sft_rows(run, args.train_examples, args.seed)
    heldout = sum(1 for x in (run / "tasks.jsonl").read_text().splitlines() if '"heldout"' in x)
    print(f"data: {len(rows)} train SFT rows, {heldout} held-out tasks ({run})", flush=True)
    result: dict[str, Any] = {"scale": args.scale, "device": args.device, "train_rows": len(rows)}
    for name, data in (("trained", rows), ("control", shuffled(rows, args.seed))):
        f = out / f"{name}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in data))
        result[f"{name}_training"] = train(f, out / f"adapter-{name}", args)
        print(f"{name}: {result[f'{name}_training']}", flush=True)
    for name in ("base", "trained", "control"):
        adapter = None if name == "base" else out / f"adapter-{name}"
        result[name] = summary(evaluate(run, out, name, adapter, args), args.seed)
        print(f"{name}: {json.dumps(result[name])}", flush=True)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["out"] = str(out)
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--train-worker"]:
        train_worker(sys.argv[2:])
        sys.exit(0)
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", choices=sorted(SCALES), default="cpu")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tasks", type=int, help="chains.tasks_per_env of the data run")
    ap.add_argument("--train-examples", type=int, help="SFT rows to train on")
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--max-turns", type=int)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--lora-rank", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=5400)
    ap.add_argument("--out", default="")
    print(json.dumps(main(ap.parse_args())))
