"""A failed call has no effect, now that the executor copies only what a call may have changed: the
random generators' states only when they moved (``_TrackedRandom``), the working folder without a
scan while it stays the empty folder it was (``_call_capture``). Runs the real executor as a
subprocess, plus the folder check in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import msgspec

from envkernel_process import executor_path
from envkernel_runtime import executor
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

SOURCE = """
import os, random, time, uuid

def draws(env):
    return [env.rng.random(), random.random(), str(uuid.uuid4()), env.rng.gauss(0, 1), \
random.gauss(0, 1)]

def draw_then_fail(env, which):
    if which == "rng":
        env.rng.random()
    elif which == "global":
        random.randint(1, 10**9)
    elif which == "uuid":
        uuid.uuid4()
    elif which == "gauss":      # the first gauss() keeps a second value (gauss_next) for the next \
one
        env.rng.gauss(0, 1)
        random.gauss(0, 1)
    elif which == "shuffle":
        random.shuffle(list(range(50)))
        env.rng.choices(range(9), k=5)
    elif which == "bytes":
        random.randbytes(16)
        env.rng.getrandbits(64)
    elif which == "seed":
        random.seed(99)
        env.rng.seed(99)
    raise env.error("refused", "after drawing")

def noop(env):
    return "ok"

def pause(env, s):
    time.sleep(s)
    return "ok"

def write_then_fail(env, name):
    with open(os.path.join(env.workspace, name), "w") as f:
        f.write("left behind?")
    os.mkdir(os.path.join(env.workspace, name + ".d"))
    raise env.error("refused", "after writing")

def write(env, name):
    with open(os.path.join(env.workspace, name), "w") as f:
        f.write("kept")
    return "written"

def remove_then_fail(env, name):
    os.unlink(os.path.join(env.workspace, name))
    raise env.error("refused", "after removing")

def listing(env):
    return sorted(os.listdir(env.workspace))
"""

TOOLS = [
    "draws",
    "draw_then_fail",
    "noop",
    "pause",
    "write_then_fail",
    "write",
    "remove_then_fail",
    "listing",
]
KINDS = ["rng", "global", "uuid", "gauss", "shuffle", "bytes", "seed"]


def _load(seed: int = 3) -> str:
    env = EnvSpec(
        id="undo-v1",
        name="undo",
        tools=[ToolSpec(name=n) for n in TOOLS],
        behaviour=CodeBehaviour(source=SOURCE),
    )
    return msgspec.json.encode({"op": "load", "env": env, "seed": seed}).decode()


def _call(tool: str, **arguments) -> str:
    return json.dumps({"op": "call", "tool": tool, "arguments": arguments})


def _run(lines: list[str], *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-S", "-P", executor_path(), *args],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    out = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(out) == len(lines), proc.stderr.decode()
    return out


def test_a_failed_call_puts_back_every_generator_it_drew_from_and_only_those_moved() -> None:
    # the same draws with and without failed calls in between (before any draw, and after draws that
    # succeeded, so the kept states are not only the load's), for each way of drawing
    plain = _run([_load(), _call("draws"), _call("noop"), _call("draws"), _call("draws")])
    for kind in KINDS:
        failing = _run(
            [
                _load(),
                _call("draw_then_fail", which=kind),
                _call("draws"),
                _call("noop"),
                _call("draw_then_fail", which=kind),
                _call("draws"),
                _call("draw_then_fail", which=kind),
                _call("draws"),
            ]
        )
        assert [r["error"]["code"] for r in (failing[1], failing[4], failing[6])] == [
            "refused"
        ] * 3, failing
        assert [failing[2], failing[5], failing[7]] == [plain[1], plain[3], plain[4]], kind
    # and the draws do move between calls (the check above would pass on constants otherwise)
    assert plain[1]["value"] != plain[3]["value"] != plain[4]["value"]


def test_a_restore_brings_the_generators_back_whether_or_not_they_moved(tmp_path) -> None:
    snap, restore = json.dumps({"op": "snapshot"}), json.dumps({"op": "restore", "snapshot": "s1"})
    out = _run(
        [
            _load(),
            _call("draws"),
            snap,
            _call("draws"),
            restore,
            _call("draws"),
            restore,
            _call("noop"),
            restore,
            _call("draws"),
            _call("draw_then_fail", which="gauss"),
            restore,
            _call("draws"),
        ]
    )
    assert out[3]["value"] == out[5]["value"] == out[9]["value"] == out[12]["value"]
    assert out[1]["value"] != out[3]["value"]


def test_a_failed_call_undoes_its_writes_to_an_empty_working_folder_after_it_was_seen_empty(
    tmp_path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    out = _run(
        [
            _load(),
            _call("noop"),
            _call("pause", s=0.25),
            _call("noop"),
            _call("noop"),  # found empty, long enough ago to trust
            _call("write_then_fail", name="a"),
            _call("listing"),
            _call("noop"),
            _call("write", name="b"),
            _call("listing"),
            _call("pause", s=0.25),
            _call("noop"),
            _call("remove_then_fail", name="b"),
            _call("listing"),
            _call("write_then_fail", name="c"),
            _call("listing"),
        ],
        "--workdir",
        str(work),
    )
    assert out[5]["error"]["code"] == "refused"
    assert out[6]["value"] == []
    assert out[9]["value"] == ["b"]
    assert out[12]["error"]["code"] == "refused" and out[13]["value"] == ["b"]
    assert out[14]["error"]["code"] == "refused" and out[15]["value"] == ["b"]
    assert sorted(os.listdir(work)) == ["b"]


def test_the_empty_folder_is_trusted_only_while_unchanged_and_not_within_the_racy_window(
    tmp_path,
) -> None:
    root = str(tmp_path)
    executor._EMPTY_FOLDER[0] = None
    assert executor._call_capture(root) == {}
    assert executor._EMPTY_FOLDER[0] is None  # its ctime is too recent to trust yet
    deadline = time.monotonic() + 30
    while executor._EMPTY_FOLDER[0] is None:  # until its ctime is older than the racy window
        assert time.monotonic() < deadline
        time.sleep(0.02)
        executor._call_capture(root)
    (tmp_path / "new").write_text("x")
    assert set(executor._call_capture(root)) == {"new"}  # seen at once: the folder's ctime changed
    assert executor._EMPTY_FOLDER[0] is None
    (tmp_path / "new").unlink()
    assert executor._call_capture(root) == {}
    assert executor._call_capture("") == {}
