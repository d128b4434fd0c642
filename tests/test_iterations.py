"""The training loop: ``envkernel run --iterations N``.

After iteration k's groups are scored, ``iteration.ended`` reaches every trainer; an update a
trainer returns goes into the object store and is announced as ``policy.updated``; iteration
k+1's rollouts name it, and the policy applies it before rolling out. Tested with the shipped
learner (``reinforce``), a trainer in another process (``--remote``), and a trainer that
misbehaves at iteration ends (tests/thirdparty/envkernel-badtrainer).
"""

from __future__ import annotations

import json
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from envkernel_reinforce.evaluate import compare

pytestmark = pytest.mark.timeout(600)

CORPUS = (
    Path(__file__).resolve().parents[1]
    / "plugins"
    / "openapi"
    / "src"
    / "envkernel_openapi"
    / "corpus"
)


def _events(envk: Any, run_dir: Path) -> list[dict[str, Any]]:
    proc = envk("tap", "--run", str(run_dir), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _pp(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(site)}


def test_three_iterations_carry_each_update_to_the_next_rollouts(envk) -> None:
    run = envk.run(
        "--plugins",
        "+reinforce",
        "--policy",
        "reinforce",
        "--iterations",
        "3",
        "-G",
        "2",
        run_id="loop",
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["failures"] == 0 and s["tasks"] > 0
    assert s["rollouts"] == 3 * 2 * s["tasks"]
    assert [it["iteration"] for it in s["iterations"]] == [0, 1, 2]
    assert all(it["groups"] == s["tasks"] for it in s["iterations"])
    assert len(s["reward_curve"]) == 3 and all(isinstance(x, float) for x in s["reward_curve"])
    assert "reward per iteration:" in run.proc.stderr

    events = _events(envk, run.dir)
    ended = [e for e in events if e["type"] == "iteration.ended.v1"]
    assert [e["iteration"] for e in ended] == [0, 1, 2] and [e["last"] for e in ended] == [
        False,
        False,
        True,
    ]
    updated = {e["iteration"]: e for e in events if e["type"] == "policy.updated.v1"}
    assert sorted(updated) == [0, 1, 2]
    assert all(
        u["trainer"] == "reinforce-learner" and u["policy"] == "reinforce" and u["ref"]
        for u in updated.values()
    )
    assert updated[0]["metrics"]["groups_used"] >= 0 and "train_reward" in updated[0]["metrics"]
    train = [e for e in events if e["type"] == "rollout.requested.v1" and e["purpose"] == "train"]
    for k in (0, 1, 2):
        refs = {e["update"] for e in train if e["iteration"] == k}
        assert refs == ({""} if k == 0 else {updated[k - 1]["ref"]}), (k, refs)
    # iteration k+1 starts only after iteration k's update is published (stream order)
    order = [(e["type"], e["iteration"]) for e in events]
    for k in (1, 2):
        assert order.index(("policy.updated.v1", k - 1)) < order.index(("rollout.requested.v1", k))
    assert events[-1]["type"] == "run.finished.v1"

    # the learner's artifacts
    curve = json.loads((run.dir / "reinforce_curve.json").read_text())
    assert [p["iteration"] for p in curve] == [0, 1, 2]
    assert [p["train_reward"] for p in curve] == [it["mean_reward_train"] for it in s["iterations"]]
    w, h = _png_size(run.dir / "reward_curve.png")
    assert w >= 300 and h >= 200
    weights = json.loads((run.dir / "reinforce_weights.json").read_text())
    assert weights and any(v for row in weights.values() for v in row.values())
    # the policy used the weights: iteration 0 (all weights 0) and iteration 2 roll out differently
    rows = run.jsonl("rollouts.jsonl")
    acts = {
        k: [
            tuple(c["call"]["name"] for c in r["trajectory"]["calls"])
            for r in rows
            if r["iteration"] == k
        ]
        for k in (0, 2)
    }
    assert acts[0] != acts[2]


def _learn(envk: Any, seed: int) -> Path:
    sources = [
        a
        for name in ("shop.yaml", "travel.json", "bank.json")
        for a in ("--source", f"openapi:{CORPUS / name}")
    ]
    run = envk.run(
        "--plugins",
        "+reinforce",
        "--policy",
        "reinforce",
        "--iterations",
        "8",
        "-G",
        "4",
        "--seed",
        str(seed),
        # the trace term as a warm-up curriculum: with the outcome alone (τ 0, the default) this
        # toy learner's rewards are too sparse to learn from in 8 iterations
        "--set",
        "traceoutcome.tau=0.5",
        *sources,
        run_id=f"learn{seed}",
        source=None,
        timeout=540,
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    return run.dir


def test_the_learner_beats_the_random_policy_on_held_out_tasks(envk_factory) -> None:
    """Over 3 seeds, on held-out tasks (chain signatures never trained on), the trained policy's
    mean reward is ahead of the random policy's (iteration 0: all weights 0) by > 2 SE."""
    clis = {seed: envk_factory(f"learn{seed}") for seed in (1, 2, 3)}  # (mktemp is not thread-safe)
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda seed: _learn(clis[seed], seed), clis))
    result = compare(runs)
    print("held-out gain over 3 seeds:", json.dumps(result))
    assert result["tasks"] >= 20, result
    assert result["mean_gain"] > 2 * result["se"] > 0, result
    for d in runs:
        s = json.loads((d / "summary.json").read_text())
        assert s["failures"] == 0
        held = [it["mean_reward_heldout"] for it in s["iterations"]]
        train = [it["mean_reward_train"] for it in s["iterations"]]
        assert train[-1] > train[0], train
        assert len(held) == 8
        assert (d / "reward_curve.png").stat().st_size > 1000


def test_a_trainer_in_another_process_closes_the_loop(
    envk, nats_server: str, worker_process
) -> None:
    with worker_process("reinforce") as log:
        run = envk.run(
            "--nats-url",
            nats_server,
            "--plugins",
            "+reinforce",
            "--remote",
            "trainer:reinforce-learner",
            "--policy",
            "reinforce",
            "--iterations",
            "3",
            "-G",
            "2",
            run_id="remote",
        )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert run.config["remote"] == ["trainer:reinforce-learner"]
    assert "reinforce-learner" in run.config["components"]["trainer"]
    s = run.summary
    assert s["failures"] == 0 and len(s["iterations"]) == 3
    assert all(it["updates"].get("reinforce-learner") for it in s["iterations"])
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    # only the worker learned (the run's own process does not serve the remote trainer)
    assert [e["iteration"] for e in lines if e["event"] == "reinforce update"] == [0, 1, 2]
    assert "reinforce update" not in run.proc.stderr
    assert any(
        e["event"] == "run finished; its state in this worker was dropped" and e["run"] == "remote"
        for e in lines
    )
    assert (run.dir / "reward_curve.png").exists()


def test_bad_iteration_and_remote_flags_are_usage_errors(envk) -> None:
    proc = envk("run", "--remote", "gpu-trainer", "--no-progress", timeout=60)
    assert (
        proc.returncode == 2
        and "--remote 'gpu-trainer'" in proc.stderr
        and "ROLE:COMPONENT" in proc.stderr
    )
    proc = envk(
        "run",
        "--plugins",
        "+reinforce",
        "--remote",
        "trainer:reinforce",
        "--no-progress",
        timeout=60,
    )
    assert proc.returncode == 2 and "'reinforce' is a policy, not a trainer" in proc.stderr
    proc = envk("run", "--iterations", "0", "--no-progress", timeout=60)
    assert (
        proc.returncode == 2
        and "iterations, rollouts_per_task and gate_solver_k must be at least 1" in proc.stderr
    )


def test_a_remote_component_nobody_serves_is_named_and_the_wait_is_bounded(envk) -> None:
    run = envk.run(
        "--remote",
        "trainer:ghost",
        "--set",
        "chains.tasks_per_env=2",
        "--set",
        "ghost.anything=1",
        "--timeout",
        "15",
        run_id="ghost",
        env={"ENVKERNEL_STALL_SECONDS": "3"},
    )
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    assert (
        "no worker has served this remote component" in run.proc.stderr
        and "ghost" in run.proc.stderr
    )
    # the stall watchdog says what the run waits for
    assert "the run has made no progress" in run.proc.stderr
    assert "group.scored (no report yet from trainer ghost)" in run.proc.stderr
    assert run.summary["tasks"] > 0  # what was produced is kept


def test_misbehaving_trainer_updates_fail_clearly_and_the_loop_goes_on(
    envk, thirdparty_site: Path
) -> None:
    run = envk.run(
        "--plugins",
        "+reinforce,+badtrainer",
        "--policy",
        "reinforce",
        "--iterations",
        "4",
        "-G",
        "2",
        run_id="badupdates",
        env=_pp(thirdparty_site),
    )
    assert run.proc.returncode == 1, run.proc.stderr[-3000:]  # finished, with failures
    s = run.summary
    assert [it["iteration"] for it in s["iterations"]] == [0, 1, 2, 3]
    fails = run.jsonl("failures.jsonl")
    by = {(f["plugin"], f["event_kind"], f["error_type"]) for f in fails}
    # iteration 0: update raised; iteration 2: update returned a str
    assert ("badtrainer", "iteration.ended", "RuntimeError") in by
    assert ("badtrainer", "iteration.ended", "PluginContractError") in by
    contract = next(f for f in fails if f["error_type"] == "PluginContractError")
    assert "expected PolicyUpdate or None" in contract["message"]
    # iteration 1: badtrainer's update (chosen: first by name) is refused by the policy, so every
    # rollout of iteration 2 fails with the same clear error, and its groups close as failed
    refused = [
        f for f in fails if f["plugin"] == "reinforce" and f["event_kind"] == "rollout.requested"
    ]
    assert len(refused) == 2 * s["tasks"]
    assert all(
        f["error_type"] == "UpdateRefused"
        and f["classification"] == "update_refused"
        and "could not apply policy update" in f["message"]
        and "reinforce-weights/1" in f["message"]
        for f in refused
    )
    its = {it["iteration"]: it for it in s["iterations"]}
    assert its[2]["rollouts"] == 0 and its[2]["groups"] == s["tasks"]
    # iteration 3 rolls out again, with the learner's update (badtrainer returned nothing)
    assert its[3]["rollouts"] == 2 * s["tasks"] and its[1]["rollouts"] == 2 * s["tasks"]
    events = _events(envk, run.dir)
    upd = {
        (e["iteration"], e["trainer"]): e["ref"] for e in events if e["type"] == "policy.updated.v1"
    }
    req3 = {
        e["update"] for e in events if e["type"] == "rollout.requested.v1" and e["iteration"] == 3
    }
    assert req3 == {upd[(2, "reinforce-learner")]}
    req1 = {
        e["update"] for e in events if e["type"] == "rollout.requested.v1" and e["iteration"] == 1
    }
    assert req1 == {upd[(0, "reinforce-learner")]}


def test_an_update_for_a_policy_without_apply_update_is_ignored_with_a_warning(
    envk, thirdparty_site: Path
) -> None:
    run = envk.run(
        "--plugins",
        "+badtrainer",
        "--set",
        "badtrainer.mode=plain",
        "--iterations",
        "2",
        run_id="noapply",
        env=_pp(thirdparty_site),
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["mean_reward"] == 1.0 and s["failures"] == 0
    assert s["iterations"][0]["updates"]["badtrainer"]["policy"] == "reference"
    assert "this policy takes no updates" in run.proc.stderr


def test_iteration_events_decode() -> None:
    from envkernel_schemas import (
        IterationEnded,
        PolicyUpdate,
        PolicyUpdated,
        RolloutRequested,
        decode,
        encode,
    )

    ev = IterationEnded(run="r", id="x", iteration=3, groups=5, mean_reward=0.5, last=True)
    assert decode(encode(ev)) == ev
    assert PolicyUpdated.kind == "policy.updated" and IterationEnded.kind == "iteration.ended"
    assert "update" in RolloutRequested.__struct_fields__
    assert PolicyUpdate(data=b"\x00\x01").data == b"\x00\x01"


def test_the_update_carried_forward_is_the_last_one_the_policy_did_not_refuse(
    tmp_path: Path,
) -> None:
    from envkernel.config import RunConfig
    from envkernel.coordinator import Coordinator
    from envkernel.recorder import Recorder
    from envkernel_schemas import PolicyUpdated

    coord = Coordinator(
        None, RunConfig(run_id="r", policy="p"), Recorder(tmp_path), lambda kind: ""
    )  # type: ignore[arg-type]

    def upd(iteration: int, trainer: str, policy: str = "p") -> PolicyUpdated:
        return PolicyUpdated(
            run="r",
            id=f"{iteration}{trainer}",
            iteration=iteration,
            trainer=trainer,
            policy=policy,
            ref=f"update/r/{iteration}/{trainer}",
        )

    coord.updates = {
        0: {"t": upd(0, "t")},
        1: {"t": upd(1, "t")},
        2: {},
        3: {"other": upd(3, "other", policy="q")},
    }
    assert coord._update_for(0) == "update/r/0/t"
    assert (
        coord._update_for(2) == "update/r/1/t"
    )  # no update after iteration 2: keep the last good one
    coord.refused.add("update/r/1/t")
    assert coord._update_for(2) == "update/r/0/t"  # a refused update is never carried forward
    assert coord._update_for(3) == "update/r/0/t"  # an update for another policy is not used
    coord.updates[4] = {"b": upd(4, "b"), "a": upd(4, "a")}
    assert coord._update_for(4) == "update/r/4/a"  # several trainers: the first by name
