"""End to end: ``envkernel run`` over the OpenAPI corpus with the ``chains`` sampler (and the
``walk`` baseline), every proposed task through the kernel's gate."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

pytest.importorskip("envkernel_process")
pytest.importorskip("envkernel_chains.walk")


@pytest.fixture(scope="module")
def corpus_run(envk_factory):  # type: ignore[no-untyped-def]
    envk = envk_factory("tasks-e2e")
    # +users: the simulated user reveals what a task holds back, so the reference's rollouts are
    # conversations
    return envk.run(
        "--plugins",
        "+users",
        "--set",
        "chains.tasks_per_env=25",
        "--set",
        "chains.hidden_share=1.0",
        run_id="corpus",
        source="openapi",
        timeout=280,
    )


def test_every_proposed_task_passes_the_gate(corpus_run) -> None:  # type: ignore[no-untyped-def]
    run = corpus_run
    s = run.summary
    assert s["exit_code"] == 0 and s["failures"] == 0, run.proc.stderr[-3000:]
    assert s["envs_verified"] == 7
    # the reference always scores 1 and do-nothing 0; the gate's mutants reject the tasks whose
    # outcome (τ 0: the trace term is out of the reward) cannot tell a near miss from the
    # reference: a lookup whose rows an earlier call showed, a final "show me" lookup, a changed
    # filter whose rows hold the asked ones (about a quarter of the proposed tasks)
    assert s["tasks_proposed"] == 7 * 25 and s["tasks"] == s["tasks_proposed"] - s["tasks_rejected"]
    assert (
        set(s["rejected"]) <= {"task:mutant_survived"}
        and s["tasks_rejected"] <= 0.4 * s["tasks_proposed"]
    )
    for env_id, kinds in s["mutants"].items():  # the outcome alone kills them
        assert all(k["killed"] == k["outcome_killed"] for k in kinds.values()), env_id
    assert set(s["mutants"]) == {
        "bank",
        "calendar",
        "clinic",
        "files",
        "messaging",
        "shop",
        "travel",
    }
    assert s["mean_reward"] == 1.0
    # get_* tools whose only use is a lookup that adds nothing the outcome can require (the row
    # an earlier list or the change itself returned) are in rejected tasks only, and since the
    # sampler drops such re-reads before the gate (chains' rereads_change/rereads_row) they are in
    # no task: 0.74 of the tools on 25 tasks per environment
    assert s["tool_coverage"] >= 0.7
    assert len(s["chain_lengths"]) >= 5 and s["unique_chain_shapes"] >= 80


def test_tasks_have_difficulty_split_and_implicit_requests(corpus_run) -> None:  # type: ignore[no-untyped-def]
    run = corpus_run
    tasks = run.jsonl("tasks.jsonl")
    envs = {p.parent.name: json.loads(p.read_text()) for p in run.dir.glob("envs/*/env.json")}
    assert {t["split"] for t in tasks} == {"train", "heldout"}
    assert (
        all(0.0 <= t["difficulty"] <= 1.0 for t in tasks)
        and len({t["difficulty"] for t in tasks}) > 10
    )
    for t in tasks:
        assert t["sampler"] == "chains"
        names = [tool["name"] for tool in envs[t["env_id"]]["tools"]]
        assert not any(re.search(rf"\b{n}\b", t["request"]) for n in names)
        assert not re.search(r"\b[a-z]{3}_\d{4}\b", t["request"]), t[
            "request"
        ]  # no ids the agent can look up
    for env_id in envs:
        folder = run.dir / "envs" / env_id
        assert (folder / "graph.json").exists() and (folder / "graph.svg").exists()
        stats = json.loads((folder / "sampling.json").read_text())["chains"]
        assert stats["tasks"] == 25 and stats["phrasings"]


def test_multi_row_goals_change_exactly_the_rows_their_condition_picks(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """``cancel all my held bookings with more than 3 nights``: lookups, then one action per row the
    condition picks in the real data; the expected state changes those rows and no others."""
    tasks = corpus_run.jsonl("tasks.jsonl")
    batch = [
        t
        for t in tasks
        if t["outcome"]["mutates"]
        and len(t["calls"]) >= 3
        and t["calls"][-1]["name"] == t["calls"][-2]["name"]
        and re.search(r"\b(all|every|some of)\b", t["request"])
    ]
    declined = [  # a batch the domain policy turned into a refusal or a confirmation
        t
        for t in tasks
        if t["outcome"]["expects"]
        and len(t["outcome"]["declined"]) >= 3
        and t["outcome"]["declined"][-1]["name"] == t["outcome"]["declined"][-2]["name"]
    ]
    sampled = batch + declined
    assert len(sampled) >= 6 and len({t["env_id"] for t in sampled}) >= 4, [
        t["request"] for t in sampled
    ]
    for t in batch:
        act = t["calls"][-1]["name"]
        acts = [c for c in t["calls"] if c["name"] == act]
        assert 2 <= len(acts) <= 6
        keys = [next(iter(c["arguments"].values())) for c in acts]
        assert len(set(map(str, keys))) == len(keys)  # each row once
        for table, rows in t["outcome"][
            "initial_state"
        ].items():  # rows changed or gone: at most one per action
            after = Counter(
                json.dumps(r, sort_keys=True) for r in t["outcome"]["expected_state"][table]
            )
            gone = Counter(json.dumps(r, sort_keys=True) for r in rows) - after
            assert 1 <= sum(gone.values()) <= len(acts), t["request"]
        assert (
            t["outcome"]["answer"].startswith("Done: I ")
            and str(len(acts)) in t["outcome"]["answer"]
        )
        for h in t[
            "hidden"
        ]:  # a condition held back for the user to reveal is not in the opening words
            assert h.startswith("Only the ") and "some of" in t["request"]
    # conditions beyond the status: an owner (my, Kenji's, in the calendar "Work") or a threshold
    # (more than 3 nights)
    assert (
        sum(
            1
            for t in sampled
            if re.search(
                r"\b(my|in the|for the|(more|fewer|less) than|over|under|above|below)\b|'s ",
                t["request"] + " ".join(t["hidden"]),
            )
        )
        >= 3
    )


def test_held_back_conditions_are_revealed_by_the_user_in_rollouts_and_sft_rows(corpus_run) -> None:  # type: ignore[no-untyped-def]
    tasks = {t["id"]: t for t in corpus_run.jsonl("tasks.jsonl")}
    held = {i for i, t in tasks.items() if t["hidden"]}
    assert held, "no task holds a condition back"
    rollouts = [r for r in corpus_run.jsonl("rollouts.jsonl") if r["task_id"] in held]
    assert len(rollouts) == len(held)
    for r in rollouts:
        said = [m["content"] for m in r["trajectory"]["messages"] if m["role"] == "user"]
        assert said == [
            tasks[r["task_id"]]["request"],
            *tasks[r["task_id"]]["hidden"],
        ]  # the user revealed each in turn
        assert r["reward"]["score"] == 1.0
    sft = [
        row
        for row in corpus_run.jsonl("sft.jsonl")
        if sum(1 for m in row["messages"] if m["role"] == "user") > 1
    ]
    assert len(sft) == sum(
        1 for i in held if tasks[i]["split"] == "train"
    )  # (SFT rows are of train tasks only)
    # the SFT row carries the whole conversation: the question, the user's answer, then the calls
    declined = {t["outcome"]["answer"] for t in tasks.values() if t["outcome"]["expects"]}
    for row in sft:  # (a refusal or a confirmation answers without a call)
        roles = [m["role"] for m in row["messages"]]
        no_call = row["messages"][-1]["content"] in declined
        assert roles[:4] == ["system", "user", "assistant", "user"]
        assert "tool" in roles[4:] or no_call


def test_personas_have_a_role_and_a_motive(corpus_run) -> None:  # type: ignore[no-untyped-def]
    tasks = corpus_run.jsonl("tasks.jsonl")
    spoken = [t for t in tasks if t["persona"]]
    assert len(spoken) >= 10
    for t in spoken:
        p = t["persona"]
        assert p["role"] and p["motive"] and p["tone"], p
        # (empty for a persona who says who they are by other facts; held back: said when asked)
        assert p["name"] in t["request"] + " ".join(t["hidden"])
    assert (
        sum(1 for t in spoken if t["persona"]["role"] in t["request"] + " ".join(t["hidden"])) >= 5
    )
    assert len({t["persona"]["role"] for t in spoken}) >= 4


def test_planted_distractors_go_through_the_kernels_rollouts_gate_and_exports(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """Tasks with near-duplicates planted in their initial state: every rollout the kernel runs
    starts from the seed plus those rows (the reference still scores 1), the gate's distractor
    mutant acts on them and is killed, and the RL rows say what was planted."""
    run = corpus_run
    tasks = {t["id"]: t for t in run.jsonl("tasks.jsonl")}
    planted = [t for t in tasks.values() if t["planted"]]
    assert len(planted) >= 0.15 * len(tasks) and all(1 <= len(t["planted"]) <= 3 for t in planted)
    # the distractor mutant is killed by the outcome alone, or its task is rejected (a distractor
    # row in a final "show me" lookup changes no state)
    applied = sum(k["distractor"]["applied"] for k in run.summary["mutants"].values())
    killed = sum(k["distractor"]["outcome_killed"] for k in run.summary["mutants"].values())
    assert killed >= 0.8 * applied, (killed, applied)
    assert all(
        not any(r["task_id"] == t for t in tasks)
        for r in run.jsonl("rejected.jsonl")
        if "distractor" in r.get("detail", "")
    )
    checked = 0
    for r in run.jsonl("rollouts.jsonl"):
        t = tasks.get(r["task_id"])
        if t and t["planted"] and t["outcome"]["mutates"]:
            final = r["trajectory"]["final_state"]
            assert all(
                any(row[p["key"]] == p["row"][p["key"]] for row in final[p["table"]])
                for p in t["planted"]
            )
            assert r["reward"]["score"] == 1.0
            checked += 1
    assert checked
    rl = {
        row["extra_info"]["task_id"]: json.loads(row["extra_info"]["planted"])
        for row in run.jsonl("rl.jsonl")
    }
    assert all(rl[t["id"]] == t["planted"] for t in planted if t["id"] in rl) and any(
        t["id"] in rl for t in planted
    )


def test_the_walk_baseline_runs_through_the_gate(envk) -> None:  # type: ignore[no-untyped-def]
    run = envk.run(
        "--plugins",
        "+walk,-chains,-workspace",
        "--set",
        "walk.tasks_per_env=6",
        run_id="walk",
        source="openapi",
        timeout=280,
    )
    s = run.summary
    assert s["exit_code"] == 0 and s["plugins"]["sampler"] == ["walk"], run.proc.stderr[-3000:]
    assert s["tasks"] >= 12 and set(s["rejected"]) <= {
        "task:mutant_survived"
    }  # (a near miss the outcome cannot tell: random walks end in lookups that add nothing)
    assert all(t["sampler"] == "walk" for t in run.jsonl("tasks.jsonl"))
