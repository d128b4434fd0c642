"""Real public OpenAPI specs: how many become verified environments with tasks.
Prints figures; the last line is JSON.

    python benchmarks/bench_realspecs.py [--corpus DIR] [--skip-shipped] [--keep]

The real path, over the real-spec corpus (``plugins/openapi/corpus-real``, 36 public specs, see
its ``SOURCES.md``):

1. **synthesis** — each spec through the ``openapi`` synthesizer in this process, with the
   spec validator on: operations, tools built, skip reasons, validator warnings and seconds per
   spec; a spec refused (``SpecError``) says why; any other exception is a traceback (target: none).
2. **pipeline** — one ``envkernel run`` over every spec (``--source`` each), the default plugins
   (``probe`` verifier in ``process`` sandboxes, ``chains`` sampler, the gate): per environment,
   kept or not, tools kept, drop reasons and the tasks emitted (``tasks.jsonl``).
3. **shipped corpus** — ``bench_openapi.py --rounds 1`` (unless ``--skip-shipped``): the 7-domain
   corpus's share of environments kept whole and the verifier's broken-env recall.

Figures: ``share_kept_with_10_tasks`` (specs whose environment is kept and emits at least 10
tasks, over all specs; target >= 0.9), ``tracebacks`` (target 0), ``shipped_yield_envs_kept_whole``
(target 1.0), ``shipped_recall`` (target >= 0.9).
"""

from __future__ import annotations

import argparse
import collections
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


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--corpus", type=Path, default=CORPUS, help="The corpus folder (with sources.json)."
    )
    ap.add_argument(
        "--skip-shipped", action="store_true", help="Leave out the 7-domain corpus figures."
    )
    ap.add_argument("--timeout", type=float, default=900, help="Seconds the pipeline run may take.")
    ap.add_argument("--keep", action="store_true", help="Keep the run's output folder (printed).")
    ap.add_argument(
        "--run",
        type=Path,
        help="Read this finished run's folder instead of running the pipeline again.",
    )
    args = ap.parse_args()
    files = [
        args.corpus / s["file"] for s in json.loads((args.corpus / "sources.json").read_text())
    ]
    synth = synthesis(files, args.corpus)
    if args.run:
        out = args.run
        summary, tasks = read_run(args.run)
        run_seconds, code = float(summary.get("seconds") or 0), int(summary.get("exit_code") or 0)
    else:
        out = Path(tempfile.mkdtemp(prefix="bench-realspecs-"))
        summary, tasks, run_seconds, code = pipeline(files, out, args.timeout)
    verification = summary.get("verification") or {}
    rows = []
    for f in files:
        key = str(f.relative_to(args.corpus))
        row = synth[key]
        eid = env_for(key, list(verification))
        v = verification.get(eid or "", {})
        dropped = v.get("tools_dropped") or {}
        drops = [
            reason(str(d)) for d in (dropped.values() if isinstance(dropped, dict) else dropped)
        ]
        row.update(
            env=eid,
            kept=bool(v.get("kept")),
            tools_kept=int(v.get("tools_kept") or 0),
            drop_reasons=dict(collections.Counter(drops).most_common()),
            tasks=tasks.get(eid or "", 0),
            single_call_share=round(SINGLES[eid] / tasks[eid], 2) if tasks.get(eid or "") else None,
        )
        rows.append(row)
    print(
        f"{'spec':52s} {'ops':>4s} {'built':>5s} {'kept':>4s} {'tasks':>5s} {'1call':>5s} "
        f"{'sec':>5s}  outcome"
    )
    for r in rows:
        outcome = (
            ("kept" if r["kept"] else "rejected")
            if r.get("env")
            else (
                "refused: " + r["refused"][:60]
                if "refused" in r
                else "traceback"
                if "traceback" in r
                else "no env"
            )
        )
        print(
            f"{r['file'][:52]:52s} {r.get('operations', 0):4d} {r['tools_built']:5d} "
            f"{r.get('tools_kept', 0):4d} {r.get('tasks', 0):5d} "
            f"{'' if r['single_call_share'] is None else r['single_call_share']:>5} "
            f"{r['synth_seconds']:5.1f}  "
            f"{outcome}"
        )
        if r.get("skip_reasons"):
            print(
                "      skipped: "
                + "; ".join(f"{n} x {k}" for k, n in list(r["skip_reasons"].items())[:4])
            )
        if r.get("drop_reasons"):
            print(
                "      dropped: "
                + "; ".join(f"{n} x {k}" for k, n in list(r["drop_reasons"].items())[:4])
            )
        if "traceback" in r:
            print("      " + r["traceback"].strip().splitlines()[-1])
    good = [r for r in rows if r["kept"] and r["tasks"] >= 10]
    skip_total: collections.Counter[str] = collections.Counter()
    drop_total: collections.Counter[str] = collections.Counter()
    for r in rows:
        skip_total.update(r.get("skip_reasons") or {})
        drop_total.update(r.get("drop_reasons") or {})
    result: dict[str, Any] = {
        "bench": "realspecs",
        "specs": len(rows),
        "specs_refused": sum("refused" in r for r in rows),
        "tracebacks": sum("traceback" in r for r in rows),
        "envs_kept": sum(r["kept"] for r in rows),
        "specs_kept_with_10_tasks": len(good),
        "share_kept_with_10_tasks": round(len(good) / len(rows), 4),
        "operations_of_specs_synthesized": sum(r.get("operations", 0) for r in rows),
        "tools_built": sum(r["tools_built"] for r in rows),
        "tools_kept": sum(r.get("tools_kept", 0) for r in rows),
        "tasks_emitted": sum(r.get("tasks", 0) for r in rows),
        "single_call_share": round(
            sum(SINGLES.values()) / max(1, sum(r.get("tasks", 0) for r in rows)), 3
        ),
        "per_spec": {
            r["file"]: {
                k: r.get(k)
                for k in ("operations", "tools_built", "tools_kept", "tasks", "single_call_share")
            }
            | {"outcome": "kept" if r["kept"] else r.get("refused", "rejected")[:80]}
            for r in rows
        },
        "top_skip_reasons": dict(skip_total.most_common(5)),
        "top_drop_reasons": dict(drop_total.most_common(5)),
        "synth_seconds_total": round(sum(r["synth_seconds"] for r in rows), 1),
        "pipeline_seconds": round(run_seconds, 1),
        "pipeline_exit_code": code,
        "pipeline_failures": summary.get("failures", 0),
    }
    print(
        f"{len(good)}/{len(rows)} specs give a kept environment with >= 10 tasks; "
        f"{result['tracebacks']} tracebacks; {result['specs_refused']} refused; pipeline "
        f"{run_seconds:.0f} s (exit {code}, {result['pipeline_failures']} plugin failures)"
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
    if args.keep:
        print(f"run output kept in {out}")
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
