"""The hostile suite: environments that attack their sandbox, through ``envkernel env call`` and
through a whole ``envkernel run``, against the ``process`` runner.

Each attack is one environment whose only tool, ``attack``, does one bad thing. For every attack
the observed outcome must be the one the runner's table (:func:`envkernel_process.protections`,
reproduced in docs/sandboxes.md) gives for this host: ``blocked`` (the attack fails inside the
sandbox, or is stopped within the timeout) or ``detected`` (it happens, the call fails with a
clear error naming it and the sandbox is replaced). Meanwhile a benign sandbox keeps answering,
and afterwards no process of the test's sandboxes is left running.

Sandboxes of this module live under a private temp root (``TMPDIR``), so "left running" means: a
process whose command line names that root (every executor, and every process it forks, does).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from envkernel.recorder import Recorder
from envkernel_process import THREATS, ProcessRunner, Settings, host_support, protections
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

REPO = Path(__file__).resolve().parents[1]
CALL_TIMEOUT = 1
SETS = ["call_timeout=1", "memory_mb=256", "file_size_mb=8", "workspace_mb=16", "cpus=0.25"]
"""Runner settings of every hostile sandbox: short timeout, small limits, a quarter of a core."""
ENV_OVERRIDES = {
    "ENVKERNEL_PROCESS_CALL_TIMEOUT": "1",
    "ENVKERNEL_PROCESS_MEMORY_MB": "256",
    "ENVKERNEL_PROCESS_FILE_SIZE_MB": "8",
    "ENVKERNEL_PROCESS_WORKSPACE_MB": "16",
}
"""The same settings for ``envkernel run`` (the runner reads ENVKERNEL_PROCESS_* variables)."""

# The attacks. PORT, UDP_PORT, UNIX_PATH and SECRET are replaced by the test's own loopback ports,
# world-connectable unix socket and world-readable file.
ATTACKS: dict[str, tuple[str, str]] = {
    "spin": (
        "infinite_loop",
        """
        def attack(env):
            while True:
                pass
    """,
    ),
    "deaf_spin": (
        "infinite_loop",
        """
        import signal
        def attack(env):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            while True:
                pass
    """,
    ),
    "fork_bomb": (
        "fork_bomb",
        """
        import os
        def attack(env):
            while True:
                os.fork()
    """,
    ),
    "memory_bomb": (
        "memory_bomb",
        """
        def attack(env):
            hog = []
            while True:
                hog.append(b"x" * (32 << 20))
    """,
    ),
    "tcp": (
        "network",
        """
        import socket
        def attack(env):
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
            return "connected"
    """,
    ),
    "udp": (
        "network",
        """
        import socket
        def attack(env):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"escaped", ("127.0.0.1", UDP_PORT))
            return "sent"
    """,
    ),
    "unix": (
        "network",
        """
        import socket
        def attack(env):
            s = socket.socket(socket.AF_UNIX)
            s.connect(UNIX_PATH)
            s.sendall(b"escaped")
            return "connected"
    """,
    ),
    "host_file": (
        "host_files",
        """
        def attack(env):
            return open(SECRET).read()
    """,
    ),
    "list_root": (
        "host_files",
        """
        import os
        def attack(env):
            return sorted(os.listdir("/"))
    """,
    ),
    "huge_result": (
        "huge_output",
        """
        def attack(env):
            return "x" * (40 << 20)
    """,
    ),
    "huge_print": (
        "huge_output",
        """
        def attack(env):
            line = "x" * (1 << 20)
            for _ in range(100):
                print(line)
    """,
    ),
    "huge_disk": (
        "huge_output",
        """
        def attack(env):
            for i in range(100):
                with open(f"blob{i}", "wb") as f:
                    f.write(b"x" * (7 << 20))
    """,
    ),
    "kill_self": (
        "kill_executor",
        """
        import os, signal
        def attack(env):
            os.kill(os.getpid(), signal.SIGKILL)
    """,
    ),
    "kill_runner": (
        "other_processes",
        """
        import os, signal
        def attack(env):
            os.kill(os.getppid(), signal.SIGKILL)
            return "runner killed"
    """,
    ),
    "daemon": (
        "leftovers",
        """
        import os, signal, time
        def attack(env):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                        signal.signal(s, signal.SIG_IGN)
                    while True:
                        time.sleep(0.05)
                os._exit(0)
            time.sleep(0.1)
            raise ToolError("daemon_started", "a daemon now runs in the background")
    """,
    ),
}

ROWS = protections(host_support())
DANGEROUS = {"fork_bomb", "leftovers"}
"""Threats not even tried where the table says they are not blocked (they would hurt the host)."""


def source(
    name: str,
    port: int = 9,
    udp_port: int = 9,
    unix_path: str = "/nonexistent",
    secret: str = "/nonexistent",
) -> str:
    """The env.py of attack ``name`` (test code; the values are the test's own)."""
    code = textwrap.dedent(ATTACKS[name][1])
    code = code.replace("UDP_PORT", str(udp_port)).replace("PORT", str(port))
    return code.replace("UNIX_PATH", repr(unix_path)).replace("SECRET", repr(secret))


def hostile_env(name: str, **values: Any) -> EnvSpec:
    return EnvSpec(
        id=f"hostile-{name.replace('_', '-')}",
        name=f"hostile {name}",
        tools=[ToolSpec(name="attack", description="Does one hostile thing.")],
        behaviour=CodeBehaviour(source=source(name, **values)),
        seed_sql="CREATE TABLE t (x INTEGER);",
    )


@pytest.fixture
def root(processes_mentioning, tmp_path_factory: pytest.TempPathFactory):
    """A private temp root for this test's sandboxes (and nothing left in it afterwards)."""
    # made now, outside this root (pytest makes it lazily in the temp dir, which is about to change)
    tmp_path_factory.getbasetemp()
    d = tempfile.mkdtemp(prefix="envk-hostile-")
    os.chmod(d, 0o755)
    old = tempfile.tempdir
    tempfile.tempdir = d
    try:
        yield d
    finally:
        tempfile.tempdir = old
        left = processes_mentioning(d, 5.0)
        shutil.rmtree(d, ignore_errors=True)
        assert not left, f"processes left running: {left}"


class Listeners:
    """A TCP listener and a UDP socket on 127.0.0.1, and a unix socket anyone may connect to, that
    the sandboxes must not reach."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="envk-sock-")
        os.chmod(self.folder, 0o755)
        self.unix_path = os.path.join(self.folder, "open.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o666)
        self.unix.listen(8)
        self.unix.setblocking(False)
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.port = self.tcp.getsockname()[1]
        self.udp_port = self.udp.getsockname()[1]

    def reached(self) -> list[str]:
        seen = []
        try:
            conn, addr = self.tcp.accept()
            conn.close()
            seen.append(f"tcp from {addr}")
        except BlockingIOError:
            pass
        try:
            data, addr = self.udp.recvfrom(100)
            seen.append(f"udp {data!r} from {addr}")
        except BlockingIOError:
            pass
        try:
            conn, _ = self.unix.accept()
            conn.close()
            seen.append("unix")
        except BlockingIOError:
            pass
        return seen

    def values(self) -> dict[str, Any]:
        return {"port": self.port, "udp_port": self.udp_port, "unix_path": self.unix_path}

    def close(self) -> None:
        self.tcp.close()
        self.udp.close()
        self.unix.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def listeners():
    ls = Listeners()
    yield ls
    ls.close()


@pytest.fixture
def secret(tmp_path: Path) -> str:
    """A host file every user could read (so only Landlock stops the sandbox)."""
    folder = tmp_path / "host"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(folder, 0o755)
    f = folder / "secret.txt"
    f.write_text("the host's secret")
    os.chmod(f, 0o644)
    return str(f)


# ------------------------------------------------------------------------------ classifying


def classify(name: str, result: dict[str, Any], seconds: float, extra: dict[str, Any]) -> str:
    """What happened, in the table's words: blocked, detected or not blocked."""
    ok = result.get("ok")
    err = result.get("error") or {}
    code, msg = err.get("code", ""), err.get("message", "")
    limit = CALL_TIMEOUT + 2 + 1  # the executor's alarm, the runner's kill 2 s later, slack
    if name in ("spin", "deaf_spin"):
        return "blocked" if code == "timeout" and seconds <= limit else "not blocked"
    if name == "fork_bomb":
        return (
            "blocked"
            if code == "tool_crashed" and "Resource temporarily unavailable" in msg
            else "not blocked"
        )
    if name == "memory_bomb":
        return "blocked" if code == "tool_crashed" and "MemoryError" in msg else "not blocked"
    if name in ("tcp", "udp", "unix"):
        return "blocked" if not ok and not extra["reached"] else "not blocked"
    if name in ("host_file", "list_root"):
        return "blocked" if code == "tool_crashed" and "PermissionError" in msg else "not blocked"
    if name == "huge_result":
        return "blocked" if code == "too_large" else "not blocked"
    if name == "huge_print":
        return "blocked" if code == "tool_crashed" and "File too large" in msg else "not blocked"
    if name == "huge_disk":
        return (
            "blocked"
            if code == "tool_crashed" and ("No space left" in msg or "File too large" in msg)
            else "not blocked"
        )
    if name == "kill_self":
        return "detected" if code == "crashed" and "SIGKILL" in msg else "not blocked"
    if name == "kill_runner":
        return (
            "blocked"
            if code == "tool_crashed" and "Operation not permitted" in msg and extra["runner_alive"]
            else "not blocked"
        )
    if name == "daemon":
        return "blocked" if code == "daemon_started" and not extra["left"] else "not blocked"
    raise AssertionError(name)


# ------------------------------------------------------------------------------ through `env call`

WIRE = (
    "from envkernel.cli import cli\n"
    "from envkernel.envcmd import env\n"
    "if 'env' not in cli.commands:\n"
    "    cli.add_command(env)\n"
    "cli(prog_name='envkernel')\n"
)
"""``envkernel`` with the ``env`` group (also before cli.py registers it)."""


async def env_call(env_dir: Path, root: str) -> tuple[dict[str, Any], int, float, str]:
    """Run ``envkernel env call ENV_DIR attack --verbose`` in a subprocess whose temp root is
    ``root``; returns the printed result, the exit code, the call's own seconds and stderr."""
    sets = [a for s in SETS for a in ("--set", s)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WIRE,
        "env",
        "call",
        str(env_dir),
        "attack",
        "--verbose",
        *sets,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TMPDIR": root},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    stderr = err.decode(errors="replace")
    assert out.strip(), f"env call printed nothing (exit {proc.returncode}): {stderr[-2000:]}"
    info = next(
        (
            json.loads(ln[len("sandbox: ") :])
            for ln in stderr.splitlines()
            if ln.startswith("sandbox: ")
        ),
        {},
    )
    return (
        json.loads(out.decode().strip().splitlines()[-1]),
        proc.returncode or 0,
        float(info.get("seconds", 1e9)),
        stderr,
    )


async def test_hostile_envs_through_env_call(
    root: str, listeners: Listeners, secret: str, tmp_path: Path, processes_mentioning
):
    recorder = Recorder(tmp_path / "run")
    values = {**listeners.values(), "secret": secret}
    names = [
        n
        for n in ATTACKS
        if not (ATTACKS[n][0] in DANGEROUS and ROWS[ATTACKS[n][0]].outcome == "not blocked")
    ]
    dirs = {n: recorder.write_env(hostile_env(n, **values)) for n in names}

    # a benign sandbox of the same runner keeps answering all along
    from envkernel_sample import shop_env

    runner = ProcessRunner(Settings(call_timeout=5))
    try:
        await _attack_all(
            await runner.open(shop_env(), seed=0),
            root,
            names,
            dirs,
            listeners,
            processes_mentioning,
        )
    finally:
        await runner.aclose()
    assert not processes_mentioning(root, 5.0), "processes left running after the attacks"
    assert not [p for p in Path(root).rglob("envk-p*")], "sandbox folders left behind"


async def _attack_all(
    benign: Any,
    root: str,
    names: list[str],
    dirs: dict[str, Path],
    listeners: Listeners,
    processes_mentioning: Any,
    every_threat: bool = True,
) -> None:
    stop = asyncio.Event()
    slowest = [0.0]
    answered = [0]

    async def keep_calling() -> None:
        while not stop.is_set():
            t = time.monotonic()
            r = await benign.call("get_order", {"order_id": "ord_0001"})
            assert r.ok, r
            slowest[0] = max(slowest[0], time.monotonic() - t)
            answered[0] += 1
            await asyncio.sleep(0.02)

    watcher = asyncio.create_task(keep_calling())
    gate = asyncio.Semaphore(4)
    observed: dict[str, str] = {}
    details: dict[str, Any] = {}

    async def attack(name: str) -> None:
        own = os.path.join(root, name)  # a temp root per attack: its leftovers are its own
        os.mkdir(own)
        os.chmod(own, 0o755)
        async with gate:
            # kill_runner's parent is this `env call` process: it must survive and print the result
            result, code, seconds, stderr = await env_call(dirs[name], own)
            left = await asyncio.to_thread(processes_mentioning, own, 3.0)
            extra = {"reached": listeners.reached(), "runner_alive": bool(result), "left": left}
            observed[name] = classify(name, result, seconds, extra)
            details[name] = (str(result)[:600], code, round(seconds, 2), left)
            assert code in (0, 1), (name, code, result, stderr[-2000:])
            assert not left, (name, left)

    t0 = time.monotonic()
    try:
        await asyncio.gather(*(attack(n) for n in names))
    finally:
        stop.set()
        await watcher
    total = time.monotonic() - t0

    # the benign sandbox still has its state and answered throughout
    assert answered[0] > 10 and slowest[0] < 3.0, (answered, slowest)
    assert (await benign.state())["orders"][0]["id"] == "ord_0001"
    for name in names:
        threat = ATTACKS[name][0]
        assert observed[name] == ROWS[threat].outcome, (name, threat, ROWS[threat], details[name])
    assert not every_threat or set(THREATS) <= {ATTACKS[n][0] for n in names} | DANGEROUS
    assert total < 150, (
        details
        # a guard against an attack that hangs the run (each attack has its own timeouts), not a
        # speed target
    )


NEST_ATTACKS = ("fork_bomb", "tcp", "host_file", "kill_self", "kill_runner", "daemon")
"""The attacks whose defence a nest's session gets differently (see docs/sessions.md, recycled
sandboxes): the uid dropped in the child, the namespaces, tmpfs and cgroups inherited, a root
parent."""


async def test_hostile_envs_in_a_recycled_sandbox(
    root: str,
    listeners: Listeners,
    secret: str,
    tmp_path: Path,
    processes_mentioning,
    monkeypatch: pytest.MonkeyPatch,
):
    """The same attacks, through ``env call`` with ``recycle`` on: each runs in a nest's session,
    and is blocked or detected as in a plain sandbox."""
    if not (host_support().root and host_support().unshare):
        pytest.skip("recycling needs root and namespaces (CI runs as root)")
    monkeypatch.setenv("ENVKERNEL_PROCESS_RECYCLE", "1")
    recorder = Recorder(tmp_path / "run")
    values = {**listeners.values(), "secret": secret}
    dirs = {n: recorder.write_env(hostile_env(n, **values)) for n in NEST_ATTACKS}
    from envkernel_sample import shop_env

    runner = ProcessRunner(Settings(call_timeout=5, recycle=1))
    try:
        benign = await runner.open(shop_env(), seed=0)
        assert benign.confinement.get("nest"), benign.confinement
        names = list(NEST_ATTACKS)
        await _attack_all(
            benign, root, names, dirs, listeners, processes_mentioning, every_threat=False
        )
    finally:
        await runner.aclose()
    assert not processes_mentioning(root, 5.0), "processes left running after the attacks"


async def test_many_processes_share_one_memory_limit(root: str):
    """A memory bomb spread over several processes: the sandbox's memory cgroup kills inside."""
    if "memory" not in host_support().cgroups:
        pytest.skip("no memory cgroup here: the table says RLIMIT_AS per process only")
    code = textwrap.dedent("""
        import os, time
        def attack(env):
            kids = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    hog = b"y" * (160 << 20)
                    time.sleep(0.5)
                    os._exit(0)
                kids.append(pid)
            return [os.waitpid(p, 0)[1] for p in kids]
    """)
    spec = EnvSpec(
        id="spread",
        name="spread",
        tools=[ToolSpec(name="attack")],
        behaviour=CodeBehaviour(source=code),
    )
    runner = ProcessRunner(Settings(call_timeout=10, memory_mb=256))
    try:
        s = await runner.open(spec, seed=0)
        r = await s.call("attack", {})
        assert r.ok, r
        assert 9 in r.value, (
            f"no process was killed for memory: {r.value}"
        )  # SIGKILL from the OOM killer
        assert s._res.cgroup.oom_kills() >= 1
        assert (await s.call("attack", {})).ok  # the sandbox itself goes on
    finally:
        await runner.aclose()


# ------------------------------------------------------------------------------ through a run

PLUGIN = '''
"""Test-only synthesizer ``hostile``: one environment per attack (source hostile:NAME)."""
import json
from envkernel.hookspecs import hookimpl
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

SOURCES = json.loads(%r)


class Hostile:
    sources = ("hostile",)

    def synthesize(self, request, ctx=None):
        name = request.source
        if name == "benign":
            from envkernel_sample import shop_env
            return shop_env(seed=request.seed, source="benign")
        return EnvSpec(
            id="hostile-" + name.replace("_", "-"),
            name="hostile " + name,
            description="An environment whose only tool attacks its sandbox.",
            tools=[ToolSpec(name="attack", description="Does one hostile thing.")],
            behaviour=CodeBehaviour(source=SOURCES[name]),
            seed_sql="CREATE TABLE t (x INTEGER);",
        )


@hookimpl
def register_synthesizers(register):
    register("hostile", Hostile)
'''

MARKERS = {
    "spin": r"timeout",
    "deaf_spin": r"timeout",
    "fork_bomb": r"Resource temporarily unavailable",
    # RLIMIT_AS, or the call limit first on a loaded machine
    "memory_bomb": r"MemoryError|timeout|stopped and had no effect",
    "tcp": r"Permission denied|Network is unreachable",
    "udp": r"Network is unreachable|Permission denied",
    "unix": r"Permission denied",
    "host_file": r"PermissionError",
    "list_root": r"PermissionError",
    "huge_result": r"too_large",
    "huge_print": r"File too large",
    "huge_disk": r"No space left|File too large",
    "kill_self": r"crashed.*SIGKILL",
    "kill_runner": r"Operation not permitted",
    "daemon": r"daemon_started",
}
"""What the verifier's report must say about each rejected attack."""


def install_plugin(tmp_path: Path, sources: dict[str, str]) -> Path:
    """Build the test-only plugin distribution and install it into ``tmp_path/site``."""
    dist = tmp_path / "hostile-dist"
    pkg = dist / "envkernel_hostile_test"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PLUGIN % json.dumps(sources))
    (dist / "pyproject.toml").write_text(
        textwrap.dedent("""
        [project]
        name = "envkernel-hostile-test"
        version = "0.0.1"
        [project.entry-points.envkernel]
        hostile = "envkernel_hostile_test"
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
        [tool.hatch.build.targets.wheel]
        packages = ["envkernel_hostile_test"]
    """)
    )
    site = tmp_path / "site"
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed")
    cmd = [
        uv,
        "pip",
        "install",
        "--target",
        str(site),
        str(dist),
        "--no-deps",
        "--python",
        sys.executable,
    ]
    r = subprocess.run(
        [*cmd, "--offline"], capture_output=True, text=True, timeout=120, check=False
    )
    if r.returncode:  # hatchling not in uv's cache yet
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    return site


def test_hostile_envs_through_a_run(
    root: str, listeners: Listeners, secret: str, tmp_path: Path, processes_mentioning
):
    values = {**listeners.values(), "secret": secret}
    names = [
        n
        for n in ATTACKS
        if not (ATTACKS[n][0] in DANGEROUS and ROWS[ATTACKS[n][0]].outcome == "not blocked")
    ]
    site = install_plugin(tmp_path, {n: source(n, **values) for n in names})
    out = tmp_path / "out"
    envkernel = [sys.executable, "-c", "from envkernel.cli import main; main()"]
    sources = [a for n in [*names, "benign"] for a in ("--source", f"hostile:{n}")]
    env = {**os.environ, **ENV_OVERRIDES, "PYTHONPATH": str(site), "TMPDIR": root}
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            *envkernel,
            "--json-logs",
            "run",
            "--plugins",
            "+hostile,-sample",
            *sources,
            "--out",
            str(out),
            "--run-id",
            "hostile",
            "--no-progress",
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )
    seconds = time.monotonic() - t0
    assert proc.returncode in (0, 1), proc.stderr[-4000:]
    run = out / "hostile"
    summary = json.loads((run / "summary.json").read_text())
    assert "aborted" not in summary
    # the benign environment went through the whole pipeline beside the attacks
    assert summary["tasks"] > 0 and summary["rollouts"] > 0, summary
    assert (run / "envs" / "shop-v1" / "env.json").exists()
    # each attack was caught by the verifier, with a clear reason
    for name in names:
        d = run / "envs" / f"hostile-{name.replace('_', '-')}"
        rejected = d / "rejected.json"
        assert rejected.exists(), (
            f"{name} was not rejected: "
            f"{sorted(p.name for p in d.iterdir()) if d.exists() else 'no folder'}"
        )
        text = rejected.read_text()
        assert re.search(MARKERS[name], text), (name, text[:1500])
    assert listeners.reached() == []
    assert not processes_mentioning(root, 5.0), "processes left running after the run"
    assert not [p for p in Path(root).iterdir() if p.name.startswith("envk-p")], (
        "sandbox folders left behind"
    )
    assert seconds < 45, seconds


# ------------------------------------------------------------------------------ the table


def test_the_table_covers_every_attack_and_matches_the_docs():
    rows = protections(host_support())
    assert list(rows) == list(THREATS)
    assert {ATTACKS[n][0] for n in ATTACKS} == set(THREATS)
    for row in rows.values():
        assert row.outcome in ("blocked", "detected", "not blocked") and row.how
    doc = REPO / "docs" / "sandboxes.md"
    if not doc.exists():
        pytest.skip("docs/sandboxes.md is not written yet")
    text = doc.read_text()
    # the process runner's columns: as root (CI), not root with Landlock, not root without it
    columns = {
        1: protections(_full_support()),
        3: protections(_non_root(6)),
        4: protections(_non_root(0)),
    }
    for key, label in THREATS.items():
        line = next(
            (ln for ln in text.splitlines() if ln.startswith("|") and label in ln.lower()), None
        )
        assert line is not None, f"docs/sandboxes.md has no table row for {label!r}"
        cells = [c.strip().strip("*").lower() for c in line.strip().strip("|").split("|")]
        for i, rows in columns.items():
            assert cells[i].startswith(rows[key].outcome), (label, i, cells[i], rows[key].outcome)
    assert protections(_full_support(), isolate=False) == protections(_non_root(0))


def _full_support():
    from envkernel_process.confine import HostSupport

    return HostSupport(
        root=True,
        unshare=("unshare", "-n", "-m", "--"),
        cgroups={"memory": (1, "/"), "pids": (1, "/"), "cpu": (1, "/")},
        landlock=7,
        seccomp=True,
    )


def _non_root(landlock: int):
    from envkernel_process.confine import HostSupport

    return HostSupport(root=False, landlock=landlock, seccomp=True)


def test_this_host_is_the_ci_host():
    """On CI (root, this kind of machine) every protection of the table is in force."""
    s = host_support()
    if not s.root:
        pytest.skip("not root: the table's non-root column applies")
    assert s.unshare and s.landlock >= 6 and s.seccomp and {"memory", "pids"} <= set(s.cgroups), (
        s.as_dict()
    )
    assert {k: v.outcome for k, v in protections(s).items()} == {
        k: v.outcome for k, v in protections(_full_support()).items()
    }
