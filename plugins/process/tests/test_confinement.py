"""What the process runner confines a sandbox with (uid, cgroups, namespaces, Landlock), the
working folder in snapshots, processes env code forks, and cleanup. Real subprocesses, no mocks.
Tests that need root (as on CI) are skipped otherwise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import msgspec
import pytest

from envkernel.config import settings_for
from envkernel_process import THREATS, ProcessRunner, Settings, host_support, protections
from envkernel_process.confine import HostSupport, UidPool, kill_uids
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (as on CI)")

SOURCE = textwrap.dedent("""
    import os, signal, time

    def put(env, key, value):
        env.db.execute("INSERT INTO kv VALUES (?, ?)", (key, value))
        return key

    def write(env, name, text):
        d = os.path.dirname(name)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(name, "w") as f:
            f.write(text)
        return sorted(os.listdir("."))

    def write_then_fail(env, name):
        with open(name, "w") as f:
            f.write("should vanish")
        raise ToolError("refused", "after writing")

    def files(env):
        out = {}
        for base, dirs, names in os.walk("."):
            for n in names:
                p = os.path.join(base, n)[2:]
                out[p] = open(p).read()
        return out

    def remove(env, name):
        os.unlink(name)

    def blob(env, mb):
        with open("blob", "wb") as f:
            for _ in range(mb):
                f.write(b"z" * (1 << 20))
        return mb

    def fork_and_return(env):
        pid = os.fork()
        if pid == 0:
            return "from the child"   # must never reach the protocol
        os.waitpid(pid, 0)
        return "parent"

    def background(env):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        return "started"

    def kill_self(env):
        os.kill(os.getpid(), signal.SIGKILL)

    def whoami(env):
        return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "cwd": \
os.getcwd(), "workspace": env.workspace}

    def count(env):
        return env.db.execute("SELECT count(*) AS n FROM kv").fetchone()["n"]
""")
TOOLS = [
    "put",
    "write",
    "write_then_fail",
    "files",
    "remove",
    "blob",
    "fork_and_return",
    "background",
    "kill_self",
    "whoami",
    "count",
]


def make_env() -> EnvSpec:
    return EnvSpec(
        id="conf",
        name="conf",
        tools=[ToolSpec(name=n) for n in TOOLS],
        behaviour=CodeBehaviour(source=SOURCE),
        seed_sql="CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT);",
    )


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
async def runner():
    r = ProcessRunner(
        Settings(call_timeout=2, memory_mb=256, max_processes=16, workspace_mb=32, file_size_mb=8)
    )
    yield r
    await r.aclose()


# ------------------------------------------------------------------------------ the host


def test_host_support_and_the_table():
    s = host_support()
    assert s is host_support()  # checked once
    d = s.as_dict()
    assert set(d) >= {"root", "network_namespace", "cgroups", "landlock", "not_available"}
    rows = protections(s)
    assert list(rows) == list(THREATS) and all(
        r.outcome in ("blocked", "detected", "not blocked") for r in rows.values()
    )
    if ROOT:
        assert s.unshare and s.landlock and {"memory", "pids"} <= set(s.cgroups), d
        assert {k for k, r in rows.items() if r.outcome != "blocked"} == {"kill_executor"}
    bare = protections(HostSupport(root=False))
    assert (
        bare["fork_bomb"].outcome
        == bare["network"].outcome
        == bare["host_files"].outcome
        == "not blocked"
    )
    assert (
        bare["infinite_loop"].outcome == "blocked" and bare["kill_executor"].outcome == "detected"
    )
    assert protections(HostSupport(root=False, landlock=6))["host_files"].outcome == "blocked"
    assert ProcessRunner(Settings(isolate=False)).protections() == bare


def test_settings_from_environment_variables():
    s = settings_for(
        "process",
        Settings,
        {"call_timeout": 5},
        environ={"ENVKERNEL_PROCESS_CALL_TIMEOUT": "1.5", "ENVKERNEL_PROCESS_MAX_PROCESSES": "8"},
    )
    assert s.call_timeout == 1.5 and s.max_processes == 8
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"max_procs": 1}, Settings)


# ------------------------------------------------------------------------------ uid, cgroups,
# folder


@needs_root
async def test_a_sandbox_has_its_own_uid_cgroup_and_folder(runner):
    s = await runner.open(make_env(), seed=0)
    c = s.confinement
    uid = c["uid"]
    assert (
        uid >= runner.settings.uid_base
        and c["rlimits"]["RLIMIT_NPROC"] == 16
        and c["landlock"] >= 1
    )
    assert c.get("seccomp") == ("no unix sockets" if host_support().seccomp else None)
    me = (await s.call("whoami", {})).value
    assert (
        me["uid"] == me["gid"] == uid
        and me["groups"] == []
        and me["cwd"] == me["workspace"] == s._work
    )
    assert os.stat(s._folder).st_uid == 0 and oct(os.stat(s._folder).st_mode & 0o777) == "0o711"
    assert (
        os.stat(os.path.join(s._folder, "executor.log")).st_mode & 0o077
    ) == 0  # the log is out of its reach
    cg = s._res.cgroup
    assert cg is not None and set(cg.controllers) >= {"memory", "pids"}
    v, mem = cg.dirs["memory"]
    assert Path(
        mem, "memory.limit_in_bytes" if v == 1 else "memory.max"
    ).read_text().strip() == str(256 * 1024 * 1024)
    assert Path(cg.dirs["pids"][1], "pids.max").read_text().strip() == "16"
    assert cg.pids_inside() == {s.pid}
    other = await runner.open(make_env(), seed=0)
    assert other.confinement["uid"] != uid
    dirs = [d for _v, d in cg.dirs.values()]
    folder = s._folder
    await s.close()
    assert not any(os.path.exists(d) for d in dirs) and not os.path.exists(folder)
    assert (await other.call("count", {})).ok


@needs_root
async def test_a_replaced_executor_gets_a_fresh_uid_and_its_workspace_back(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("write", {"name": "notes/a.txt", "text": "hello"})
    await s.call("put", {"key": "k", "value": "v"})
    uid, pid = s.confinement["uid"], s.pid
    r = await s.call("kill_self", {})
    assert r.error.code == "crashed" and "SIGKILL" in r.error.message
    assert (await s.call("files", {})).value == {
        "notes/a.txt": "hello"
    }  # replayed into the new tmpfs
    assert s.confinement["uid"] != uid and s.pid != pid and s.replacements == 1 and not s.diverged
    assert (await s.call("count", {})).value == 1


@needs_root
async def test_an_executor_killed_for_memory_says_so():
    """Files in the tmpfs working folder count against the memory cgroup, not RLIMIT_AS: filling it
    gets the executor itself killed by the kernel, and the error names the cause."""
    if "memory" not in host_support().cgroups:
        pytest.skip("no memory cgroup")
    r = ProcessRunner(Settings(memory_mb=96, workspace_mb=512, file_size_mb=400, call_timeout=10))
    try:
        s = await r.open(make_env(), seed=0)
        res = await s.call("blob", {"mb": 300})
        assert not res.ok and res.error.code == "crashed", res
        assert "ran out of memory (limit 96 MiB)" in res.error.message, res.error.message
        assert (await s.call("count", {})).ok  # replaced
    finally:
        await r.aclose()


# ------------------------------------------------------------------------------ the working folder


async def test_snapshot_and_restore_cover_the_working_folder(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("write", {"name": "a.txt", "text": "one"})
    await s.call("write", {"name": "d/b.txt", "text": "two"})
    await s.call("put", {"key": "k", "value": "v"})
    snap = await s.snapshot()
    await s.call("write", {"name": "a.txt", "text": "changed"})
    await s.call("remove", {"name": "d/b.txt"})
    await s.call("write", {"name": "new/c.txt", "text": "three"})
    await s.call("put", {"key": "k2", "value": "v"})
    await s.restore(snap)
    assert (await s.call("files", {})).value == {"a.txt": "one", "d/b.txt": "two"}
    assert (await s.call("count", {})).value == 1
    seed_like = await s.snapshot()
    await s.restore(seed_like)  # restoring an unchanged folder is a no-op
    assert (await s.call("files", {})).value == {"a.txt": "one", "d/b.txt": "two"}


async def test_a_failed_call_leaves_the_working_folder_as_it_was(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("write", {"name": "keep.txt", "text": "kept"})
    r = await s.call("write_then_fail", {"name": "gone.txt"})
    assert r.error.code == "refused"
    assert (await s.call("files", {})).value == {"keep.txt": "kept"}


async def test_a_working_folder_too_large_to_snapshot_fails_clearly():
    r = ProcessRunner(Settings(workspace_mb=128, file_size_mb=80))
    try:
        s = await r.open(make_env(), seed=0)
        assert (await s.call("blob", {"mb": 70})).ok
        with pytest.raises(Exception, match="too_large"):
            await s.snapshot()
        assert (await s.call("count", {})).ok
    finally:
        await r.aclose()


# ------------------------------------------------------------------------------ processes env code
# forks


async def test_a_forked_child_never_answers_and_is_reaped(runner):
    s = await runner.open(make_env(), seed=0)
    for _ in range(3):
        r = await s.call("fork_and_return", {})
        assert r.ok and r.value == "parent"
    assert (await s.call("count", {})).value == 0  # the protocol is intact
    assert s.replacements == 0


async def test_processes_a_call_started_are_killed_when_it_returns(runner):
    s = await runner.open(make_env(), seed=0)
    r = await s.call("background", {})
    assert r.ok
    cg = s._res.cgroup
    if cg is not None and "pids" in cg.dirs:
        assert cg.pids_inside() == {s.pid}
    assert (await s.call("count", {})).ok and s.replacements == 0


def test_the_executor_dies_with_its_runner(tmp_path: Path):
    """A runner killed outright (no cleanup) takes its executors with it: parent-death signal."""
    script = tmp_path / "orphan.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_confinement import make_env
        from envkernel_process import ProcessRunner, Settings
        async def main():
            s = await ProcessRunner(Settings()).open(make_env(), 0)
            print(s.pid, flush=True)
            os._exit(0)  # no close, no finalizer
        asyncio.run(main())
    """)
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    pid = int(out.split()[-1])  # (an unconfigured structlog prints its debug lines to stdout first)
    deadline = time.monotonic() + 5
    while alive(pid):
        assert time.monotonic() < deadline, f"executor {pid} outlived its runner"
        time.sleep(0.02)


# ------------------------------------------------------------------------------ uids


@needs_root
def test_kill_uids_finds_processes_by_uid():
    uid = 265_431
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            time.sleep(30)
        finally:
            os._exit(0)
    try:
        time.sleep(0.1)
        assert kill_uids(range(uid, uid + 1)) == 1
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


@needs_root
def test_uid_pool_hands_out_distinct_uids_that_rest_after_use():
    pool = UidPool(300_000)
    got = [pool.acquire() for _ in range(5)]
    assert len(set(got)) == 5 and all(300_000 <= u < 300_000 + 64_000 for u in got)
    pool.release(got[0])
    assert got[0] not in [pool.acquire() for _ in range(5)]  # resting
    other = UidPool(300_000)  # as another runner process: its own lock, so another block
    assert other.acquire() >= 301_000


def test_folders_of_a_dead_runner_are_swept(tmp_path: Path):
    from envkernel_process.confine import OWNER_FILE, owner_stamp, sweep_folders

    dead, live, other = (tmp_path / f"envk-p{n}000000000000000-x" for n in ("a", "b", "c"))
    for d in (dead, live, other):
        (d / "work").mkdir(parents=True)
    (dead / OWNER_FILE).write_text("999999999 1")
    (live / OWNER_FILE).write_text(owner_stamp())
    support = host_support()
    made = []
    for _c, (_v, base) in support.cgroups.items():  # a cgroup the dead runner left
        d = os.path.join(base, "envk-pa000000000000000")
        os.makedirs(d, exist_ok=True)
        made.append(d)
    assert sweep_folders(str(tmp_path), support) == 1
    assert (
        not dead.exists() and live.exists() and other.exists()
    )  # no owner file: not ours to judge
    assert not any(os.path.exists(d) for d in made)
