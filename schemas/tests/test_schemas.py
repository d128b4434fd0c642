"""envkernel-schemas on its own: the event union, its codec, row comparison (no server)."""

from __future__ import annotations

import re

import msgspec
import pytest

from envkernel_schemas import (
    EVENT_TYPES,
    KINDS,
    CallRecord,
    DecodeError,
    Outcome,
    RunStarted,
    Task,
    TaskProposed,
    ToolCall,
    ToolResult,
    Trajectory,
    decode,
    encode,
    event_id,
    from_json,
    is_token,
    json_schemas,
    to_json,
)
from envkernel_schemas.rows import canon, columns, row_key


def _task() -> Task:
    return Task(
        id="t1",
        env_id="bank",
        request="How many accounts are there?",
        calls=[ToolCall(name="list_accounts", arguments={})],
        outcome=Outcome(mutates=False, answer_facts=["3"]),
    )


def test_every_event_type_is_tagged_kind_dot_version_and_kinds_are_unique() -> None:
    tags = [str(t.__struct_config__.tag) for t in EVENT_TYPES]
    assert all(re.fullmatch(r"[a-z]+(\.[a-z]+)+\.v\d+", tag) for tag in tags), tags
    assert len(set(tags)) == len(tags)
    assert set(KINDS) == {t.kind for t in EVENT_TYPES}
    assert all(t.__struct_config__.frozen for t in EVENT_TYPES)


def test_an_event_round_trips_through_msgpack_and_json() -> None:
    ev = TaskProposed(run="r1", id=event_id("p", "chains", 0), task=_task())
    assert decode(encode(ev)) == ev
    assert from_json(to_json(ev)) == ev
    assert decode(encode(ev)).kind == "task.proposed"


def test_an_event_written_before_a_field_was_added_still_decodes() -> None:
    # The envelope's optional fields (parent, iteration, time) are absent from an old event.
    old = msgspec.msgpack.encode({"type": "run.started.v1", "run": "r1", "id": "x", "config": {}})
    ev = decode(old)
    assert isinstance(ev, RunStarted) and ev.parent == "" and ev.iteration == 0


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00garbage", msgspec.msgpack.encode({"type": "no.such.v9", "run": "r", "id": "i"})],
)
def test_bytes_that_are_not_an_event_raise_decode_error_with_the_reason(data: bytes) -> None:
    with pytest.raises(DecodeError, match="not an envkernel event"):
        decode(data)


def test_a_wrong_field_type_names_the_field() -> None:
    bad = msgspec.msgpack.encode({"type": "run.started.v1", "run": 5, "id": "x", "config": {}})
    with pytest.raises(DecodeError, match=r"\$\.run"):
        decode(bad)


def test_events_are_immutable() -> None:
    ev = RunStarted(run="r1", id="x", config={})
    with pytest.raises(AttributeError):
        ev.run = "r2"  # type: ignore[misc]


def test_event_ids_are_deterministic_and_tokens_are_checked() -> None:
    assert event_id("a", "b", 1) == event_id("a", "b", 1) != event_id("a", "b", 2)
    assert len(event_id("a", "b", 1)) == 24
    assert is_token("run-1_x")
    assert not any(is_token(t) for t in ("a.b", "", "x" * 65))


def test_json_schemas_name_every_event() -> None:
    schemas = json_schemas()
    assert len(schemas["events"]) == len(EVENT_TYPES)
    assert "Task" in schemas["$defs"]


def test_a_trajectory_keeps_its_calls() -> None:
    rec = CallRecord(call=ToolCall(name="f", arguments={"a": 1}), result=ToolResult(ok=True))
    traj = Trajectory(task_id="t1", policy="p", calls=[rec], final_answer="3")
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(traj), type=Trajectory) == traj


def test_row_keys_compare_canonical_values() -> None:
    assert canon(2.0) == 2 and canon(0.1 + 0.2) == 0.3
    assert row_key({"a": 2.0}, ["a"]) == row_key({"a": 2}, ["a"])
    assert row_key({"a": True}, ["a"]) != row_key({"a": 1}, ["a"])  # a boolean is not a number
    assert row_key({"a": {"x": 1, "y": 2}}, ["a"]) == row_key({"a": {"y": 2, "x": 1}}, ["a"])
    assert row_key({}, ["a"]) == row_key({"a": None}, ["a"])
    assert columns([], [{"a": 1}, {"b": 2, "a": 3}]) == ["a", "b"]
