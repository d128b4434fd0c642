"""A restore brings back env.py's own module state, not only the database: a tool that keeps state
in a global, a class attribute or a closure (as LLM-written code often does) must not leak it from
one episode of a reused sandbox into the next. Runs the real executor as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec

from envkernel_process import executor_path
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

SOURCE = """
import itertools, random, threading, time, uuid

DRAWN = [random.random(), time.time(), str(uuid.uuid4())]   # module-level draws
LOCK = threading.Lock()          # cannot be deep-copied, holds no episode state

NOTES = []                      # a global list
_next = itertools.count(1)      # a global iterator

class Tally:
    hits = 0                    # a class attribute

def _make():
    seen = {"n": 0}             # a closure
    def bump(env):
        seen["n"] += 1
        return seen["n"]
    return bump

bump = _make()

def add_note(env, text):
    NOTES.append(text)
    Tally.hits += 1
    return {"notes": list(NOTES), "id": next(_next), "hits": Tally.hits}

class Opaque:
    def __deepcopy__(self, memo):
        raise TypeError("cannot copy me")

HANDLE = None

def drawn(env):
    return DRAWN

def grab(env):
    global HANDLE
    HANDLE = Opaque()
    return "held"
"""


def _env() -> EnvSpec:
    return EnvSpec(
        id="globals-v1",
        name="globals",
        tools=[ToolSpec(name=n, mutates=True) for n in ("add_note", "bump", "grab", "drawn")],
        behaviour=CodeBehaviour(source=SOURCE),
        seed_sql="CREATE TABLE t (x INTEGER);",
    )


def _run(requests: list[dict]) -> list[dict]:
    lines = [msgspec.json.encode({"op": "load", "env": _env(), "seed": 0}).decode()] + [
        json.dumps(r) for r in requests
    ]
    proc = subprocess.run(
        [sys.executable, "-S", "-P", executor_path()],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    out = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(out) == len(lines), proc.stderr.decode()
    assert out[0]["ok"], out[0]
    return out[1:]


def call(tool: str, **args: object) -> dict:
    return {"op": "call", "tool": tool, "arguments": args}


def test_restore_to_a_fresh_snapshot_resets_globals_class_attributes_and_closures() -> None:
    out = _run(
        [
            {"op": "snapshot"},
            call("add_note", text="first"),
            call("bump"),
            call("bump"),
            {"op": "restore", "snapshot": "s1"},
            call("add_note", text="second"),
            call("bump"),
        ]
    )
    assert out[1]["value"] == {"notes": ["first"], "id": 1, "hits": 1}
    assert out[3]["value"] == 2
    assert out[4]["ok"], out[4]
    # the second episode sees nothing of the first: not the note, not the iterator's position, not
    # the counters
    assert out[5]["value"] == {"notes": ["second"], "id": 1, "hits": 1}
    assert out[6]["value"] == 1


def test_restore_to_a_later_snapshot_brings_back_the_globals_it_had() -> None:
    # (LOCK, which cannot be copied and holds no episode state, is kept as loaded: it does not fail
    # the restore)
    out = _run(
        [
            call("add_note", text="kept"),
            {"op": "snapshot"},
            call("add_note", text="dropped"),
            {"op": "restore", "snapshot": "s1"},
            call("add_note", text="after"),
        ]
    )
    assert out[2]["value"]["notes"] == ["kept", "dropped"]
    assert out[3]["ok"], out[3]
    assert out[4]["value"]["notes"] == ["kept", "after"]


def test_globals_that_cannot_be_copied_fail_the_restore_clearly_and_the_sandbox_still_works() -> (
    None
):
    out = _run(
        [
            call("grab"),
            {"op": "snapshot"},
            {"op": "restore", "snapshot": "s1"},
            call("add_note", text="still here"),
            {"op": "restore", "snapshot": "s1"},
        ]
    )
    assert out[1]["ok"]
    err = out[2]
    assert not err["ok"] and err["error"]["code"] == "restore_failed"
    assert (
        "could not be copied" in err["error"]["message"]
        and "open a new sandbox" in err["error"]["message"]
    )
    assert out[3]["ok"] and out[3]["value"]["notes"] == ["still here"]


def test_module_level_draws_are_the_same_after_a_restore_as_at_load() -> None:
    out = _run(
        [
            call("drawn"),
            {"op": "snapshot"},
            call("add_note", text="x"),
            {"op": "restore", "snapshot": "s1"},
            call("drawn"),
        ]
    )
    assert out[3]["ok"], out[3]
    assert (
        out[4]["value"] == out[0]["value"]
    )  # random(), time() and uuid4() at import give what they gave at load
