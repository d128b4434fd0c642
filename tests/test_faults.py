"""Faults (issue 18), made for real: a nats-server this test owns is killed, restarted or filled; a
worker is killed with SIGKILL; a run's own process is killed; the run folder's disk is full; forged
events arrive; a client without credentials knocks. Every server listens on loopback only."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from envkernel_bus import Bus, EmbeddedServer, find_server_binary
from envkernel_schemas import Handled, RunEnding, encode

pytestmark = pytest.mark.timeout(120)
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Any]:
    """``start()`` -> (server, url): a nats-server on a fixed free loopback port, its store in tmp_path
    (start it again after a kill: same port, same store). Stopped at the end."""
    port, servers = _free_port(), []

    def start() -> tuple[EmbeddedServer, str]:
        server = EmbeddedServer(tmp_path / "own-nats", port=port)
        url = server.start()
        servers.append(server)
        return server, url

    yield start
    for s in servers:
        s.stop()


def _kill(server: EmbeddedServer) -> None:
    proc = server._proc
    assert proc is not None
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _wait_lines(path: Path, proc: subprocess.Popen[str], n: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and len(path.read_bytes().splitlines()) >= n):
        assert proc.poll() is None, f"the run ended before {path.name} had {n} lines"
        assert time.monotonic() < deadline, f"{path.name} had not {n} lines in {timeout} s"
        time.sleep(0.05)


def _agree(run_dir: Path) -> dict[str, Any]:
    """The summary and the JSONL files agree, and no line is torn or duplicated."""
    s = json.loads((run_dir / "summary.json").read_text())
    for name, field in (("tasks.jsonl", "tasks"), ("rollouts.jsonl", "rollouts"), ("rejected.jsonl", "tasks_rejected")):
        path = run_dir / name
        lines = path.read_text().splitlines() if path.exists() else []
        rows = [json.loads(x) for x in lines]  # a torn line would not parse
        assert len(rows) == s[field], (name, len(rows), s[field])
        key = (lambda r: r["id"]) if name == "tasks.jsonl" else (lambda r: json.dumps(r, sort_keys=True))
        assert len({key(r) for r in rows}) == len(rows), f"duplicated lines in {name}"
    return s


# --- a bus that can come and go ---------------------------------------------------------------------

def test_a_server_restart_mid_run_loses_and_duplicates_nothing(envk, own_server) -> None:
    clean = envk.run("--seed", "3", "--set", "chains.tasks_per_env=12", run_id="clean")
    assert clean.proc.returncode == 0, clean.proc.stderr[-3000:]
    server, url = own_server()
    proc = envk.popen("run", "--source", "sample", "--nats-url", url, "--out", "out", "--run-id", "restart", "--no-progress", "--seed", "3",
                      "--set", "chains.tasks_per_env=12", env={"ENVKERNEL_ACK_WAIT": "5"}, stdout=subprocess.DEVNULL,
                      stderr=(envk.cwd / "restart.log").open("w"))
    run_dir = envk.cwd / "out" / "restart"
    try:
        _wait_lines(run_dir / "rollouts.jsonl", proc, 4)
        _kill(server)
        time.sleep(1.0)
        own_server()  # the same port and store
        assert proc.wait(timeout=90) == 0, (envk.cwd / "restart.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    s = _agree(run_dir)
    c = clean.summary
    assert (s["tasks"], s["rollouts"], s["groups"], s["failures"], s["infra_failures"]) == (c["tasks"], c["rollouts"], c["groups"], 0, 0)
    ids = lambda d: sorted(json.loads(x)["id"] for x in (d / "tasks.jsonl").read_text().splitlines())  # noqa: E731
    assert ids(run_dir) == ids(clean.dir)
    assert "reconnected to NATS" in (envk.cwd / "restart.log").read_text()


def test_a_bus_gone_past_the_limit_ends_the_run_with_exit_3_saying_so(envk, own_server) -> None:
    server, url = own_server()
    proc = envk.popen("run", "--source", "sample", "--nats-url", url, "--out", "out", "--run-id", "gone", "--no-progress", "-G", "16",
                      env={"ENVKERNEL_BUS_LOST_SECONDS": "2"}, stdout=subprocess.DEVNULL, stderr=(envk.cwd / "gone.log").open("w"))
    run_dir = envk.cwd / "out" / "gone"
    try:
        _wait_lines(run_dir / "rollouts.jsonl", proc, 1)
        _kill(server)
        t0 = time.monotonic()
        assert proc.wait(timeout=60) == 3, (envk.cwd / "gone.log").read_text()[-3000:]
        assert time.monotonic() - t0 < 30
    finally:
        if proc.poll() is None:
            proc.kill()
    s = _agree(run_dir)
    assert s["exit_code"] == 3 and "lost the bus" in s["aborted"] and "unreachable for more than 2 s" in s["aborted"], s["aborted"]


def test_a_worker_killed_mid_run_loses_nothing(envk, nats_server: str, wait_for_log) -> None:
    """A worker that serves ``process`` (the run leases sandboxes living in it) and the policies is
    killed with SIGKILL: its sandboxes' rollouts are retried elsewhere, its unacked events come back
    after the (short) ack_wait, and the run ends with the clean run's outputs."""
    env = {"ENVKERNEL_ACK_WAIT": "3"}
    clean = envk.run("--seed", "5", "-G", "4", "--set", "chains.tasks_per_env=16", run_id="clean5")
    assert clean.proc.returncode == 0
    log = envk.cwd / "worker.log"
    worker = envk.popen("--json-logs", "worker", "--plugins", "process,baselines,traceoutcome", "--nats-url", nats_server, env=env,
                        stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        wait_for_log(log, "worker serving", worker)
        proc = envk.popen("run", "--source", "sample", "--nats-url", nats_server, "--out", "out", "--run-id", "wk", "--no-progress", "--seed", "5",
                          "-G", "4", "--set", "chains.tasks_per_env=16", env=env, stdout=subprocess.DEVNULL, stderr=(envk.cwd / "wk.log").open("w"))
        run_dir = envk.cwd / "out" / "wk"
        _wait_lines(run_dir / "rollouts.jsonl", proc, 8)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert proc.wait(timeout=90) == 0, (envk.cwd / "wk.log").read_text()[-3000:]
    finally:
        for p in (worker, locals().get("proc")):
            if p is not None and p.poll() is None:
                p.kill()
    s = _agree(run_dir)
    c = clean.summary
    assert (s["tasks"], s["rollouts"], s["groups"], s["failures"], s["infra_failures"]) == (c["tasks"], c["rollouts"], c["groups"], 0, 0)
    rows = lambda d: sorted((r["task_id"], r["trajectory"]["index"]) for r in map(json.loads, (d / "rollouts.jsonl").read_text().splitlines()))  # noqa: E731
    assert rows(run_dir) == rows(clean.dir)


def test_a_worker_stops_on_sigterm_while_its_server_is_down(envk, own_server, wait_for_log) -> None:
    server, url = own_server()
    log = envk.cwd / "w.log"
    worker = envk.popen("--json-logs", "worker", "--plugins", "baselines", "--nats-url", url, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        wait_for_log(log, "worker serving", worker)
        _kill(server)
        wait_for_log(log, "lost the connection to NATS", worker)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()


# --- resources run out loudly ---------------------------------------------------------------------

def test_a_full_disk_under_the_run_folder_aborts_with_exit_3_and_no_torn_line(envk) -> None:
    """``tasks.jsonl`` is /dev/full: every write fails with ENOSPC, as on a full disk."""
    run_dir = envk.cwd / "out" / "full"
    run_dir.mkdir(parents=True)
    (run_dir / "tasks.jsonl").symlink_to("/dev/full")
    run = envk.run(run_id="full")
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    s = run.summary
    assert s["exit_code"] == 3 and "No space left on device" in s["aborted"] and "disk holding the run folder is full" in s["aborted"]
    for name in ("rollouts.jsonl", "rejected.jsonl", "failures.jsonl"):
        if (run_dir / name).exists():
            [json.loads(x) for x in (run_dir / name).read_text().splitlines()]


def test_a_full_jetstream_store_aborts_the_run_naming_the_cause(envk, tmp_path: Path) -> None:
    conf = tmp_path / "small.conf"
    conf.write_text(f'jetstream {{ store_dir: "{tmp_path / "js"}", max_file_store: 262144 }}\nmax_payload: 8388608\n')
    port = _free_port()
    server = subprocess.Popen([find_server_binary(), "-c", str(conf), "-a", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        run = envk.run("--nats-url", f"nats://127.0.0.1:{port}", "-G", "16", run_id="store", timeout=100)
    finally:
        server.kill()
        server.wait()
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    assert "store is full" in run.summary["aborted"] and "Free disk space" in run.summary["aborted"], run.summary["aborted"]
    _agree(run.dir)


# --- no orphans -----------------------------------------------------------------------------------

def test_a_killed_run_takes_its_embedded_server_with_it(envk, processes_mentioning) -> None:
    proc = envk.popen("run", "--out", "out", "--run-id", "orphan", "--no-progress", "-G", "16", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = str(envk.cwd / "out" / "orphan" / "nats")
    try:
        deadline = time.monotonic() + 30
        while not processes_mentioning(store):
            assert proc.poll() is None and time.monotonic() < deadline, "the embedded server did not start"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert processes_mentioning(store, wait=5) == [], "the embedded nats-server outlived its killed run"


# --- a bus that lets no one in --------------------------------------------------------------------

@pytest.mark.parametrize("creds", [{"ENVKERNEL_NATS_TOKEN": "tok-7f3a9c1e"}, {"ENVKERNEL_NATS_USER": "envk", "ENVKERNEL_NATS_PASSWORD": "pw-51d0b2aa"}])
def test_a_client_without_credentials_can_neither_read_nor_publish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, creds: dict[str, str]) -> None:
    for k, v in creds.items():
        monkeypatch.setenv(k, v)
    secret = next(v for k, v in creds.items() if k != "ENVKERNEL_NATS_USER")
    with EmbeddedServer(tmp_path / "nats") as server:
        host, port = server.url.rsplit("/", 1)[1].split(":")

        async def scenario() -> None:
            with pytest.raises(Exception, match="(?i)authorization"):  # the client library refuses to go on
                await nats.connect(server.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2)
            bus = await Bus.connect(server.url)  # with the credentials (from the environment)
            got: list[bytes] = []

            async def on_msg(m: Any) -> None:
                got.append(m.data)

            sub = await bus.nc.subscribe("envk.ev.>", cb=on_msg)
            # a raw client without credentials: subscribe and publish, then see what the server says
            r, w = await asyncio.open_connection(host, int(port))
            await r.readline()  # INFO
            w.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB envk.ev.> 1\r\nPUB envk.ev.x.run.started 5\r\nhello\r\nPING\r\n')
            await w.drain()
            answer = await asyncio.wait_for(r.read(4096), 5)
            assert b"Authorization Violation" in answer and b"PONG" not in answer, answer
            assert await asyncio.wait_for(r.read(), 5) == b""  # the server closed the connection
            await bus.publish_wait("envk.ev.authed.run.started", b"x", "authed-1")  # the authenticated client works
            await asyncio.sleep(0.3)
            assert got == [b"x"], got  # the raw client's message never arrived
            await sub.unsubscribe()
            await bus.close()

        asyncio.run(scenario())
    for path in (tmp_path / "nats").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"the secret was written to {path}"


def test_a_run_with_a_token_keeps_it_out_of_files_and_logs(envk) -> None:
    token = "tok-c0ffee-5e1f"
    run = envk.run(run_id="authed", env={"ENVKERNEL_NATS_TOKEN": token})
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert token not in run.proc.stderr + run.proc.stdout
    for path in run.dir.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), f"the token was written to {path}"


def test_forged_events_neither_end_nor_hang_a_run(envk, nats_server: str) -> None:
    """A well-formed ``kernel.handled`` naming ids the run never saw, and a ``run.ending`` on a policy's
    subject: both are ignored, and the run ends as a clean one of the same seed."""
    clean = envk.run("--seed", "9", run_id="clean9")

    async def scenario() -> int:
        bus = await Bus.connect(nats_server)
        sent = asyncio.Event()

        async def on_gated(msg: Any) -> None:
            if sent.is_set():
                return
            sent.set()
            forged = Handled(run="forged", id="f" * 24, parent="0" * 24, time=time.time(), handler="reference",
                             events=[f"{i:024x}" for i in range(500)], children=[0] * 500)
            await bus.publish_wait("envk.ev.forged.kernel.handled", encode(forged), forged.id)
            ending = RunEnding(run="forged", id="e" * 24, iteration=0, time=time.time())
            await bus.publish_wait("envk.ev.forged.run.ending.reference", encode(ending), ending.id)

        sub = await bus.nc.subscribe("envk.ev.forged.task.gated", cb=on_gated)
        proc = await asyncio.create_subprocess_exec(
            ENVKERNEL, "run", "--source", "sample",
            "--nats-url", nats_server, "--out", "out", "--run-id", "forged", "--no-progress", "--seed", "9",
            cwd=envk.cwd, env=envk.env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 100)
        (envk.cwd / "forged.log").write_bytes(err)
        await sub.unsubscribe()
        await bus.close()
        assert sent.is_set()
        return proc.returncode or 0

    assert asyncio.run(scenario()) == 0, (envk.cwd / "forged.log").read_text()[-3000:]
    run_dir = envk.cwd / "out" / "forged"
    s = _agree(run_dir)
    assert (s["tasks"], s["rollouts"], s["groups"]) == (clean.summary["tasks"], clean.summary["rollouts"], clean.summary["groups"])
    assert s["undecodable_events"] == 1  # the misrouted run.ending
    import pyarrow.parquet as pq

    assert pq.read_table(run_dir / "rl.parquet").num_rows == len((run_dir / "rl.jsonl").read_text().splitlines()) == s["tasks"]


def test_a_worker_releases_a_finished_runs_sandboxes(envk, nats_server: str, worker_process, processes_mentioning) -> None:
    with worker_process("process,baselines,traceoutcome"):
        (pid,) = processes_mentioning("worker --plugins process,baselines,traceoutcome")
        run = envk.run("--nats-url", nats_server, "-G", "8", run_id="release")
        assert run.proc.returncode == 0, run.proc.stderr[-3000:]
        def sandboxes() -> list[int]:  # the executors; not the runner's zygote (its child, which forks them)
            found = processes_mentioning(f"--parent-pid {pid} ")
            return [p for p in found if not (_ppid(p) == pid and "--zygote" in _cmdline(p))]

        deadline = time.monotonic() + 10
        while sandboxes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandboxes() == [], "the idle worker kept the finished run's sandboxes"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def test_a_cluster_node_killed_mid_run_loses_nothing(envk, tmp_path: Path) -> None:
    """A 3-node cluster on loopback, the stream replicated (R3): the node the run connected to first
    is killed with SIGKILL mid-run and stays down; the run ends with a clean run's outputs."""
    from envkernel_bus import LocalCluster

    cluster = LocalCluster(tmp_path / "cluster")
    try:
        cluster.wait_ready()
        proc = envk.popen("run", "--source", "sample", "--nats-url", cluster.url, "--out", "out", "--run-id", "node", "--no-progress", "--seed", "4",
                          env={"ENVKERNEL_STREAM_REPLICAS": "3", "ENVKERNEL_ACK_WAIT": "5"}, stdout=subprocess.DEVNULL,
                          stderr=(envk.cwd / "node.log").open("w"))
        run_dir = envk.cwd / "out" / "node"
        try:
            _wait_lines(run_dir / "rollouts.jsonl", proc, 4)
            cluster.kill(0)
            assert proc.wait(timeout=90) == 0, (envk.cwd / "node.log").read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        cluster.stop()
    clean = envk.run("--seed", "4", run_id="clean4")
    s, c = _agree(run_dir), clean.summary
    assert (s["tasks"], s["rollouts"], s["groups"], s["failures"], s["infra_failures"]) == (c["tasks"], c["rollouts"], c["groups"], 0, 0)
    ids = lambda d: sorted(json.loads(x)["id"] for x in (d / "tasks.jsonl").read_text().splitlines())  # noqa: E731
    assert ids(run_dir) == ids(clean.dir)
