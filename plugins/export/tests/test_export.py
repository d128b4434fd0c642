"""Unit tests of the SFT and RL exporters: row building, dedupe, crash safety, parquet round
trip."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
import pytest

from envkernel_export import Rl, RlSettings, Sft, SftSettings, register_trainers
from envkernel_export.rows import (
    RL_SCHEMA,
    fallback_tool_defs,
    rl_row,
    rl_table,
    sft_row,
    tool_defs,
)
from envkernel_kit.sink import JsonlSink
from envkernel_kit.testing import FakeContext
from envkernel_schemas import (
    CodeBehaviour,
    EnvSpec,
    GroupScored,
    Outcome,
    Reward,
    ScoredRollout,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
)

TOOLS = [
    ToolSpec(
        name="find_customer",
        description="Find a customer.",
        parameters={
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        },
    ),
    ToolSpec(
        name="cancel_order",
        description="Cancel.",
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "integer"}},
            "required": ["order_id"],
        },
        mutates=True,
    ),
    ToolSpec(
        name="get_product",
        description="Get.",
        parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}},
    ),
]
ENV = EnvSpec(id="shop", name="Shop", tools=TOOLS, behaviour=CodeBehaviour(source=""))


def _task(tid: str = "t1", split: str = "train", mutates: bool = True) -> Task:
    outcome = (
        Outcome(
            mutates=True,
            expected_state={"orders": [{"status": "cancelled", "total": 59.0}]},
            initial_state={"orders": [{"status": "pending", "total": 59.0}]},
        )
        if mutates
        else Outcome(mutates=False, answer_facts=["Ann Lee"])
    )
    return Task(
        id=tid,
        env_id="shop",
        request="Cancel my pending order.",
        calls=[
            ToolCall(name="find_customer", arguments={"email": "a@b.c"}),
            ToolCall(name="cancel_order", arguments={"order_id": 1}),
        ],
        outcome=outcome,
        difficulty=2 / 6,
        split=split,  # type: ignore[arg-type]
        signature="find_customer>cancel_order",
    )


def _rollout(policy: str, index: int, score: float) -> ScoredRollout:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": f"{policy}-{index}"},
    ]
    return ScoredRollout(
        trajectory=Trajectory(
            task_id="t1", policy=policy, index=index, messages=msgs, final_answer="x"
        ),
        reward=Reward(score=score),
    )


def _group(
    gid: str = "g1", task: Task | None = None, scores: tuple[float, ...] = (1.0, 0.5, 1.0)
) -> GroupScored:
    return GroupScored(
        run="r",
        id=gid,
        task=task or _task(),
        rollouts=[_rollout("model", i, s) for i, s in enumerate(scores)],
    )


class Ctx(FakeContext):
    """The kit's run-like context; ``env=False``: no environment can be fetched."""

    def __init__(self, out_dir: Path, env: bool = True) -> None:
        super().__init__(component="export", out_dir=out_dir, envs={"shop": ENV} if env else {})
        self.env_calls = 0

    async def env(self, env_id: str) -> EnvSpec:
        """Count the fetch, then fetch."""
        self.env_calls += 1
        assert env_id == "shop"
        return await super().env(env_id)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


# -- rows -----------------------------------------------------------------------------------


def test_tool_defs() -> None:
    defs = tool_defs(TOOLS)
    assert defs[0] == {
        "type": "function",
        "function": {
            "name": "find_customer",
            "description": "Find a customer.",
            "parameters": TOOLS[0].parameters,
        },
    }
    assert [d["function"]["name"] for d in tool_defs(TOOLS, ["cancel_order"])] == ["cancel_order"]
    assert [d["function"]["name"] for d in fallback_tool_defs(_task())] == [
        "find_customer",
        "cancel_order",
    ]


def test_sft_row_shape() -> None:
    g = _group()
    row = sft_row(g, g.rollouts[2], tool_defs(TOOLS))
    assert row["messages"] == g.rollouts[2].trajectory.messages
    assert row["tools"][1]["function"]["name"] == "cancel_order"
    assert row["metadata"]["id"] == "g1/2" and row["metadata"]["score"] == 1.0
    assert "metadata" not in sft_row(g, g.rollouts[2], [], metadata=False)


def test_rl_row_shape() -> None:
    row = rl_row(_task(), tool_defs(TOOLS))
    assert row["data_source"] == "envkernel/shop"
    assert row["prompt"][1] == {"role": "user", "content": "Cancel my pending order."}
    assert row["prompt"][0]["role"] == "system"
    assert row["agent_name"] == "tool_agent" and row["ability"] == "tool-use"
    gt = row["reward_model"]["ground_truth"]
    assert row["reward_model"]["style"] == "rule"
    assert gt["calls"][1] == {"name": "cancel_order", "arguments": '{"order_id":1}'}
    assert gt["mutates"] is True and gt["answer_facts"] == [] and gt["masked_arguments"] == []
    info = row["extra_info"]
    assert (
        info["task_id"] == "t1"
        and info["split"] == "train"
        and info["signature"] == "find_customer>cancel_order"
    )
    assert json.loads(info["expected_state"]) == {
        "orders": [{"status": "cancelled", "total": 59.0}]
    }
    assert json.loads(info["initial_state"])["orders"][0]["status"] == "pending"
    assert json.loads(info["tools"])[0]["function"]["name"] == "find_customer"


def test_parquet_round_trip(tmp_path: Path) -> None:
    rows = [
        rl_row(_task("t1"), tool_defs(TOOLS)),
        rl_row(_task("t2", "heldout", mutates=False), tool_defs(TOOLS)),
    ]
    pq.write_table(rl_table(rows), tmp_path / "x.parquet")
    back = pq.read_table(tmp_path / "x.parquet")
    assert back.schema.equals(RL_SCHEMA)
    assert back.to_pylist() == rows
    empty = rl_table([])
    assert empty.num_rows == 0 and empty.schema.equals(RL_SCHEMA)


# -- the sink -------------------------------------------------------------------------------


def test_sink_dedupes_across_instances_and_cuts_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    s = JsonlSink(p, lambda r: r.get("k"))
    assert s.write({"k": "a", "v": 1}) and not s.write({"k": "a", "v": 2})
    assert s.write({"v": 3}) and not s.write({"v": 3})  # keyless rows dedupe by content
    s.close()
    with open(p, "ab") as fh:
        fh.write(b'{"k":"b","v":')  # a crash mid-write
    s2 = JsonlSink(p, lambda r: r.get("k"))
    assert "a" in s2 and not s2.write({"k": "a"})
    assert s2.write({"k": "b", "v": 4})
    s2.close()
    assert _lines(p) == [{"k": "a", "v": 1}, {"v": 3}, {"k": "b", "v": 4}]


def test_sink_flushes_each_line(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    s = JsonlSink(p, lambda r: r.get("k"))
    s.write({"k": "a"})
    assert p.read_text() == '{"k":"a"}\n'  # visible before close
    s.close()


# -- the components -----------------------------------------------------------------------


def test_sft_exporter(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    sft = Sft()

    async def go() -> None:
        await sft.consume(_group("g1"), ctx)
        await sft.consume(_group("g1"), ctx)  # redelivered
        await sft.consume(_group("g2", _task("t2", split="heldout")), ctx)  # held out: not for SFT
        await sft.consume(_group("g3", _task("t3"), scores=(0.0,)), ctx)
        await sft.finish(ctx)

    asyncio.run(go())
    lines = _lines(tmp_path / "sft.jsonl")
    assert [x["metadata"]["id"] for x in lines] == ["g1/0", "g1/2"]
    tools = lines[0][
        "tools"
    ]  # parameters as JSON strings by default (tools_format="parameters_json")
    assert tools[0]["function"]["name"] == "find_customer" and len(tools) == 3
    assert json.loads(tools[0]["function"]["parameters"]) == TOOLS[0].parameters
    assert ctx.env_calls == 1  # cached

    # a new process after a crash: the redelivered group is not written again
    async def again() -> None:
        sft2 = Sft(SftSettings(min_reward=0.5))
        await sft2.consume(_group("g1"), ctx)
        await sft2.finish(ctx)

    asyncio.run(again())
    assert [x["metadata"]["id"] for x in _lines(tmp_path / "sft.jsonl")] == ["g1/0", "g1/2", "g1/1"]


def test_sft_policy_filter_and_fallback_tools(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path, env=False)
    sft = Sft(SftSettings(policies=["reference"]))
    g = GroupScored(
        run="r",
        id="g",
        task=_task(),
        rollouts=[_rollout("reference", 0, 1.0), _rollout("model", 1, 1.0)],
    )
    asyncio.run(sft.consume(g, ctx))
    lines = _lines(tmp_path / "sft.jsonl")
    assert len(lines) == 1 and lines[0]["metadata"]["policy"] == "reference"
    assert [t["function"]["name"] for t in lines[0]["tools"]] == ["find_customer", "cancel_order"]


def test_sft_tools_format_openai_writes_the_list(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    asyncio.run(Sft(SftSettings(tools_format="openai")).consume(_group("g1"), ctx))
    assert _lines(tmp_path / "sft.jsonl")[0]["tools"] == tool_defs(TOOLS)
    asyncio.run(
        Sft(SftSettings(tools_format="json", filename="j.jsonl")).consume(_group("g1"), ctx)
    )
    assert json.loads(_lines(tmp_path / "j.jsonl")[0]["tools"]) == tool_defs(TOOLS)


def test_sft_messages_are_normalised() -> None:
    msgs = [
        {"role": "user", "content": "u", "extra": 1},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": [1, "x"]}}}],
        },
        {"role": "tool", "tool_call_id": "c", "name": "f", "content": {"ok": True}},
    ]
    g = GroupScored(
        run="r",
        id="g",
        task=_task(),
        rollouts=[
            ScoredRollout(
                trajectory=Trajectory(task_id="t1", policy="p", messages=msgs),
                reward=Reward(score=1.0),
            )
        ],
    )
    out = sft_row(g, g.rollouts[0], [])["messages"]
    assert out[0] == {"role": "user", "content": "u"}
    assert out[1]["content"] == "" and out[1]["tool_calls"][0] == {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":[1,"x"]}'},
    }
    assert out[2] == {"role": "tool", "content": '{"ok":true}', "tool_call_id": "c", "name": "f"}


def test_rl_exporter_and_parquet(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    rl = Rl()

    async def go() -> None:
        await rl.consume(_group("g1", _task("t1")), ctx)
        await rl.consume(_group("g1", _task("t1")), ctx)  # redelivered
        await rl.consume(_group("g9", _task("t1")), ctx)  # same task, later iteration
        await rl.consume(_group("g2", _task("t2", "heldout", mutates=False)), ctx)
        await rl.finish(ctx)

    asyncio.run(go())
    lines = _lines(tmp_path / "rl.jsonl")
    assert [x["extra_info"]["task_id"] for x in lines] == ["t1", "t2"]
    table = pq.read_table(tmp_path / "rl.parquet")
    assert table.num_rows == 2 and table.to_pylist() == lines
    assert not (tmp_path / "rl.parquet.tmp").exists()

    # restart: rows from before are kept, the parquet holds all of them
    async def again() -> None:
        rl2 = Rl()
        await rl2.consume(_group("g1", _task("t1")), ctx)
        await rl2.consume(_group("g3", _task("t3")), ctx)
        await rl2.finish(ctx)

    asyncio.run(again())
    assert [
        r["extra_info"]["task_id"] for r in pq.read_table(tmp_path / "rl.parquet").to_pylist()
    ] == ["t1", "t2", "t3"]


def test_rl_parquet_is_written_in_batches_with_every_row_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``finish`` reads ``rl.jsonl`` a batch at a time (memory stays flat at 20,000 tasks): the file
    holds one row group per batch and the same table as all the rows at once."""
    import envkernel_export

    monkeypatch.setattr(envkernel_export, "PARQUET_BATCH", 2)
    ctx = Ctx(tmp_path)
    rl = Rl()

    async def go() -> None:
        for i in range(5):
            await rl.consume(_group(f"g{i}", _task(f"t{i}")), ctx)
        await rl.finish(ctx)

    asyncio.run(go())
    lines = _lines(tmp_path / "rl.jsonl")
    assert pq.ParquetFile(tmp_path / "rl.parquet").num_row_groups == 3
    assert pq.read_table(tmp_path / "rl.parquet").equals(rl_table(lines)) and len(lines) == 5


def test_rl_finish_without_rows_writes_empty_parquet(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    asyncio.run(Rl().finish(ctx))
    t = pq.read_table(tmp_path / "rl.parquet")
    assert t.num_rows == 0 and t.schema.equals(RL_SCHEMA)


def test_settings_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"min_rewards": 1}, SftSettings)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"parquett": ""}, RlSettings)
    got: dict[str, object] = {}
    register_trainers(lambda n, f: got.__setitem__(n, f))
    assert got == {"sft": Sft, "rl": Rl}


def test_an_object_store_that_does_not_answer_gives_the_group_back_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """ctx.env failing as infrastructure (the server restarting) is raised, so the kernel redelivers
    the group; no row is written with tools guessed from the reference calls."""
    from envkernel.errors import SandboxError

    class Down(Ctx):
        async def env(self, env_id: str) -> EnvSpec:
            raise SandboxError(
                f"environment {env_id!r} of run r is not in the object store: TimeoutError"
            )

    ctx = Down(tmp_path)
    for exporter in (Sft(), Rl()):
        with pytest.raises(SandboxError):
            asyncio.run(exporter.consume(_group("g1"), ctx))
    assert not (tmp_path / "sft.jsonl").exists() and not (tmp_path / "rl.jsonl").exists()
    asyncio.run(
        Rl().consume(_group("g1"), Ctx(tmp_path))
    )  # once it answers, the row is the real one
    assert _lines(tmp_path / "rl.jsonl")[0]["extra_info"]
