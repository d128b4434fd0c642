"""Yield and cost of the ``llm`` synthesizer against a scripted writer model. Prints figures; the
last line is JSON.

    python benchmarks/bench_llm_synth.py [--pairs 6] [--mixed 16]

The path measured is the synthesizer's own: ``LLMSynthesizer.synthesize`` with the real ``openai``
client over HTTP to :class:`envkernel_kit.scripted.ScriptedServer` on loopback (it stands in for a
model: the replies come from :class:`envkernel_llm.playbook.Playbook`), and each candidate run in
a real ``process`` sandbox (opened directly through the runner, not over NATS).

- ``pairs`` phase, alternating A and B: A is a brief the model gets right the first time (1 round,
  3 model calls), B one whose first code has a bug the scenarios catch (2 rounds, 4 calls).
  ``repair_vs_first_round_seconds_ratio`` = median seconds per B env / median per A env, and
  ``sandbox_seconds_per_round`` = (env seconds − model seconds) / rounds;
- ``mixed`` phase: every behaviour of the playbook in turn (clean, bug then fix, network and host
  files blocked then fixed, malformed and truncated replies then fixed, always buggy, benchmark
  names): the first-round and after-repair pass rates, rejections by reason, flagged envs, tokens
  and seconds per verified env (the figures ``summary.json`` reports under ``synthesis``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import Counter

from envkernel_kit.scripted import ScriptedServer
from envkernel_kit.testing import RunnerContext
from envkernel_llm import LLMSettings, LLMSynthesizer
from envkernel_llm.playbook import BEHAVIOURS, Playbook
from envkernel_process import ProcessRunner
from envkernel_schemas import EnvRequested

BRIEF = {
    "clean": "A lending library ({}) with books, members and loans.",
    "bug_then_fix": "A bank ({}) with accounts and transfers.",
    "network_then_fix": "Meeting room booking ({}) with reservations.",
    "files_then_fix": "A library ({}) audited, with books and loans.",
    "malformed_then_fix": "A credit union ({}) chatty, with accounts.",
    "truncated_then_fix": "Room booking ({}) verbose, with reservations.",
    "always_buggy": "A library ({}) sloppy, with books and loans.",
    "benchmark_names": "A brokerage ({}) clone, with accounts and transfers.",
}
RULES = {
    "audited": "files_then_fix",
    "chatty": "malformed_then_fix",
    "verbose": "truncated_then_fix",
    "sloppy": "always_buggy",
    "clone": "benchmark_names",
    "bank": "bug_then_fix",
    "booking": "network_then_fix",
}


async def main(pairs: int, mixed: int) -> dict:
    runner = ProcessRunner()
    ctx = RunnerContext(runner)
    index = 0

    async def one(syn: LLMSynthesizer, behaviour: str) -> tuple[float, object]:
        nonlocal index
        index += 1
        req = EnvRequested(
            run="bench",
            id=f"r{index}",
            time=0.0,
            source_kind="brief",
            source=BRIEF[behaviour].format(index),
            index=index,
        )
        t0 = time.perf_counter()
        env = await syn.synthesize(req, ctx)
        return time.perf_counter() - t0, env

    try:
        with ScriptedServer(Playbook(RULES), record=False) as srv:
            syn = LLMSynthesizer(
                LLMSettings(base_url=srv.base_url, model="scripted-writer", max_rounds=3)
            )
            await one(syn, "clean")  # warm-up
            a, b, sandbox_per_round = [], [], []
            for _ in range(pairs):
                for behaviour, bucket in (("clean", a), ("bug_then_fix", b)):
                    secs, env = await one(syn, behaviour)
                    bucket.append(secs)
                    p = env.provenance
                    sandbox_per_round.append((p.seconds - p.details["model_seconds"]) / p.rounds)
            envs = []
            for i in range(mixed):
                envs.append((await one(syn, BEHAVIOURS[i % len(BEHAVIOURS)]))[1])
    finally:
        await runner.aclose()
    provs = [e.provenance for e in envs]
    verified = [p for p in provs if not p.rejected]
    result = {
        "pairs": pairs,
        "first_round_env_seconds_p50": round(statistics.median(a), 4),
        "repaired_env_seconds_p50": round(statistics.median(b), 4),
        "repair_vs_first_round_seconds_ratio": round(
            statistics.median(b) / statistics.median(a), 3
        ),
        "sandbox_seconds_per_round_p50": round(statistics.median(sandbox_per_round), 4),
        "mixed_envs": len(provs),
        "mixed_first_round_pass_rate": round(
            sum(p.rounds == 1 and not p.rejected for p in provs) / len(provs), 4
        ),
        "mixed_pass_rate_after_repair": round(len(verified) / len(provs), 4),
        "mixed_rejected_by_reason": dict(Counter(p.rejected for p in provs if p.rejected)),
        "mixed_flagged": dict(
            Counter(f.split(":")[0] + ":" + f.split(":")[1] for p in provs for f in p.flags)
        ),
        "mixed_tokens_per_verified_env": round(
            sum(p.tokens for p in provs) / max(1, len(verified)), 1
        ),
        "mixed_seconds_per_verified_env": round(
            sum(p.seconds for p in provs) / max(1, len(verified)), 4
        ),
        "mixed_mean_rounds": round(statistics.mean(p.rounds for p in provs), 3),
    }
    print(
        f"A (right first time) {result['first_round_env_seconds_p50']} s per env, B (bug, "
        f"then fixed) {result['repaired_env_seconds_p50']} s: ratio "
        f"{result['repair_vs_first_round_seconds_ratio']}; sandbox time per round "
        f"{result['sandbox_seconds_per_round_p50']} s"
    )
    print(
        f"mixed ({len(provs)} envs): first round "
        f"{result['mixed_first_round_pass_rate']:.0%}, after repair "
        f"{result['mixed_pass_rate_after_repair']:.0%}, rejected "
        f"{result['mixed_rejected_by_reason']}, flagged {result['mixed_flagged']}"
    )
    print(
        f"  {result['mixed_tokens_per_verified_env']} tokens and "
        f"{result['mixed_seconds_per_verified_env']} s per verified env"
    )
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--pairs", type=int, default=6, help="A/B pairs (right first time / repaired once)."
    )
    ap.add_argument(
        "--mixed", type=int, default=16, help="Environments over every playbook behaviour."
    )
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.pairs, args.mixed))))
