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
import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
TRAINERS = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers")) / "bin/python"
SCALES = {
    "cpu": {"envs": 0, "train_examples": 40, "max_tokens": 128, "max_turns": 4, "env_tasks": 10},
    "large": {"envs": 0, "train_examples": 400, "max_tokens": 512, "max_turns": 8, "env_tasks": 0},
}
"""Per scale: the data run's ``--envs`` (0: the corpus's default), SFT rows, the policy's
max_tokens and max_turns, held-out-environment tasks evaluated (0: all)."""
SINGLE = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
"""Training and serving run side by side, one torch thread each (this machine has 2 cores)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _envkernel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENVKERNEL, "--json-logs", *args], capture_output=True, text=True, env=env, check=False
    )


def make_data(out: Path, seed: int, envs: int) -> Path:
    """A reference run on the shipped corpus (seven environments): its folder."""
    extra = ["--envs", str(envs)] if envs else []
    proc = _envkernel(
        "run", "--out", str(out), "--run-id", "data", "--seed", str(seed), "--no-progress", *extra
    )
    run = out / "data"
    if not (run / "sft.jsonl").exists():
        raise SystemExit(
            f"the data run made no sft.jsonl (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return run


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def sft_rows(run: Path, holdout_env: str, seed: int) -> list[dict[str, Any]]:
    """The train split's rows of ``sft.jsonl`` (reward 1) outside the held-out environment, in a
    seeded order."""
    rows = [
        r
        for r in _jsonl(run / "sft.jsonl")
        if r.get("metadata", {}).get("split") == "train"
        and r.get("metadata", {}).get("env_id") != holdout_env
    ]
    random.Random(seed).shuffle(rows)
    return rows


def eval_set(
    run: Path, out: Path, holdout_env: str, env_tasks: int, seed: int, limit: int = 0
) -> Path:
    """A task folder for ``envkernel eval --split all``: the held-out split of the trained
    environments, and up to ``env_tasks`` tasks (any split) of the held-out environment
    (``limit``: at most ``limit // 2`` of each, in a seeded order)."""
    tasks = _jsonl(run / "tasks.jsonl")
    split = [t for t in tasks if t["split"] == "heldout" and t["env_id"] != holdout_env]
    unseen = [t for t in tasks if t["env_id"] == holdout_env]
    random.Random(seed).shuffle(unseen)
    unseen = unseen[:env_tasks] if env_tasks else unseen
    if limit:
        random.Random(seed).shuffle(split)
        split, unseen = split[: limit // 2], unseen[: limit // 2]
    # interleaved, so that a run stopped early (see --summarize) has some of each kind
    both = [t for pair in itertools.zip_longest(split, unseen) for t in pair if t is not None]
    folder = out / "evalset"
    folder.mkdir(exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in both))
    if not (folder / "envs").exists():
        (folder / "envs").symlink_to(run / "envs")
    return folder


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


def train(
    rows_file: Path, adapter: Path, args: argparse.Namespace, shuffle_seed: int = -1
) -> dict[str, Any]:
    """SFT in the trainers venv (this file's ``--train-worker`` mode, in its own session so that
    it runs beside the evaluations) on the first ``--train-examples`` rows of the file that fit
    ``--max-length`` (``--order``); ``shuffle_seed >= 0``: the control, those rows shuffled
    (:func:`shuffled`). Its metrics (``kept``: the rows it trained on)."""
    proc = subprocess.Popen(
        [str(TRAINERS), __file__, "--train-worker", str(rows_file), str(adapter),
         "--device", args.device, "--epochs", str(args.epochs), "--lr", str(args.lr),
         "--lora-rank", str(args.lora_rank), "--max-length", str(args.max_length),
         "--batch-size", str(args.batch_size), "--limit", str(args.train_examples),
         "--order", args.order, "--shuffle-seed", str(shuffle_seed)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, **SINGLE},
    )  # fmt: skip
    stdout, stderr = proc.communicate()
    (adapter.parent / f"{adapter.name}.log").write_text(stderr)
    if proc.returncode:
        raise SystemExit(f"training failed: {stderr[-3000:]}")
    return dict(json.loads(stdout.strip().splitlines()[-1]))


def train_worker(argv: list[str]) -> None:
    """In the trainers venv: SFT the first ``--limit`` rows of a JSON-lines file that fit
    ``--max-length`` (they are written to ``<adapter>.rows.jsonl``), save the adapter, print
    metrics."""
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("adapter")
    for name, kind in (("device", str), ("epochs", int), ("lr", float), ("lora_rank", int)):
        ap.add_argument(f"--{name.replace('_', '-')}", type=kind)
    for name in ("--max-length", "--batch-size", "--limit", "--shuffle-seed"):
        ap.add_argument(name, type=int)
    ap.add_argument("--order", choices=("seeded", "shortest"))
    a = ap.parse_args(argv)
    from envkernel_trl import chat
    from envkernel_trl.learn import Learner

    t0 = time.perf_counter()
    learner = Learner("smollm2", device=a.device, lora_rank=a.lora_rank, learning_rate=a.lr,
                      batch_size=a.batch_size, max_length=a.max_length)  # fmt: skip
    loaded = time.perf_counter() - t0
    sized = []
    for r in _jsonl(Path(a.rows)):
        enc = chat.encode(learner.tokenizer, r["messages"], _tool_objects(r["tools"]))
        if enc is not None and len(enc[0]) <= a.max_length:
            sized.append((len(enc[0]), r))
    if a.order == "shortest":
        sized.sort(key=lambda x: x[0])
    kept = [r for _, r in sized[: a.limit]]
    lengths = [n for n, _ in sized[: a.limit]]
    if a.shuffle_seed >= 0:
        kept = shuffled(kept, a.shuffle_seed)
    Path(f"{a.adapter}.rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    examples = [(r["messages"], _tool_objects(r["tools"]), 1.0) for r in kept]
    t1 = time.perf_counter()
    metrics = learner.step(examples, seed=0, epochs=a.epochs)
    learner.save(a.adapter)
    train_s = time.perf_counter() - t1
    metrics.update(kept=len(kept), load_s=round(loaded, 1), train_s=round(train_s, 1),
                   s_per_1k_tokens=round(1000 * train_s / max(1.0, metrics["tokens"]), 2),
                   median_tokens=sorted(lengths)[len(lengths) // 2] if lengths else 0)  # fmt: skip
    print(json.dumps(metrics))


def heldout_conversations(run: Path, tasks: Path) -> list[dict[str, Any]]:
    """The data run's reference conversations (reward 1) of the eval set's tasks, each with its
    environment's tools (from ``sft.jsonl``): what a model that learned the tasks writes."""
    want = {t["id"]: t["env_id"] for t in _jsonl(tasks / "tasks.jsonl")}
    tools = {r["metadata"]["env_id"]: r["tools"] for r in _jsonl(run / "sft.jsonl")}
    return [
        {"task_id": r["task_id"], "env_id": r["env_id"], "messages": r["trajectory"]["messages"],
         "tools": tools[r["env_id"]]}
        for r in _jsonl(run / "rollouts.jsonl")
        if r["task_id"] in want and r["env_id"] in tools and r["reward"]["score"] >= 1.0
    ]  # fmt: skip


def nll_worker(argv: list[str]) -> None:
    """In the trainers venv: the mean negative log-likelihood per written token of each
    conversation of a JSON-lines file under the base (``-``) or base + an adapter; prints one
    JSON list (task, env, nll, tokens)."""
    import torch
    from peft import PeftModel

    from envkernel_trl import chat
    from envkernel_trl.learn import load_base

    rows_file, adapter = argv[0], argv[1]
    tok, lm = load_base("smollm2", "", "cpu")
    model = lm if adapter == "-" else PeftModel.from_pretrained(lm, adapter)
    model.eval()
    out = []
    for r in _jsonl(Path(rows_file)):
        enc = chat.encode(tok, r["messages"], _tool_objects(r["tools"]))
        if enc is None:
            continue
        ids, mask = enc
        x = torch.tensor([ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=x).logits[0, :-1].float(), -1)
        got = logp.gather(1, x[0, 1:, None])[:, 0]
        wrote = torch.tensor(mask[1:], dtype=torch.float32)
        nll = float(-(got * wrote).sum() / wrote.sum())
        out.append({"task_id": r["task_id"], "env_id": r["env_id"], "nll": nll,
                    "tokens": int(wrote.sum())})  # fmt: skip
    print(json.dumps(out))


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
    """``envkernel eval`` of the eval set's tasks against the server (base, or base + adapter);
    the rollouts' figures per rollout, with the wall time in ``out/eval-<name>.seconds``."""
    t0 = time.perf_counter()
    port = _free_port()
    cmd = [str(TRAINERS), "-m", "envkernel_trl.server", "--model", "smollm2", "--name", "base",
           "--device", args.device, "--port", str(port)]  # fmt: skip
    if adapter is not None:
        cmd += ["--adapter", f"{name}={adapter}"]
    log = open(out / f"server-{name}.log", "w")
    server = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, **SINGLE},
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait(base_url, server, 1800)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
        env.update(OPENAI_BASE_URL=base_url, OPENAI_MODEL=name if adapter else "base",
                   OPENAI_API_KEY="local")  # fmt: skip
        proc = _envkernel(
            "eval", "--tasks", str(run), "--split", "all", "--policy", "openai",
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
    (out / f"eval-{name}.seconds").write_text(f"{time.perf_counter() - t0:.1f}")
    return rollout_figures(out / f"eval-{name}", proc)


def rollout_figures(
    folder: Path, proc: subprocess.CompletedProcess[str] | None
) -> list[dict[str, Any]]:
    """Per rollout: task, environment, score, passed, turns, format errors, calls ok, calls
    attempted."""
    path = folder / "rollouts.jsonl"
    if not path.exists():
        why = f" (exit {proc.returncode}): {proc.stderr[-2000:]}" if proc else ""
        raise SystemExit(f"no rollouts in {folder}{why}")
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        t = row["trajectory"]
        turns = sum(1 for m in t["messages"] if m.get("role") == "assistant")
        ok = sum(1 for c in t["calls"] if (c.get("result") or {}).get("ok"))
        score = float(row["reward"]["score"])
        out.append({"task_id": row["task_id"], "env_id": row["env_id"],
                    "score": score, "passed": score >= 1.0, "turns": turns,
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
        "called_a_tool": _ci([float(r["attempted"] > 0) for r in rows], seed),
        "calls_ok_per_rollout": _ci([float(r["calls_ok"]) for r in rows], seed),
    }


def _training(
    name: str, out: Path, args: argparse.Namespace, result: dict[str, Any], ready: threading.Event
) -> None:
    """One adapter's SFT (``control``: the rows shuffled); ``ready`` set when it is saved or
    failed (the figures then say so)."""
    try:
        seed = args.seed if name == "control" else -1
        result[f"{name}_training"] = train(out / "train-pool.jsonl", out / f"adapter-{name}",
                                           args, seed)  # fmt: skip
        print(f"{name}: {result[f'{name}_training']}", flush=True)
    except SystemExit as e:
        result[f"{name}_training_error"] = str(e)[-2000:]
        print(f"{name}: {e}", flush=True)
    finally:
        ready.set()


def by_env(rows: list[dict[str, Any]], holdout_env: str, seed: int) -> dict[str, Any]:
    """The figures on the held-out split (trained environments) and on the held-out one."""
    return {
        "heldout_split": summary([r for r in rows if r["env_id"] != holdout_env], seed),
        "heldout_env": summary([r for r in rows if r["env_id"] == holdout_env], seed),
    }


def _evaluation(
    name: str, tasks: Path, out: Path, args: argparse.Namespace, result: dict[str, Any],
    ready: threading.Event | None,
) -> None:  # fmt: skip
    """One model's evaluation, once its adapter is ready; its per-rollout rows in ``result``."""
    if ready is not None:
        ready.wait()
        if f"{name}_training" not in result:
            return
    adapter = None if name == "base" else out / f"adapter-{name}"
    try:
        result[f"{name}_rows"] = evaluate(tasks, out, name, adapter, args)
        result[f"{name}_eval_s"] = float((out / f"eval-{name}.seconds").read_text())
        print(f"{name}: evaluated, {len(result[f'{name}_rows'])} rollouts", flush=True)
    except SystemExit as e:
        result[f"{name}_eval_error"] = str(e)[-2000:]


def compare(result: dict[str, Any], holdout_env: str, seed: int) -> None:
    """Each model's figures (:func:`by_env`) on the tasks every evaluated model has a rollout of
    (the same tasks, the same seed for all)."""
    names = [n for n in ("base", "trained", "control") if f"{n}_rows" in result]
    common = set.intersection(*({r["task_id"] for r in result[f"{n}_rows"]} for n in names))
    result["common_tasks"] = len(common)
    for n in names:
        rows = [r for r in result[f"{n}_rows"] if r["task_id"] in common]
        result[n] = by_env(rows, holdout_env, seed)


def summarize(args: argparse.Namespace) -> dict[str, Any]:
    """The figures of the evaluations already in ``--out`` (and ``--base-rollouts``), finished
    or not, on the tasks they all have: for a run stopped early. ``eval-<name>-*`` folders are
    shards of the same model's evaluation (a task's first rollout counts)."""
    out = Path(args.out)
    result: dict[str, Any] = {"out": str(out), "partial": True}
    for name in ("base", "trained", "control"):
        if name == "base" and args.base_rollouts:
            folders = [Path(args.base_rollouts)]
        else:  # eval-<name>, and shards of the same tasks (eval-<name>-b, ...)
            folders = sorted(p for p in out.glob(f"eval-{name}*") if p.is_dir())
        rows: dict[str, dict[str, Any]] = {}
        for folder in folders:
            if (folder / "rollouts.jsonl").exists():
                for r in rollout_figures(folder, None):
                    rows.setdefault(r["task_id"], r)
        if rows:
            result[f"{name}_rows"] = list(rows.values())
    compare(result, args.holdout_env, args.seed)
    for n in ("base", "trained", "control"):
        result.pop(f"{n}_rows", None)
    return result


def main(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; its figures. The two trainings and the evaluations run side by side,
    each in its own session and on one torch thread: the base is evaluated while the real SFT and
    the control train, and each adapter as soon as it is saved."""
    for key, value in SCALES[args.scale].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    out = Path(args.out or f"/tmp/envk-learn-{int(time.time())}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run = Path(args.data) if args.data else make_data(out, args.seed, args.envs)
    rows = sft_rows(run, args.holdout_env, args.seed)
    (out / "train-pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = eval_set(run, out, args.holdout_env, args.env_tasks, args.seed, args.eval_limit)
    n_eval = len(_jsonl(tasks / "tasks.jsonl"))
    print(f"data: {len(rows)} train SFT rows outside {args.holdout_env}, {n_eval} eval tasks "
          f"({run})", flush=True)  # fmt: skip
    result: dict[str, Any] = {"scale": args.scale, "device": args.device,
                              "holdout_env": args.holdout_env, "pool_rows": len(rows),
                              "eval_tasks": n_eval, "args": vars(args)}  # fmt: skip
    ready = {"trained": threading.Event(), "control": threading.Event()}
    threads = [
        threading.Thread(target=_training, args=(n, out, args, result, ready[n])) for n in ready
    ]
    for name in ("base", "trained", "control"):
        if name == "base" and args.base_rollouts:
            continue
        threads.append(threading.Thread(
            target=_evaluation, args=(name, tasks, out, args, result, ready.get(name))
        ))  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if args.base_rollouts:  # read at the end: that evaluation may still be running when we start
        result["base_rows"] = rollout_figures(Path(args.base_rollouts), None)
    compare(result, args.holdout_env, args.seed)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["out"] = str(out)
    for n in ("base", "trained", "control"):
        result.pop(f"{n}_rows", None)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--train-worker"]:
        train_worker(sys.argv[2:])
        sys.exit(0)
    if sys.argv[1:2] == ["--nll-worker"]:
        nll_worker(sys.argv[2:])
        sys.exit(0)
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", choices=sorted(SCALES), default="cpu")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--envs", type=int, help="--envs of the data run (0: the corpus's default)")
    ap.add_argument("--train-examples", type=int, help="SFT rows to train on")
    ap.add_argument("--holdout-env", default="shop", help="the environment never trained on")
    ap.add_argument("--env-tasks", type=int, help="tasks of --holdout-env evaluated (0: all)")
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument(
        "--order",
        choices=("seeded", "shortest"),
        default="seeded",
        help="which rows that fit --max-length are trained on",
    )
    ap.add_argument("--eval-limit", type=int, default=0, help="eval tasks at most (0: all)")
    ap.add_argument("--data", default="", help="a data run folder to reuse")
    ap.add_argument(
        "--base-rollouts",
        default="",
        help="an earlier eval-base folder of the same eval set to reuse",
    )
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--max-turns", type=int)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--lora-rank", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=5400)
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--summarize",
        action="store_true",
        help="only the figures of the evaluations already in --out",
    )
    a = ap.parse_args()
    print(json.dumps(summarize(a) if a.summarize else main(a)))
