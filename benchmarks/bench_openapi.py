"""Environments from OpenAPI documents: verification yield, verifier recall, throughput.
Prints figures; the last line is JSON.

    python benchmarks/bench_openapi.py [--rounds 3]

The real path: the ``openapi`` synthesizer on the shipped corpus (7 domains), the ``probe``
verifier (every tool called, outputs checked against their schemas, state invariants) in
``process`` sandboxes (confined executors, the engine loaded beside them).

Figures:

- ``yield_envs_kept_whole``: share of corpus environments kept with *all* their tools (target
  >= 0.95); ``yield_tools_kept``: share of corpus tools kept;
- ``recall``: share of deliberately broken environments the verifier catches (drops the faulty
  tool or rejects the env), over the code-fault notes app (``CODE_FAULTS``) and every applicable
  engine fault planted in every corpus env (``model_faults``); ``recall_code`` and
  ``recall_model`` split it; ``control_clean``: the healthy notes app passes untouched;
- ``envs_per_minute``: environments synthesized *and* verified per minute, one at a time
  (``--rounds`` passes over the corpus with different seeds); ``synth_ms`` and ``verify_ms`` per
  environment (median).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from envkernel_kit.testing import RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_probe import Probe
from envkernel_probe.broken import CODE_FAULTS, caught, model_faults, notes_env
from envkernel_process import ProcessRunner, SandboxError


async def _verify(runner: ProcessRunner, env: Any) -> Any:
    ctx = RunnerContext(runner, component="probe")
    for attempt in range(3):  # a sandbox that cannot start is the runner's, not the env's
        try:
            return await Probe().verify(env, ctx)
        except SandboxError:
            if attempt == 2:
                raise
    return None


async def main(rounds: int) -> dict[str, Any]:
    runner = ProcessRunner()
    try:
        files = corpus_files()
        # yield and throughput
        synth_ms, verify_ms, whole, tools_kept, tools_all = [], [], 0, 0, 0
        t0 = time.perf_counter()
        n = 0
        for r in range(rounds):
            for f in files:
                a = time.perf_counter()
                env, _ = synthesize_file(f, seed=r)
                b = time.perf_counter()
                report = await _verify(runner, env)
                c = time.perf_counter()
                synth_ms.append((b - a) * 1000)
                verify_ms.append((c - b) * 1000)
                n += 1
                if r == 0:
                    whole += int(report.kept and not report.tools_dropped)
                    tools_kept += len(report.tools_kept)
                    tools_all += len(env.tools)
                    if report.tools_dropped:
                        print(f"  {env.id}: dropped {report.tools_dropped}")
        elapsed = time.perf_counter() - t0
        print(
            f"corpus: {whole}/{len(files)} environments kept whole, {tools_kept}/{tools_all} "
            "tools kept"
        )
        print(f"throughput: {n} environments synthesized and verified in {elapsed:.2f} s")
        # recall
        control = await _verify(runner, notes_env())
        code_hits = []
        for fault, (tool, _what) in CODE_FAULTS.items():
            rep = await _verify(runner, notes_env(fault))
            code_hits.append(caught(rep, tool))
            if not code_hits[-1]:
                print(f"  missed code fault {fault}")
        model_hits = []
        for f in files:
            env, _ = synthesize_file(f)
            for fault, tool, broken in model_faults(env):
                rep = await _verify(runner, broken)
                model_hits.append(caught(rep, tool))
                if not model_hits[-1]:
                    print(f"  missed model fault {fault} on {env.id}.{tool}")
        hits = code_hits + model_hits
        print(
            f"recall: {sum(hits)}/{len(hits)} broken environments caught "
            f"({sum(code_hits)}/{len(code_hits)} code, {sum(model_hits)}/{len(model_hits)} "
            f"model); healthy control clean: {control.kept and not control.tools_dropped}"
        )
        return {
            "bench": "openapi",
            "corpus_envs": len(files),
            "corpus_tools": tools_all,
            "yield_envs_kept_whole": round(whole / len(files), 4),
            "yield_tools_kept": round(tools_kept / tools_all, 4),
            "broken_envs": len(hits),
            "recall": round(sum(hits) / len(hits), 4),
            "recall_code": round(sum(code_hits) / len(code_hits), 4),
            "recall_model": round(sum(model_hits) / len(model_hits), 4),
            "control_clean": bool(control.kept and not control.tools_dropped),
            "envs_per_minute": round(n / elapsed * 60, 1),
            "synth_ms": round(statistics.median(synth_ms), 2),
            "verify_ms": round(statistics.median(verify_ms), 2),
            "rounds": rounds,
        }
    finally:
        await runner.aclose()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="Passes over the corpus for the throughput figure."
    )
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds))))
