"""Real public OpenAPI specs: how many become verified environments with tasks.
Prints figures; the last line is JSON.

    python benchmarks/bench_realspecs.py [--all | --corpus DIR ...] [--only NAME] [--timeout S]
                                         [--results FILE] [--jobs N] [--skip-shipped]

Each spec runs in a process of its own (killed when it overruns its timeout, so one slow spec
costs only itself), and its row is appended to ``--results`` (JSON lines) as soon as it is done;
run again with the same file to go on where a run stopped. Progress goes to stderr. Per spec:

1. **synthesis** — the spec through the ``openapi`` synthesizer with the spec validator on:
   operations, tools built, skip reasons, validator warnings and seconds; a spec refused
   (``SpecError``) says why; any other exception is a traceback (target: none).
2. **pipeline** — ``envkernel run --source SPEC`` with the default plugins (``probe`` verifier
   in ``process`` sandboxes, ``chains`` sampler, the gate): kept or not, tools kept, drop reasons,
   the tasks emitted (``tasks.jsonl``) and their single-call share.

Then (unless ``--skip-shipped``) ``bench_openapi.py --rounds 1``: the 7-domain corpus's share of
environments kept whole and the verifier's broken-env recall.

Figures: ``share_kept_with_10_tasks`` (specs whose environment is kept and emits at least 10
tasks, over all specs; target >= 0.9), ``tracebacks`` (target 0), ``shipped_yield_envs_kept_whole``
(target 1.0), ``shipped_recall`` (target >= 0.9).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "plugins" / "openapi" / "corpus-real"
CORPORA = ("corpus-real", "corpus-real-2", "corpus-real-3")
ENVKERNEL = Path(sys.executable).with_name("envkernel")
SKIP = re.compile(r": skipped [A-Z]+ \S+(?: \([^)]*\))?: (.*)$")


def reason(text: str) -> str:
    """A skip or drop message without its particulars (names, values, paths)."""
    r = re.sub(r"'[^']*'|\"[^\"]*\"", "X", text.split(" (after ")[0])
    r = re.sub(r"/\S+", "/P", r)
    return r.split(" (arguments ")[0][:90]


def slug(text: str) -> str:
    """The synthesizer's environment id of a spec file (see ``envkernel_openapi._slug``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "api"


def synthesis(files: list[Path], corpus: Path = CORPUS) -> dict[str, dict[str, Any]]:
    """Each spec through the synthesizer (validator on): what it built and skipped, and why."""
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        row: dict[str, Any] = {"file": str(f.relative_to(corpus))}
        t = time.perf_counter()
        try:
            env, warnings = synthesize_file(f, settings=OpenAPISettings(validate=True))
            skipped = [reason(m.group(1)) for w in warnings if (m := SKIP.search(w))]
            row.update(
                tools_built=len(env.tools),
                skipped=len(skipped),
                operations=len(env.tools) + len(skipped),
                skip_reasons=dict(collections.Counter(skipped).most_common()),
                validator_warnings=sum("validator" in w for w in warnings),
            )
        except SpecError as exc:
            row.update(refused=str(exc)[:300], tools_built=0)
        except Exception:
            row.update(traceback=traceback.format_exc()[-1500:], tools_built=0)
        row["synth_seconds"] = round(time.perf_counter() - t, 2)
        out[row["file"]] = row
    return out


SINGLES: collections.Counter[str] = collections.Counter()
"""Tasks of one call per environment, filled by :func:`read_run`."""


def read_run(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished run's summary and its tasks per environment (its single-call tasks per
    environment go to :data:`SINGLES`)."""
    summary = json.loads((run / "summary.json").read_text())
    tasks: collections.Counter[str] = collections.Counter()
    if (run / "tasks.jsonl").exists():
        for line in (run / "tasks.jsonl").read_text().splitlines():
            t = json.loads(line)
            tasks[t["env_id"]] += 1
            SINGLES[t["env_id"]] += len(t.get("calls") or []) <= 1
    return summary, dict(tasks)


def pipeline(
    files: list[Path], out: Path, timeout: float
) -> tuple[dict[str, Any], dict[str, Any], float, int]:
    """One ``envkernel run`` over every spec: (summary, per-env tasks, seconds, exit code)."""
    cmd = [str(ENVKERNEL), "run", "--out", str(out), "--timeout", str(int(timeout))]
    for f in files:
        cmd += ["--source", str(f)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60, check=False)
    seconds = time.perf_counter() - t
    runs = sorted(out.iterdir())
    if not runs:
        raise SystemExit(
            f"envkernel run wrote nothing (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    summary, tasks = read_run(runs[-1])
    return summary, tasks, seconds, proc.returncode


def env_for(spec_file: str, ids: list[str]) -> str | None:
    """The environment id a spec file became in the run (ids get a ``-sN`` seed suffix)."""
    s = slug(Path(spec_file).stem)
    return next((i for i in ids if i == s or re.fullmatch(re.escape(s) + r"-s\d+", i)), None)


def shipped() -> dict[str, Any]:
    """bench_openapi.py over the shipped corpus, one round: its JSON line."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_openapi.py"), "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"bench_openapi.py failed: {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def one_spec(spec: Path, corpus: Path, timeout: float) -> dict[str, Any]:
    """One spec, synthesis then its own ``envkernel run``: its row (see :func:`main`)."""
    row = synthesis([spec], corpus)[str(spec.relative_to(corpus))]
    if "refused" in row or "traceback" in row:
        return row | {"kept": False, "tools_kept": 0, "tasks": 0, "single_call_share": None}
    out = Path(tempfile.mkdtemp(prefix="bench-realspecs-"))
    SINGLES.clear()
    summary, tasks, seconds, code = pipeline([spec], out, timeout)
    verification = summary.get("verification") or {}
    eid = env_for(row["file"], list(verification))
    v = verification.get(eid or "", {})
    dropped = v.get("tools_dropped") or {}
    drops = [reason(str(d)) for d in (dropped.values() if isinstance(dropped, dict) else dropped)]
    n = tasks.get(eid or "", 0)
    return row | {
        "env": eid,
        "kept": bool(v.get("kept")),
        "tools_kept": int(v.get("tools_kept") or 0),
        "drop_reasons": dict(collections.Counter(drops).most_common()),
        "tasks": n,
        "single_call_share": round(SINGLES[eid] / n, 2) if n else None,
        "pipeline_seconds": round(seconds, 1),
        "pipeline_exit_code": code,
        "pipeline_failures": summary.get("failures", 0),
    }


def child(corpus: Path, spec: Path, timeout: float) -> dict[str, Any]:
    """One spec's row from a process of its own (``--one``), killed after ``timeout`` + 120 s."""
    t = time.perf_counter()
    cmd = [sys.executable, __file__, "--one", str(spec), "--corpus", str(corpus)]
    cmd += ["--timeout", str(timeout)]
    file = str(spec.relative_to(corpus))
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout + 120, check=False
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        row = (
            json.loads(lines[-1])
            if lines
            else {"file": file, "error": proc.stderr.strip()[-500:] or "no output"}
        )
    except subprocess.TimeoutExpired:
        row = {"file": file, "error": f"timed out after {timeout + 120:.0f} s"}
    for k, v in (("kept", False), ("tasks", 0), ("tools_built", 0), ("synth_seconds", 0.0)):
        row.setdefault(k, v)
    row.setdefault("single_call_share", None)
    row["corpus"] = corpus.name
    row["wall_seconds"] = round(time.perf_counter() - t, 1)
    return row


def run_children(
    specs: list[tuple[Path, Path]], timeout: float, results: Path, jobs: int = 1
) -> list[dict[str, Any]]:
    """Each spec through :func:`child` (``jobs`` at a time); rows are appended to ``results``
    (JSON lines) as they come, and a spec already there is not run again."""
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            done[(r["corpus"], r["file"])] = r
    todo = [(c, f) for c, f in specs if (c.name, str(f.relative_to(c))) not in done]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(child, c, f, timeout) for c, f in todo]
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            row = fut.result()
            done[(row["corpus"], row["file"])] = row
            with results.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            what = row.get("error") or f"kept={row['kept']} tasks={row['tasks']}"
            where = f"{row['corpus']}/{row['file']}"
            print(
                f"[{i}/{len(todo)}] {where}: {what} ({row['wall_seconds']} s)",
                file=sys.stderr,
                flush=True,
            )
    return [done[(c.name, str(f.relative_to(c)))] for c, f in specs]


def outcome(r: dict[str, Any]) -> str:
    """A row's outcome in a few words."""
    if r.get("env"):
        return "kept" if r["kept"] else "rejected"
    if "refused" in r:
        return "refused: " + r["refused"][:60]
    if "error" in r:
        return "error: " + r["error"][-60:]
    return "traceback" if "traceback" in r else "no env"


def print_rows(rows: list[dict[str, Any]]) -> None:
    """One line per spec, with its top skip and drop reasons."""
    print(
        f"{'spec':52s} {'ops':>4s} {'built':>5s} {'kept':>4s} {'tasks':>5s} {'1call':>5s} "
        f"{'sec':>5s}  outcome"
    )
    for r in rows:
        share = "" if r["single_call_share"] is None else r["single_call_share"]
        print(
            f"{r['file'][:52]:52s} {r.get('operations', 0):4d} {r['tools_built']:5d} "
            f"{r.get('tools_kept', 0):4d} {r.get('tasks', 0):5d} {share:>5} "
            f"{r['synth_seconds']:5.1f}  {outcome(r)}"
        )
        for label, k in (("skipped", "skip_reasons"), ("dropped", "drop_reasons")):
            if r.get(k):
                top = list(r[k].items())[:4]
                print(f"      {label}: " + "; ".join(f"{n} x {why}" for why, n in top))
        if "traceback" in r:
            print("      " + r["traceback"].strip().splitlines()[-1])


def per_spec(r: dict[str, Any]) -> dict[str, Any]:
    """One spec's figures in the JSON line."""
    keys = ("operations", "tools_built", "tools_kept", "tasks", "single_call_share")
    return {k: r.get(k) for k in keys} | {"outcome": outcome(r)[:80]}


def top_reasons(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    """The five commonest reasons of ``key`` (skip or drop reasons) over all rows."""
    total: collections.Counter[str] = collections.Counter()
    for r in rows:
        total.update(r.get(key) or {})
    return dict(total.most_common(5))


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole corpus's figures (the JSON line)."""
    good = [r for r in rows if r["kept"] and r["tasks"] >= 10]
    ntasks = sum(r.get("tasks", 0) for r in rows)
    singles = sum(round((r["single_call_share"] or 0) * r.get("tasks", 0)) for r in rows)
    return {
        "bench": "realspecs",
        "specs": len(rows),
        "specs_refused": sum("refused" in r for r in rows),
        "specs_errored": sum("error" in r for r in rows),
        "tracebacks": sum("traceback" in r for r in rows),
        "envs_kept": sum(r["kept"] for r in rows),
        "specs_kept_with_10_tasks": len(good),
        "share_kept_with_10_tasks": round(len(good) / max(1, len(rows)), 4),
        "operations_of_specs_synthesized": sum(r.get("operations", 0) for r in rows),
        "tools_built": sum(r["tools_built"] for r in rows),
        "tools_kept": sum(r.get("tools_kept", 0) for r in rows),
        "tasks_emitted": ntasks,
        "single_call_share": round(singles / max(1, ntasks), 3),
        "per_spec": {f"{r.get('corpus', '')}/{r['file']}": per_spec(r) for r in rows},
        "top_skip_reasons": top_reasons(rows, "skip_reasons"),
        "top_drop_reasons": top_reasons(rows, "drop_reasons"),
        "synth_seconds_total": round(sum(r["synth_seconds"] for r in rows), 1),
        "pipeline_seconds": round(sum(r.get("pipeline_seconds") or 0 for r in rows), 1),
    }


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        action="append",
        help="A corpus folder (with sources.json); repeat for several (default: corpus-real).",
    )
    ap.add_argument("--all", action="store_true", help="Every real corpus (corpus-real, -2, -3).")
    ap.add_argument(
        "--skip-shipped", action="store_true", help="Leave out the 7-domain corpus figures."
    )
    ap.add_argument("--timeout", type=float, default=600, help="Seconds each spec's run may take.")
    ap.add_argument(
        "--results",
        type=Path,
        help="JSON-lines file the rows are appended to; specs already in it are not run again.",
    )
    ap.add_argument("--jobs", type=int, default=1, help="Specs run at the same time.")
    ap.add_argument("--only", action="append", help="Only specs whose file name holds this.")
    ap.add_argument(
        "--keep", action="store_true", help="Kept for old command lines (runs are kept)."
    )
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    corpora = args.corpus or [CORPUS]
    if args.all:
        corpora = [ROOT / "plugins" / "openapi" / c for c in CORPORA]
    if args.one:
        return one_spec(args.one, corpora[0], args.timeout)
    specs = [
        (c, c / s["file"]) for c in corpora for s in json.loads((c / "sources.json").read_text())
    ]
    if args.only:
        specs = [(c, f) for c, f in specs if any(o in f.name for o in args.only)]
    results = args.results or Path(tempfile.mkdtemp(prefix="bench-realspecs-")) / "rows.jsonl"
    print(f"rows go to {results}", file=sys.stderr, flush=True)
    rows = run_children(specs, args.timeout, results, args.jobs)
    print_rows(rows)
    result = figures(rows)
    print(
        f"{result['specs_kept_with_10_tasks']}/{len(rows)} specs give a kept environment with "
        f">= 10 tasks; {result['tracebacks']} tracebacks; {result['specs_refused']} refused; "
        f"{result['specs_errored']} errored or timed out"
    )
    if not args.skip_shipped:
        sh = shipped()
        result.update(
            shipped_yield_envs_kept_whole=sh["yield_envs_kept_whole"], shipped_recall=sh["recall"]
        )
        print(
            f"shipped corpus: {sh['yield_envs_kept_whole']:.0%} of environments kept whole, "
            f"broken-env recall {sh['recall']}"
        )
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
