"""The workspace environment kind in the real process runner: the claw tools, the diff state,
snapshot and restore of the tree, app tools over SQLite, and the check run in the sandbox."""

from __future__ import annotations

import pytest
import pytest_asyncio

from envkernel_kit.workspace import GIT_INIT, TABLE, claw_tools, workspace_env
from envkernel_process import ProcessRunner
from envkernel_schemas import ToolSpec

APP = """
def add_contact(env, name, email):
    env.db.execute("INSERT INTO contacts (name, email) VALUES (?, ?)", (name, email))
    return {"name": name, "email": email}


def count_contacts(env):
    return list(env.db.execute("SELECT COUNT(*) AS n FROM contacts"))[0]["n"]
"""

ENV = workspace_env(
    "kind-test",
    "kind test",
    files={
        "notes/todo.md": "# Todo\n- buy milk\n- call Ana\n",
        "data/ledger.csv": "id,amount\n1,10.00\n2,20.00\n",
        "README.md": "hello\n",
    },
    setup=[GIT_INIT],
    app_source=APP,
    seed_sql="CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT, email TEXT);",
    app_tools=[ToolSpec(name="add_contact", mutates=True), ToolSpec(name="count_contacts")],
)
CHECK_ENV_TOOLS = [
    *ENV.tools,
    ToolSpec(name="apply_final", mutates=True),
    ToolSpec(name="run_check", mutates=True),
]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sandbox():
    runner = ProcessRunner()
    sb = await runner.open(ENV, 0)
    seed = await sb.snapshot()
    yield sb, seed
    await runner.aclose()


async def call(sb, tool, **args):
    return await sb.call(tool, args)


@pytest.mark.asyncio(loop_scope="module")
async def test_tools_read_write_edit_patch_and_search(sandbox):
    sb, seed = sandbox
    await sb.restore(seed)
    r = await call(sb, "read", path="notes/todo.md", offset=2, limit=1)
    assert (
        r.ok
        and r.value["content"] == "- buy milk\n"
        and r.value["lines"] == 3
        and r.value["truncated"]
    )
    assert (await call(sb, "write", path="out/report.txt", content="total 30\n")).value[
        "created"
    ] is True
    e = await call(sb, "edit", path="notes/todo.md", old_string="- ", new_string="* ")
    assert not e.ok and e.error.code == "ambiguous"
    e = await call(
        sb, "edit", path="notes/todo.md", old_string="- ", new_string="* ", replace_all=True
    )
    assert e.ok and e.value["replacements"] == 2
    patch = (
        "*** Begin Patch\n*** Update File: data/ledger.csv\n@@\n "
        "id,amount\n-1,10.00\n+1,12.50\n*** Add File: data/new.csv\n+id\n+3\n*** Delete File: "
        "README.md\n*** End Patch"
    )
    p = await call(sb, "apply_patch", patch=patch)
    assert p.ok and p.value == {
        "added": ["data/new.csv"],
        "updated": ["data/ledger.csv"],
        "deleted": ["README.md"],
        "moved": [],
    }
    bad = await call(
        sb,
        "apply_patch",
        patch="*** Begin Patch\n*** Update File: data/ledger.csv\n@@\n-nope\n+x\n*** End Patch",
    )
    assert not bad.ok and bad.error.code == "no_match"
    assert (await call(sb, "glob", pattern="**/*.csv")).value["paths"] == [
        "data/ledger.csv",
        "data/new.csv",
    ]
    g = await call(sb, "grep", pattern=r"12\.50", path=".")
    assert [(m["path"], m["line"]) for m in g.value["matches"]] == [("data/ledger.csv", 2)]
    names = [e["name"] for e in (await call(sb, "list", path=".")).value["entries"]]
    assert names == [".git", "data", "notes", "out"]
    x = await call(
        sb,
        "exec",
        command="git status --porcelain | sort && sqlite3 :memory: 'select 6*7' && python3 -c "
        "'print(1+1)'",
    )
    assert x.ok and x.value["exit_code"] == 0
    assert x.value["stdout"].splitlines() == [
        " D README.md",
        " M data/ledger.csv",
        " M notes/todo.md",
        "?? data/new.csv",
        "?? out/",
        "42",
        "2",
    ]
    state = await sb.state()
    rows = {r["path"]: r for r in state[TABLE]}
    assert {p: r["change"] for p, r in rows.items() if not p.startswith(".git/")} == {
        "README.md": "removed",
        "data/ledger.csv": "changed",
        "data/new.csv": "added",
        "notes/todo.md": "changed",
        "out/report.txt": "added",
    }
    assert (
        rows["out/report.txt"]["text"] == "total 30\n"
        and len(rows["out/report.txt"]["sha256"]) == 64
    )
    assert rows["README.md"]["sha256"] is None
    await sb.restore(seed)  # snapshot/restore covers the tree
    assert (await sb.state())[TABLE] == []
    assert (await call(sb, "read", path="README.md")).value["content"] == "hello\n"


@pytest.mark.asyncio(loop_scope="module")
async def test_paths_cannot_leave_the_workspace_and_errors_say_what_to_do(sandbox):
    sb, seed = sandbox
    await sb.restore(seed)
    for path in ("../etc/passwd", "/etc/passwd", "notes/../../x"):
        r = await call(sb, "read", path=path)
        assert not r.ok and r.error.code == "outside_workspace" and "relative" in r.error.message
    assert (await call(sb, "exec", command="ln -s /etc/passwd leak && ln -s .. up")).value[
        "exit_code"
    ] == 0
    for path in ("leak", "up/x"):
        assert (await call(sb, "read", path=path)).error.code == "outside_workspace"
        assert (await call(sb, "write", path=path, content="x")).error.code == "outside_workspace"
    missing = await call(sb, "read", path="nope.txt")
    assert missing.error.code == "not_found" and "glob" in missing.error.message
    assert (await call(sb, "exec", command="exit 3")).value["exit_code"] == 3
    slow = await call(sb, "exec", command="sleep 5", timeout=0.3)
    assert slow.value["exit_code"] == 124 and slow.value["timed_out"]
    big = await call(sb, "exec", command="head -c 300000 /dev/zero | tr '\\0' a")
    assert (
        len(big.value["stdout"]) == 64 * 1024
        and big.value["truncated"]["stdout"] == 300000 - 64 * 1024
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_app_tools_share_the_state_with_the_tree(sandbox):
    sb, seed = sandbox
    await sb.restore(seed)
    assert (await call(sb, "add_contact", name="Ana", email="ana@example.com")).ok
    assert (await call(sb, "count_contacts")).value == 1
    x = await call(sb, "exec", command="ls")  # the app's list() is the builtin, not the tool
    assert x.ok
    state = await sb.state()
    assert (
        state["contacts"] == [{"id": 1, "name": "Ana", "email": "ana@example.com"}]
        and state[TABLE] == []
    )
    await sb.restore(seed)
    assert (await call(sb, "count_contacts")).value == 0


@pytest.mark.asyncio(loop_scope="module")
async def test_the_check_runs_in_a_sandbox_over_the_rebuilt_final_workspace(sandbox):
    import msgspec

    sb, seed = sandbox
    await sb.restore(seed)
    await call(sb, "write", path="out/answer.txt", content="42\n")
    await call(sb, "add_contact", name="Bo", email="bo@example.com")
    final = await sb.state()
    check_env = msgspec.structs.replace(ENV, id="kind-test--check", tools=CHECK_ENV_TOOLS)
    runner = ProcessRunner()
    try:
        judge = await runner.open(check_env, 0)
        assert (
            await judge.call(
                "apply_final", {"rows": final[TABLE], "tables": {"contacts": final["contacts"]}}
            )
        ).ok
        script = (
            "import os, sqlite3\n"
            "def grade(transcript, workspace_path):\n"
            "    text = open(os.path.join(workspace_path, 'out/answer.txt')).read()\n"
            "    return {'answer': float(text == '42\\n'), 'told': float(len(transcript) == "
            "1), 'readme': float(os.path.exists(os.path.join(workspace_path, "
            "'README.md')))}\n"
        )
        res = await judge.call("run_check", {"script": script, "transcript": [{"type": "message"}]})
        assert res.value == {"scores": {"answer": 1.0, "told": 1.0, "readme": 1.0}}
        assert (await judge.call("count_contacts", {})).value == 1
        crash = await judge.call(
            "run_check", {"script": "def grade(t, w):\n    raise ValueError('boom')\n"}
        )
        assert crash.ok and crash.value == {"error": "ValueError: boom"}
        hang = await judge.call(
            "run_check", {"script": "def grade(t, w):\n    while True: pass\n", "timeout": 0.5}
        )
        assert "did not finish" in hang.value["error"]
    finally:
        await runner.aclose()
    assert [t.name for t in claw_tools()] == [
        "read",
        "write",
        "edit",
        "apply_patch",
        "list",
        "glob",
        "grep",
        "exec",
    ]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_big_diff_keeps_hashes_past_its_content_budget(sandbox):
    sb, seed = sandbox
    await sb.restore(seed)
    assert (
        await call(
            sb,
            "exec",
            command="for i in 1 2 3 4 5 6; do head -c 1000000 /dev/urandom > blob$i; done",
        )
    ).value["exit_code"] == 0
    rows = [r for r in (await sb.state())[TABLE] if r["path"].startswith("blob")]
    carried = [r for r in rows if r["data"]]
    assert (
        len(rows) == 6
        and 1 <= len(carried) <= 4
        and all(len(r["sha256"]) == 64 and r["size"] == 1000000 for r in rows)
    )
    await sb.restore(seed)
