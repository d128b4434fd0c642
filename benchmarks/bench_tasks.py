"""Task benchmark: 20,000 gated tasks from the shipped OpenAPI corpus, through the real path.

1. **run** — ``envkernel run`` as a subprocess over the 7-environment corpus with
   ``--set chains.tasks_per_env=N`` (N = target / 7, rounded up, plus ``--headroom``), until its
   ``tasks.jsonl`` holds ``--tasks`` gated tasks. Reported: the time until the target was reached
   (``tasks.jsonl`` is polled) and the whole run's wall time, tasks/s, the peak memory (the sum of
   RSS over the process tree, polled from /proc, and ``ru_maxrss`` of the children), the
   summary's tool coverage, chain-length histogram, unique chain shapes and rejections, and where
   the time went: when sampling ended (per environment, from ``envs/<id>/sampling.json``) versus
   when the gate had emitted every task.
2. **sampler alone** — the ``chains`` sampler (``--sampler``) over the same corpus, the way the
   kernel runs it (a sandbox runner served on an embedded NATS server, one sandbox per
   environment, environments in parallel), but no gate, rollouts or exporters: tasks/s of
   sampling + grounding, per environment and in total.

3. **quality** — read from the run's ``tasks.jsonl`` and ``summary.json`` (:func:`quality`): the
   share of requests that narrate two or more steps (a sequencing word: then, after that,
   finally, once that's done; target ≤ 10 %), the share with an aggregate, a superlative or a
   condition (how many, the highest, a total, over / under a number, ranked, on or after, which
   of them are in a status, or a change to every row a condition picks: ``cancel all my held
   bookings``, counted apart as ``multi_row_change_goals``;
   target ≥ 30 %), the share that opens with a stock greeting, echoes a schema field (``in
   minutes 45``, ``set to yes``) or creates a row and cancels or deletes it in one request, the
   read-only share, the distinct request shapes (quoted text, numbers and names masked), and the
   gate's mutant kill rate per kind and per environment (``summary.json``'s ``mutants``) with the
   share of proposed tasks that killed every applicable mutant, the share of tasks that change a
   row and change it back (``freeze`` then ``unfreeze``), and the share with planted distractor
   rows. ``--quality DIR`` reports it for an existing run folder.
4. **planting cost** (``--planting-cost ROUNDS``) — the sampler alone without distractor planting
   (``distractor_share=0``) and with it (the default), alternating, ROUNDS times each: tasks/s of
   each and their ratio.

    python benchmarks/bench_tasks.py [--tasks 20000] [--skip-run] [--skip-sampler] \
        [--sampler walk] [--no-users] [--run-workers N] [--quality DIR] [--planting-cost 2]

The run selects ``+users`` (the simulated user), so tasks may hold a condition back and the
reference's gate rollouts talk; ``held_back_for_the_user`` is their share.

Prints figures; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ENVKERNEL = Path(sys.executable).with_name("envkernel")
N_ENVS = 7


# -- 1. the whole pipeline ----------------------------------------------------------------------


def request_kinds(per_env: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The sampled tasks' request kinds (``create``, ``update``, ``count``...: each task's category)
    over every environment, as shares, with the largest share overall and per environment (target:
    none above 0.3)."""
    total: Counter[str] = Counter()
    top_env: dict[str, float] = {}
    for env_id, st in per_env.items():
        req = st.get("requests") or {}
        n = sum(req.values())
        total.update(req)
        if n:
            top_env[env_id] = round(max(req.values()) / n, 3)
    n = sum(total.values())
    shares = {k: round(v / n, 3) for k, v in total.most_common()} if n else {}
    return {
        "shares": shares,
        "largest": max(shares.values(), default=None),
        "largest_per_env": top_env,
    }


def _tree_rss_kb(root: int) -> int:
    """Sum of VmRSS over ``root`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss[int(d)] = int(line.split()[1])
                        break
            children.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` itself (from /proc; 0 once it is
    gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return 0


def _start_workers(
    n: int,
    plugins: list[str],
    registry: Path,
    env: dict[str, str],
    root: Path,
    proc: subprocess.Popen[bytes],
) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` ``envkernel worker`` processes on the run's embedded server (its URL from the
    run's announcement in a registry of the benchmark's own), serving the run's plugins beside the
    run's own process."""
    deadline = time.monotonic() + 60
    while not registry.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            return []
        time.sleep(0.2)
    url = json.loads(registry.read_text())["url"]
    return [
        subprocess.Popen(
            [
                str(ENVKERNEL),
                "worker",
                "--plugins",
                plugins[1] if plugins else "",
                "--nats-url",
                url,
            ],
            stdout=open(root / f"worker-{i}.log", "wb"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        for i in range(n)
    ]


def _worker_children(pid: int) -> list[int]:
    """The ``envkernel worker`` processes the run started itself (``envkernel run --workers``)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != pid:
                    continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if b"\0worker\0" in f.read():
                    out.append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    return out


def run_pipeline(
    target: int,
    headroom: float,
    sampler: str,
    timeout: float,
    keep: bool,
    users: bool = True,
    workers: int = 0,
    run_workers: int = 0,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    per_env = math.ceil(target / N_ENVS * (1 + headroom))
    root = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    # +users: the simulated user reveals what a task holds back, so the gate's reference rollouts
    # hold conversations
    plugins = [
        "--plugins",
        ",".join(
            (["+users"] if users else [])
            + ([] if sampler == "chains" else [f"+{sampler}", "-chains"])
        ),
    ]
    plugins = plugins if plugins[1] else []
    cmd = [
        str(ENVKERNEL),
        "run",
        "--out",
        str(root),
        "--run-id",
        "bench",
        "--no-progress",
        "--source",
        "openapi",
        *plugins,
        "--set",
        f"{sampler}.tasks_per_env={per_env}",
        "--timeout",
        str(timeout),
        *(["--workers", str(run_workers)] if run_workers else []),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENVKERNEL_", "OPENAI_"))} | (
        extra_env or {}
    )
    env["XDG_RUNTIME_DIR"] = str(
        root / "xdg"
    )  # the run announces its server here (its own, not another benchmark's "bench")
    folder = root / "bench"
    tasks_file = folder / "tasks.jsonl"
    print(f"run: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = open(root / "run.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    pool = (
        _start_workers(
            workers, plugins, root / "xdg" / "envkernel" / "servers" / "bench.json", env, root, proc
        )
        if workers
        else []
    )
    worker_cpu = [0.0] * len(pool)
    peak_tree_kb = 0
    reached: float | None = None
    last_print = 0.0
    series: list[tuple[float, int]] = []
    cpu_s = 0.0  # the run process's own CPU (utime + stime), the last poll before it exited
    own_workers: dict[int, float] = {}  # pid -> CPU of the workers the run started (--run-workers)
    while proc.poll() is None:
        time.sleep(0.5)
        peak_tree_kb = max(
            peak_tree_kb, _tree_rss_kb(proc.pid) + sum(_tree_rss_kb(w.pid) for w in pool)
        )
        cpu_s = max(cpu_s, _cpu_seconds(proc.pid))
        worker_cpu = [max(c, _cpu_seconds(w.pid)) for c, w in zip(worker_cpu, pool, strict=True)]
        if run_workers:
            for w in set(own_workers) | set(_worker_children(proc.pid)):
                own_workers[w] = max(own_workers.get(w, 0.0), _cpu_seconds(w))
        n = _lines(tasks_file) if reached is None else target
        now = time.perf_counter() - t0
        if not series or now - series[-1][0] >= 5:
            series.append((round(now, 1), n))
        if reached is None and n >= target:
            reached = now
        if now - last_print >= 30:
            last_print = now
            print(
                f"  {now:6.0f} s  {n} tasks gated  tree RSS {peak_tree_kb // 1024} MB (peak)",
                flush=True,
            )
    wall = time.perf_counter() - t0
    log.close()
    for w in pool:  # a worker serves every run on its server until stopped
        w.terminate()
    for w in pool:
        try:
            w.wait(30)
        except subprocess.TimeoutExpired:
            w.kill()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_maxrss_kb = ru1.ru_maxrss
    # every process of the run (itself, nats-server, the executors, the workers), once each was
    # waited for
    all_cpu_s = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    summary = (
        json.loads((folder / "summary.json").read_text())
        if (folder / "summary.json").exists()
        else {}
    )
    n_tasks = _lines(tasks_file)
    sampling: dict[str, Any] = {}
    for p in sorted((folder / "envs").glob("*/sampling.json")):
        st = json.loads(p.read_text()).get(sampler, {})
        sampling[p.parent.name] = {
            k: st.get(k)
            for k in (
                "tasks",
                "attempts",
                "seconds",
                "tasks_per_s",
                "tool_coverage",
                "phrasings",
                "requests",
            )
        }
    sampling_end = max((v["seconds"] or 0.0) for v in sampling.values()) if sampling else None
    out = {
        "cmd": " ".join(cmd[1:]),
        "exit_code": proc.returncode,
        "tasks_per_env": per_env,
        "tasks": n_tasks,
        "target": target,
        "seconds_to_target": round(reached, 2) if reached is not None else None,
        "wall_seconds": round(wall, 2),
        "tasks_per_s": round(n_tasks / wall, 2) if wall else None,
        "tasks_per_s_to_target": round(target / reached, 2) if reached else None,
        "peak_tree_rss_mb": round(peak_tree_kb / 1024, 1),
        "run_process_cpu_seconds": round(cpu_s, 2),
        "run_process_cpu_ms_per_task": round(cpu_s * 1000 / n_tasks, 2) if n_tasks else None,
        "all_processes_cpu_seconds": round(all_cpu_s, 2),
        "all_processes_cpu_ms_per_task": round(all_cpu_s * 1000 / n_tasks, 2) if n_tasks else None,
        "workers": workers,
        "worker_cpu_seconds": [round(c, 2) for c in worker_cpu],
        "run_workers": run_workers,
        "run_workers_cpu_seconds": [round(c, 2) for c in own_workers.values()],
        "children_maxrss_mb": round(children_maxrss_kb / 1024, 1),
        "tasks_proposed": summary.get("tasks_proposed"),
        "tasks_rejected": summary.get("tasks_rejected"),
        "rejected": summary.get("rejected"),
        "tool_coverage": summary.get("tool_coverage"),
        "chain_lengths": summary.get("chain_lengths"),
        "unique_chain_shapes": summary.get("unique_chain_shapes"),
        "failures": summary.get("failures"),
        "request_kinds": request_kinds(sampling),
        "sampling_seconds_longest_env": round(sampling_end, 2) if sampling_end else None,
        "sampling": sampling,
        "folder": str(folder) if keep else None,
    }
    out["gated_series"] = series
    if sampling_end:
        # the sampler's clock starts when its env.verified arrives, a few seconds into the run
        out["after_sampling_seconds"] = round(wall - sampling_end, 2)
        start = next((t for t, n in series if n > 0), 0.0)
        at_end = [n for t, n in series if t <= sampling_end + start] or [0]
        done_t = reached or wall
        if done_t > sampling_end + start:
            # the kernel alone (gate, rollouts, recording) once every sampler has finished
            out["gated_when_sampling_ended"] = at_end[-1]
            out["kernel_only_tasks_per_s"] = round(
                (min(n_tasks, target) - at_end[-1]) / (done_t - sampling_end - start), 2
            )
    if tasks_file.exists():
        out["quality"] = quality(folder)
    if not keep:
        subprocess.run(["rm", "-rf", str(root)], check=False)
    return out


# -- 3. the quality of the tasks ------------------------------------------------------------------

NARRATES = re.compile(
    r"\b(then|after that|and finally|finally|once that's done|afterwards)\b", re.I
)
AGGREGATE = re.compile(
    r"\b(how many|count|average|difference|differ|how far "
    r"apart|highest|lowest|largest|smallest|most|least|fewest|cheapest|latest|earliest|total|add "
    r"up|all together|over|above|more than|fewer than|under|below|less than|rank|on or "
    r"after|on or before|at least|at most|which of|which ones)\b",
    re.I,
)
GREETING = re.compile(r"^(hi|hello|hey there|hi there|good morning)[!.,]", re.I)
ECHO = re.compile(r"\b(in (minutes|bytes|seconds) \d|set to (yes|no))\b", re.I)
MAKES = (
    "create",
    "add",
    "open",
    "book",
    "register",
    "post",
    "new",
    "set_up",
    "upload",
    "send",
    "invite",
    "share",
)
UNDOES = ("cancel", "delete", "remove", "archive", "revoke", "close")


def _multi_row(t: dict[str, Any]) -> bool:
    """A change to every row a condition picks (``cancel all my held bookings``): the last tool
    called on two or more rows."""
    calls = t["calls"]
    return (
        t["outcome"]["mutates"]
        and len(calls) >= 3
        and calls[-1]["name"] == calls[-2]["name"]
        and re.search(r"\b(all|every|some of)\b", t["request"]) is not None
    )


def _shape(request: str) -> str:
    t = re.sub(r'"[^"]*"', "Q", request)
    t = re.sub(r"\S+@\S+", "E", t)
    t = re.sub(r"\d[\d:.\-TZ+]*", "#", t)
    return re.sub(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b", "N", t)


def _change_then_inverse(calls: list[dict[str, Any]]) -> bool:
    """``freeze_account`` then ``unfreeze_account`` (or the other way round) with the same
    arguments."""
    seen: list[tuple[str, str]] = []
    for c in calls:
        args = json.dumps(c.get("arguments"), sort_keys=True)
        n = c["name"]
        if any(a == args and (n == "un" + m or m == "un" + n) for m, a in seen):
            return True
        seen.append((n, args))
    return False


def _create_then_undo(calls: list[dict[str, Any]]) -> bool:
    names = [c["name"] for c in calls]
    made = [i for i, n in enumerate(names) if n.startswith(MAKES)]
    return any(n.startswith(UNDOES) for i, n in enumerate(names) if made and i > made[0])


def quality(folder: Path) -> dict[str, Any]:
    """The quality figures of a run folder's tasks (see the module docstring)."""
    tasks = [
        json.loads(line)
        for line in (folder / "tasks.jsonl").read_text().splitlines()
        if line.strip()
    ]
    summary = (
        json.loads((folder / "summary.json").read_text())
        if (folder / "summary.json").exists()
        else {}
    )
    return quality_of(tasks, summary)


def slim(task: Any) -> dict[str, Any]:
    """The parts of a sampled ``Task`` that :func:`quality_of` reads, as in ``tasks.jsonl``."""
    import msgspec

    o = task.outcome
    return {
        "request": task.request,
        "calls": [
            {"name": c.name, "arguments": msgspec.to_builtins(c.arguments)} for c in task.calls
        ],
        "outcome": {
            "mutates": o.mutates,
            "answer_rows": bool(o.answer_rows),
            "answer_absent": bool(o.answer_absent),
            "answer": bool(o.answer),
        },
        "hidden": list(task.hidden),
        "persona": dict(task.persona),
        "planted": [None] * len(task.planted),
    }


def quality_of(tasks: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """The quality figures of ``tasks`` (rows as in ``tasks.jsonl``); mutant figures from a run's
    ``summary``."""
    n = len(tasks) or 1
    reqs = [t["request"] for t in tasks]

    def share(pred: Any) -> float:
        return round(sum(1 for t in tasks if pred(t)) / n, 4)

    kinds: dict[str, Counter[str]] = {}
    envs: dict[str, Counter[str]] = {}
    for env, per_kind in (summary.get("mutants") or {}).items():
        for kind, c in per_kind.items():
            for agg, key in ((kinds, kind), (envs, env)):
                agg.setdefault(key, Counter()).update({k: int(v) for k, v in c.items()})

    def rate(c: Counter[str], what: str = "killed") -> float | None:
        return round(c[what] / c["applied"], 4) if c["applied"] else None

    total: Counter[str] = sum(kinds.values(), Counter())
    survived = (summary.get("rejected") or {}).get("task:mutant_survived", 0)
    gated_or_survived = len(tasks) + survived
    return {
        "tasks": len(tasks),
        "narrates_2_steps": share(
            lambda t: len(NARRATES.findall(t["request"])) >= 1 and len(t["calls"]) >= 2
        ),
        "aggregate_superlative_condition": share(
            lambda t: AGGREGATE.search(t["request"]) is not None or _multi_row(t)
        ),
        "multi_row_change_goals": share(_multi_row),
        "held_back_for_the_user": share(lambda t: bool(t.get("hidden"))),
        "persona_with_role": share(lambda t: bool((t.get("persona") or {}).get("role"))),
        "stock_greeting": share(lambda t: GREETING.search(t["request"]) is not None),
        "schema_echo": share(lambda t: ECHO.search(t["request"]) is not None),
        "create_then_undo": share(lambda t: _create_then_undo(t["calls"])),
        "change_then_inverse": share(lambda t: _change_then_inverse(t["calls"])),
        "planted_distractors": share(lambda t: bool(t.get("planted"))),
        "planted_rows": sum(len(t.get("planted") or []) for t in tasks),
        "read_only": share(lambda t: not t["outcome"]["mutates"]),
        "read_only_checked_rows": share(lambda t: bool(t["outcome"].get("answer_rows"))),
        "read_only_with_precision": share(lambda t: bool(t["outcome"].get("answer_absent"))),
        "answers_in_words": share(lambda t: bool(t["outcome"].get("answer"))),
        "distinct_request_shapes": len({_shape(r) for r in reqs}),
        "mutants_applied": total["applied"],
        "mutant_kill_rate": rate(total),
        "mutant_kill_rate_outcome_only": rate(total, "outcome_killed"),
        "mutant_kill_rate_by_kind": {k: rate(c) for k, c in sorted(kinds.items())},
        "mutant_outcome_kill_rate_by_kind": {
            k: rate(c, "outcome_killed") for k, c in sorted(kinds.items())
        },
        "mutant_kill_rate_by_env": {k: rate(c) for k, c in sorted(envs.items())},
        "emitted_killing_every_mutant": 1.0 if total["applied"] else None,
        "proposed_killing_every_mutant": round(len(tasks) / gated_or_survived, 4)
        if gated_or_survived and total["applied"]
        else None,
    }


# -- 2. the sampler alone
# -----------------------------------------------------------------------------


class _Ctx:
    """The parts of the kernel's Context a sampler uses, with sandboxes over NATS."""

    def __init__(self, bus: Any, out: Path, component: str, seed: int = 0) -> None:
        import structlog

        self.bus, self.out_dir, self.component, self.seed = bus, out, component, seed
        self.log = structlog.get_logger("bench").bind(component=component)

    def rng(self, *keys: object) -> random.Random:
        return random.Random(f"{self.seed}/{self.component}/" + "/".join(map(str, keys)))

    @asynccontextmanager
    async def sandbox(self, env: Any):  # type: ignore[no-untyped-def]
        from envkernel.sandbox import open_sandbox

        sb = await open_sandbox(self.bus, "process", env, timeout=120)
        try:
            yield sb
        finally:
            await sb.close()


async def run_sampler(
    per_env: int, sampler: str, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    import structlog

    from envkernel.plugins import load
    from envkernel.sandbox import SandboxService
    from envkernel_bus import Bus, EmbeddedServer
    from envkernel_openapi import corpus_files, synthesize_file

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    registry = load(["process", sampler], strict=True)
    rc = registry.get("process")
    runner = rc.factory(rc.settings_type()) if rc.settings_type else rc.factory()
    sc = registry.get(sampler)
    envs = [synthesize_file(f)[0] for f in corpus_files()]
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "nats") as server:
        sbus = await Bus.connect(server.url, name="bench-runner")
        cbus = await Bus.connect(server.url, name="bench-sampler")
        service = SandboxService(sbus, "process", runner)
        await service.start()
        await sbus.nc.flush()
        ctx = _Ctx(cbus, Path(tmp) / "out", sampler)
        inst = sc.factory(
            msgspec_convert(sc.settings_type, {"tasks_per_env": per_env, **(settings or {})})
        )

        kept: list[dict[str, Any]] = []

        async def one(env: Any) -> tuple[str, int, float]:
            t = time.perf_counter()
            n = 0
            async for task in inst.sample(env, ctx):
                n += 1  # streamed: only what the quality figures read is kept
                kept.append(slim(task))
            return env.id, n, time.perf_counter() - t

        t0 = time.perf_counter()
        rows = await asyncio.gather(*(one(e) for e in envs))
        wall = time.perf_counter() - t0
        stats = {}
        for env_id, n, secs in rows:
            p = Path(tmp) / "out" / "envs" / env_id / "sampling.json"
            st = json.loads(p.read_text()).get(sampler, {}) if p.exists() else {}
            stats[env_id] = {
                "tasks": n,
                "seconds": round(secs, 2),
                "tasks_per_s": round(n / secs, 2) if secs else None,
                "attempts": st.get("attempts"),
                "tool_calls": st.get("tool_calls"),
                "tool_coverage": st.get("tool_coverage"),
                "phrasings": st.get("phrasings"),
                "requests": st.get("requests"),
                "planting": st.get("planting"),
                "rejected": st.get("rejected"),
            }
        await cbus.close()
        await sbus.close()
        if hasattr(runner, "aclose"):
            await runner.aclose()
    total = sum(r[1] for r in rows)
    q = {
        k: v
        for k, v in quality_of(kept, {}).items()
        if not k.startswith(("mutant", "emitted_", "proposed_"))
    }
    return {
        "per_env": per_env,
        "request_kinds": request_kinds(stats),
        "tasks": total,
        "wall_seconds": round(wall, 2),
        "tasks_per_s": round(total / wall, 2),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "envs": stats,
        "quality": q,
    }


def msgspec_convert(t: Any, data: dict[str, Any]) -> Any:
    import msgspec

    return msgspec.convert(data, t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=20000, help="gated tasks to reach (default 20000)")
    ap.add_argument(
        "--headroom",
        type=float,
        default=0.0,
        help="extra share of tasks per env to ask for (default 0)",
    )
    ap.add_argument("--sampler", default="chains", help="sampler component (chains or walk)")
    ap.add_argument(
        "--timeout", type=float, default=1800.0, help="give the run up after this many seconds"
    )
    ap.add_argument(
        "--sampler-tasks",
        type=int,
        default=0,
        help="tasks per env for the sampler-alone part (default: as the run)",
    )
    ap.add_argument("--skip-run", action="store_true", help="only measure the sampler alone")
    ap.add_argument("--skip-sampler", action="store_true", help="only run the pipeline")
    ap.add_argument("--keep", action="store_true", help="keep the run folder")
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="also serve the run's plugins from this many `envkernel worker` processes started "
        "here (default 0)",
    )
    ap.add_argument(
        "--run-workers",
        type=int,
        default=0,
        help="`envkernel run --workers N`: local workers the run starts and stops itself "
        "(default 0)",
    )
    ap.add_argument(
        "--no-users",
        action="store_true",
        help="run without the users plugin (no held-back conditions, no user turns)",
    )
    ap.add_argument(
        "--quality",
        type=Path,
        default=None,
        help="only report the quality of the tasks of this run folder",
    )
    ap.add_argument(
        "--planting-cost",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also time the sampler alone without and with distractor planting, alternating, "
        "ROUNDS times each",
    )
    args = ap.parse_args()
    result: dict[str, Any] = {"benchmark": "tasks", "cpus": os.cpu_count(), "sampler": args.sampler}
    if args.quality is not None:
        result["quality"] = quality(args.quality)
        print(json.dumps(result))
        return
    if not args.skip_run:
        r = run_pipeline(
            args.tasks,
            args.headroom,
            args.sampler,
            args.timeout,
            args.keep,
            users=not args.no_users,
            workers=args.workers,
            run_workers=args.run_workers,
        )
        result["run"] = r
        print(
            f"pipeline: {r['tasks']} tasks in {r['wall_seconds']} s ({r['tasks_per_s']} tasks/s); "
            f"{args.tasks} reached after {r['seconds_to_target']} s; peak RSS "
            f"{r['peak_tree_rss_mb']} MB (process tree), ru_maxrss {r['children_maxrss_mb']} "
            "MB (largest child)"
        )
        print(
            f"  proposed {r['tasks_proposed']}, rejected {r['tasks_rejected']} "
            f"{r['rejected']}; tool coverage {r['tool_coverage']}; lengths "
            f"{r['chain_lengths']}; unique chain shapes {r['unique_chain_shapes']}"
        )
        print(
            f"  sampling ended after {r['sampling_seconds_longest_env']} s (longest env); "
            f"the run went on {r.get('after_sampling_seconds')} s more (gate, rollouts, "
            f"exporters); {r.get('gated_when_sampling_ended')} tasks "
            "were gated when sampling ended; the kernel alone then gated "
            f"{r.get('kernel_only_tasks_per_s')} tasks/s"
        )
        if "quality" in r:
            q = r["quality"]
            print(
                f"  quality: narrate 2+ steps {q['narrates_2_steps']:.1%}, "
                "aggregate/superlative/condition "
                f"{q['aggregate_superlative_condition']:.1%}, read-only "
                f"{q['read_only']:.1%}, {q['distinct_request_shapes']} request shapes, "
                f"mutant kill rate {q['mutant_kill_rate']} (outcome alone "
                f"{q['mutant_kill_rate_outcome_only']})"
            )
    if args.planting_cost:
        per_env = args.sampler_tasks or 150
        runs: dict[str, list[float]] = {"without": [], "with": []}
        for _round in range(
            args.planting_cost
        ):  # alternating A (no planting) and B (planting, the default share)
            for label, extra in (("without", {"distractor_share": 0.0}), ("with", {})):
                got = asyncio.run(run_sampler(per_env, args.sampler, extra))
                runs[label].append(got["tasks_per_s"])
                print(
                    f"sampler alone {label} planting: {got['tasks']} tasks in "
                    f"{got['wall_seconds']} s = {got['tasks_per_s']} tasks/s"
                )
        a, b = (sum(v) / len(v) for v in (runs["without"], runs["with"]))
        result["planting_cost"] = {
            "per_env": per_env,
            "rounds": args.planting_cost,
            "sampler_tasks_per_s_without_planting": round(a, 2),
            "sampler_tasks_per_s_with_planting": round(b, 2),
            "with_over_without_planting_tasks_per_s": round(b / a, 3) if a else None,
        }
        print(f"planting: {b:.1f} vs {a:.1f} tasks/s without ({b / a:.2f}x)")
    if not args.skip_sampler:
        per_env = args.sampler_tasks or math.ceil(args.tasks / N_ENVS * (1 + args.headroom))
        s = asyncio.run(run_sampler(per_env, args.sampler))
        result["sampler_alone"] = s
        print(
            f"sampler alone ({args.sampler}): {s['tasks']} tasks in {s['wall_seconds']} s = "
            f"{s['tasks_per_s']} tasks/s (7 envs in parallel, one sandbox each, over NATS); "
            "per env:"
        )
        for env_id, st in sorted(s["envs"].items()):
            print(
                f"  {env_id:10s} {st['tasks']:6d} tasks {st['seconds']:8.2f} s "
                f"{st['tasks_per_s']:8.2f} tasks/s attempts {st['attempts']} sandbox calls "
                f"{st['tool_calls']}"
            )
        q = s["quality"]
        print(
            "  quality (sampled, before the gate): narrate 2+ steps "
            f"{q['narrates_2_steps']:.1%}, aggregate/superlative/condition "
            f"{q['aggregate_superlative_condition']:.1%}, multi-row goals "
            f"{q['multi_row_change_goals']:.1%}, read-only {q['read_only']:.1%}, "
            f"{q['distinct_request_shapes']} request shapes of {q['tasks']}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
