"""Hostile environment code in a Podman sandbox: it must be stopped, contained or blocked, and the
sandbox must come back with the state the caller expects.

Blocked (the attempt fails inside the sandbox, nothing reaches the host): network connections,
host files, fork bombs, memory bombs. Stopped: infinite loops (also ones that ignore the alarm).
Contained: huge output. Survived: an environment that kills its own executor or the container's
PID 1.

Needs root, Podman and the image (scripts/install-podman.sh); skipped without them unless
ENVKERNEL_REQUIRE_PODMAN=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import time

import pytest
import pytest_asyncio

from envkernel_podman import DEFAULT_IMAGE, LABEL, LABEL_RUNNER, PodmanRunner, Settings
from envkernel_podman.service import containers_conf, podman_env
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec


def _not_ready() -> str | None:
    if os.geteuid() != 0:
        return "the podman hostile tests need root"
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/install-podman.sh)"
    if subprocess.run(
        ["podman", "image", "exists", DEFAULT_IMAGE], env=podman_env(containers_conf()), check=False
    ).returncode:
        return f"image {DEFAULT_IMAGE} is missing (envkernel sandbox build-image)"
    return None


_REASON = _not_ready()
pytestmark = pytest.mark.skipif(
    _REASON is not None and not os.environ.get("ENVKERNEL_REQUIRE_PODMAN"), reason=_REASON or ""
)

CALL_TIMEOUT = 2.0
MEMORY_MB = 256
PIDS = 64

SOURCE = r"""
import os, signal, socket, time

def put(env, key, value):
    env.db.execute("INSERT INTO kv (key, value) VALUES (?, ?)", (key, value))
    return {"key": key, "id": env.new_id("kv")}

def get(env, key):
    row = env.db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    if row is None:
        raise ToolError("not_found", key)
    return row["value"]

def count(env):
    return env.db.execute("SELECT count(*) AS n FROM kv").fetchone()["n"]

def spin(env):
    while True:
        pass

def deaf_spin(env):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    while True:
        pass

def fork_bomb(env):
    pids, error = [], ""
    try:
        for _ in range(2000):
            pid = os.fork()
            if pid == 0:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.01)
            pids.append(pid)
    except OSError as exc:
        error = f"{type(exc).__name__}: {exc}"
    with open("/sys/fs/cgroup/pids/pids.current") as f:
        current = int(f.read())
    return {"forked": len(pids), "error": error, "pids_current": current}

def memory_bomb(env):
    hoard = []
    try:
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    except MemoryError:
        return {"held_mb": 16 * len(hoard), "error": "MemoryError"}

def memory_herd(env, children, mb):
    pids = []
    for _ in range(children):
        pid = os.fork()
        if pid == 0:
            block = bytearray(mb * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            time.sleep(0.5)
            os._exit(0)
        pids.append(pid)
    return [os.waitpid(pid, 0)[1] for pid in pids]

def big_alloc(env):
    return len(bytearray(4 * 1024 ** 3))

def tmpfs_bomb(env):
    chunk = b"m" * (1024 * 1024)
    written = 0
    try:
        for i in range(1000):
            with open(f"/work/fill{i}", "wb") as f:
                for _ in range(8):
                    f.write(chunk)
                    written += 1
    except OSError as exc:
        return {"written_mb": written, "error": f"{type(exc).__name__}: {exc}"}
    return {"written_mb": written}

def memory_limit(env):
    with open("/sys/fs/cgroup/memory/memory.limit_in_bytes") as f:
        return int(f.read())

def connect(env, host, port):
    s = socket.create_connection((host, port), timeout=2)
    s.sendall(b"leak")
    s.close()
    return "connected"

def interfaces(env):
    with open("/proc/net/dev") as f:
        return [line.split(":")[0].strip() for line in f.read().splitlines()[2:]]

def read_file(env, path):
    with open(path) as f:
        return f.read()

def write_file(env, path):
    with open(path, "w") as f:
        f.write("x")
    return "written"

def list_dir(env, path):
    return sorted(os.listdir(path))

def identity(env):
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    return {"uid": os.getuid(), "gid": os.getgid(), "cap_eff": status["CapEff"].strip(),
            "no_new_privs": status.get("NoNewPrivs", "").strip()}

def shout(env, mb):
    chunk = b"y" * (1024 * 1024)
    for _ in range(mb):
        os.write(2, chunk)
    print("and more" * 1000)
    return "shouted"

def huge(env, mb):
    return "z" * (mb * 1024 * 1024)

def litter(env):
    import ctypes
    for folder in ("/work", "/tmp", "/dev/shm"):
        os.makedirs(folder + "/deep/er", exist_ok=True)
        with open(folder + "/deep/er/left.txt", "w") as f:
            f.write("from the last sandbox")
        os.chmod(folder + "/deep/er", 0o500)
    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    # a daemon that outlives the call: its own session, deaf to everything it can be
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                time.sleep(0.05)
        os._exit(0)
    return {"shm": shm}

def leftovers(env):
    me = os.getpid()
    procs = {}
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != me:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                procs[int(p)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    files = {d: sorted(os.listdir(d)) for d in ("/work", "/tmp", "/dev/shm")}
    with open("/proc/sysvipc/shm") as f:
        shm = f.read().splitlines()[1:]
    return {"procs": procs, "files": files, "shm": shm}

def kill_self(env):
    os.kill(os.getpid(), signal.SIGKILL)

def kill_init(env):
    os.kill(1, signal.SIGTERM)
    time.sleep(5)
    return "still here"
"""

TOOLS = [
    "put",
    "get",
    "count",
    "spin",
    "deaf_spin",
    "fork_bomb",
    "memory_bomb",
    "memory_herd",
    "big_alloc",
    "tmpfs_bomb",
    "memory_limit",
    "connect",
    "interfaces",
    "read_file",
    "write_file",
    "list_dir",
    "identity",
    "shout",
    "huge",
    "kill_self",
    "kill_init",
    "litter",
    "leftovers",
]


def hostile_env() -> EnvSpec:
    return EnvSpec(
        id="hostile-v1",
        name="hostile",
        tools=[ToolSpec(name=n, mutates=n == "put") for n in TOOLS],
        behaviour=CodeBehaviour(source=SOURCE),
        seed_sql="CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT); INSERT INTO kv VALUES "
        "('seed', 'v0');",
    )


def podman(*args: str) -> str:
    return subprocess.run(
        ["podman", *args],
        env=podman_env(containers_conf()),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def containers(label: str) -> dict[str, str]:
    rows = json.loads(podman("ps", "-a", "--filter", f"label={label}", "--format", "json") or "[]")
    return {row["Names"][0]: row["State"] for row in rows}


@pytest_asyncio.fixture
async def runner():
    r = PodmanRunner(
        Settings(pool_size=1, call_timeout=CALL_TIMEOUT, memory_mb=MEMORY_MB, pids_limit=PIDS)
    )
    try:
        yield r
    finally:
        await r.aclose()
        assert containers(f"{LABEL_RUNNER}={r.token}") == {}, "containers left after aclose"


@pytest_asyncio.fixture
async def sandbox(runner):
    s = await runner.open(hostile_env(), 0)
    assert (await s.call("put", {"key": "a", "value": "1"})).ok
    return s


async def call(s, tool: str, **arguments):
    return await s.call(tool, arguments)


async def assert_state_kept(s) -> None:
    got = await call(s, "get", key="a")
    assert got.ok and got.value == "1", got
    assert (await call(s, "count")).value == 2


# ---------------------------------------------------------------- loops


async def test_infinite_loop_is_stopped_and_the_sandbox_lives_on(sandbox):
    t0 = time.monotonic()
    res = await call(sandbox, "spin")
    assert not res.ok and res.error.code == "timeout"
    assert time.monotonic() - t0 < CALL_TIMEOUT + 3
    assert sandbox.replacements == 0
    await assert_state_kept(sandbox)


async def test_a_loop_that_ignores_the_alarm_gets_its_container_destroyed(sandbox):
    old = sandbox.container
    t0 = time.monotonic()
    res = await call(sandbox, "deaf_spin")
    assert not res.ok and res.error.code == "timeout"
    assert time.monotonic() - t0 < CALL_TIMEOUT + 6
    assert old not in containers(LABEL)
    await assert_state_kept(sandbox)
    assert sandbox.replacements == 1 and sandbox.container != old


# ---------------------------------------------------------------- processes and memory


async def test_fork_bomb_is_blocked_by_the_pids_limit(sandbox):
    res = await call(sandbox, "fork_bomb")
    assert res.ok or res.error.code in ("timeout", "tool_crashed"), res
    if res.ok:  # the bomb ran out of pids: it never got near the 2000 it asked for
        assert res.value["forked"] < PIDS
        assert "Resource temporarily unavailable" in res.value["error"] or res.value["error"]
        assert res.value["pids_current"] <= PIDS
    # the host is untouched and the sandbox still answers (or is replaced) with its state
    assert subprocess.run(["true"], check=False).returncode == 0
    await assert_state_kept(sandbox)


async def test_memory_bomb_is_blocked(sandbox):
    assert (await call(sandbox, "memory_limit")).value == MEMORY_MB * 1024 * 1024
    res = await call(sandbox, "memory_bomb")
    if res.ok:  # stopped by the address-space limit inside the sandbox
        assert res.value["held_mb"] <= MEMORY_MB
    # or by the cgroup (the container is then replaced), or, on a loaded machine, by the call's
    else:
        # time limit before either limit was reached: the call is stopped and the sandbox lives on
        assert res.error.code in ("crashed", "tool_crashed", "timeout"), res
        await assert_state_kept(sandbox)
    # processes that each stay under the address-space limit meet the container's memory cgroup
    herd = await call(sandbox, "memory_herd", children=4, mb=120)
    assert herd.ok, herd
    assert any(status & 0x7F == 9 for status in herd.value), (
        herd.value
    )  # SIGKILLed by the OOM killer
    big = await call(sandbox, "big_alloc")
    assert not big.ok and "MemoryError" in big.error.message
    fill = await call(sandbox, "tmpfs_bomb")  # the writable folder is a small tmpfs
    assert fill.ok and fill.value["written_mb"] <= 64 and "No space left" in fill.value["error"]
    await assert_state_kept(sandbox)


# ---------------------------------------------------------------- network


async def test_network_connections_are_blocked(sandbox):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        res = await call(sandbox, "connect", host="127.0.0.1", port=port)
        assert not res.ok
        assert (
            "ConnectionRefused" in res.error.message or "unreachable" in res.error.message.lower()
        )
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing from the sandbox reached the host
        # the sandbox has no interface but its own loopback
        assert (await call(sandbox, "interfaces")).value == ["lo"]
    finally:
        listener.close()


# ---------------------------------------------------------------- host files


async def test_host_files_are_not_visible(sandbox, tmp_path):
    secret = tmp_path / "secret.txt"
    token = secrets.token_hex(16)
    secret.write_text(token)
    res = await call(sandbox, "read_file", path=str(secret))
    assert not res.ok and "FileNotFoundError" in res.error.message
    for path in (
        "/proc/1/root" + str(secret),
        "/root/.bash_history",
        "/var/lib/containers/storage/storage.lock",
    ):
        got = await call(sandbox, "read_file", path=path)
        assert not got.ok or token not in str(got.value)
    # the only host folder it sees is its own socket folder, locked; the root and the executor are
    # read-only
    assert (await call(sandbox, "list_dir", path="/envk")).value == ["s.sock"]
    denied = (
        ("/envk/x", "PermissionError"),
        ("/etc/x", "Read-only file system"),
        ("/opt/envk/executor.py", "Read-only file system"),
        ("/opt/envk/supervisor.py", "Read-only file system"),
    )
    for path, err in denied:
        w = await call(sandbox, "write_file", path=path)
        assert not w.ok and err in w.error.message, (path, w)
    assert (await call(sandbox, "write_file", path="/work/notes.txt")).ok  # its own tmpfs
    who = (await call(sandbox, "identity")).value
    assert who["uid"] == 1000 and who["gid"] == 1000
    assert int(who["cap_eff"], 16) == 0
    assert who["no_new_privs"] == "1"


# ---------------------------------------------------------------- output


async def test_huge_output_is_contained(runner, sandbox):
    res = await call(sandbox, "huge", mb=40)
    assert not res.ok and res.error.code == "too_large"
    shouted = await call(sandbox, "shout", mb=40)  # 40 MiB on stderr: the container log is capped
    assert shouted.ok
    log = json.loads(podman("inspect", sandbox.container))[0]["HostConfig"]["LogConfig"]
    log_path = log["Path"]
    assert os.path.getsize(log_path) <= 2 * 1024 * 1024
    await assert_state_kept(sandbox)


# ---------------------------------------------------------------- killing itself


async def test_killing_its_own_executor_gets_a_replacement(sandbox):
    old = sandbox.container
    res = await call(sandbox, "kill_self")
    assert not res.ok and res.error.code == "crashed"
    assert "signal 9" in res.error.message or "exit code 137" in res.error.message, (
        res.error.message
    )
    await assert_state_kept(sandbox)
    assert sandbox.replacements == 1 and sandbox.container != old
    assert old not in containers(LABEL)


async def test_killing_the_containers_pid_1_gets_a_replacement(sandbox):
    old = sandbox.container
    res = await call(sandbox, "kill_init")
    assert not res.ok and res.error.code == "crashed"
    await assert_state_kept(sandbox)
    assert sandbox.replacements == 1 and sandbox.container != old


async def test_many_hostile_sandboxes_leave_nothing_behind(runner):
    sessions = await asyncio.gather(*(runner.open(hostile_env(), 0) for _ in range(3)))
    results = await asyncio.gather(
        call(sessions[0], "kill_self"), call(sessions[1], "spin"), call(sessions[2], "fork_bomb")
    )
    assert not results[0].ok and not results[1].ok
    for s in sessions:
        await s.close()
    assert len(containers(f"{LABEL_RUNNER}={runner.token}")) <= runner.settings.pool_max


# ---------------------------------------------------------------- recycling


async def test_a_recycled_container_keeps_nothing_of_the_last_sandbox():
    runner = PodmanRunner(
        Settings(pool_size=0, pool_max=1, call_timeout=CALL_TIMEOUT, memory_mb=MEMORY_MB)
    )
    try:
        first = await runner.open(hostile_env(), 0)
        assert (await call(first, "put", key="secret", value="from the first sandbox")).ok
        littered = await call(first, "litter")
        assert littered.ok and littered.value["shm"] >= 0, littered
        dirty = (await call(first, "leftovers")).value
        assert any("deep" in v for v in dirty["files"].values()) and dirty["shm"]
        name = first.container
        await first.close()
        deadline = time.monotonic() + 10
        while runner.pool_ready < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        second = await runner.open(hostile_env(), 0)
        assert second.container == name and second.from_pool  # the same container, recycled
        clean = (await call(second, "leftovers")).value
        assert clean["files"] == {"/work": [], "/tmp": [], "/dev/shm": []}
        assert clean["shm"] == []
        # PID 1 (timeout) and the supervisor; no daemon, no earlier executor
        procs = {int(pid): cmd for pid, cmd in clean["procs"].items()}
        assert len(procs) == 2 and "timeout" in procs[1], procs
        assert all("supervisor.py" in cmd for pid, cmd in procs.items() if pid != 1), procs
        got = await call(second, "get", key="secret")
        assert not got.ok and got.error.code == "not_found"
        assert runner.stats["recycled"] == 1
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}
