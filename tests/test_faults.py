"""Faults (issue 18), made for real: a nats-server this test owns is killed, restarted or filled; a
worker is killed with SIGKILL; a run's own process is killed and resumed; the run folder's disk is
full; forged events arrive; a client without credentials (or the wrong nkey, or no CA) knocks; a
host of a 3-node cluster is cut off. Every server listens on loopback, or on addresses inside
network namespaces these tests create."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from envkernel_bus import Bus, BusError, EmbeddedServer, ServerError, find_server_binary
from envkernel_schemas import Handled, RunEnding, encode

pytestmark = pytest.mark.timeout(120)
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Any]:
    """``start()`` -> (server, url): a nats-server on a fixed free loopback port, its store in
    tmp_path (start it again after a kill: same port, same store). Stopped at the end."""
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
    for name, field in (
        ("tasks.jsonl", "tasks"),
        ("rollouts.jsonl", "rollouts"),
        ("rejected.jsonl", "tasks_rejected"),
    ):
        path = run_dir / name
        lines = path.read_text().splitlines() if path.exists() else []
        rows = [json.loads(x) for x in lines]  # a torn line would not parse
        assert len(rows) == s[field], (name, len(rows), s[field])
        key = (
            (lambda r: r["id"])
            if name == "tasks.jsonl"
            else (lambda r: json.dumps(r, sort_keys=True))
        )
        assert len({key(r) for r in rows}) == len(rows), f"duplicated lines in {name}"
    return s


# --- a bus that can come and go
# ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean3(envk_factory: Any) -> Any:
    """A clean run of seed 3 (12 tasks), the reference of the restart and resume tests."""
    clean = envk_factory("clean3").run(
        "--seed", "3", "--set", "chains.tasks_per_env=12", run_id="clean"
    )
    assert clean.proc.returncode == 0, clean.proc.stderr[-3000:]
    return clean


def _same_outputs(run_dir: Path, clean: Any) -> dict[str, Any]:
    """``run_dir`` holds what the clean run holds: the same counts, tasks, rollouts and export rows,
    each once."""
    s, c = _agree(run_dir), clean.summary
    assert (s["tasks"], s["rollouts"], s["groups"], s["failures"], s["infra_failures"]) == (
        c["tasks"],
        c["rollouts"],
        c["groups"],
        0,
        0,
    )

    def rows(d: Path, name: str, key: Callable[[Any], Any]) -> list[Any]:
        return sorted(key(json.loads(x)) for x in (d / name).read_text().splitlines())

    for name, key in (
        ("tasks.jsonl", lambda r: r["id"]),
        ("rollouts.jsonl", lambda r: (r["task_id"], r["trajectory"]["index"])),
        ("sft.jsonl", lambda r: (r["metadata"]["task_id"], r["metadata"]["index"])),
        ("rl.jsonl", lambda r: json.dumps(r, sort_keys=True)),
    ):
        assert rows(run_dir, name, key) == rows(clean.dir, name, key), name
    return s


def test_a_server_restart_mid_run_loses_and_duplicates_nothing(envk, own_server, clean3) -> None:
    server, url = own_server()
    proc = envk.popen(
        "run",
        "--source",
        "sample",
        "--nats-url",
        url,
        "--out",
        "out",
        "--run-id",
        "restart",
        "--no-progress",
        "--seed",
        "3",
        "--set",
        "chains.tasks_per_env=12",
        env={"ENVKERNEL_ACK_WAIT": "5"},
        stdout=subprocess.DEVNULL,
        stderr=(envk.cwd / "restart.log").open("w"),
    )
    run_dir, log = envk.cwd / "out" / "restart", envk.cwd / "restart.log"
    try:
        # The moment that hung a run: the sampler has just finished (its last PubAcks are in flight)
        # while
        # rollouts' sandbox calls are pending.
        deadline = time.monotonic() + 60
        while '"phrasings"' not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.002)
        _kill(server)
        time.sleep(1.0)
        own_server()  # the same port and store
        try:
            rc = proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail("the run hung after the server restart:\n" + log.read_text()[-3000:])
        assert rc == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    _same_outputs(run_dir, clean3)
    assert "reconnected to NATS" in (envk.cwd / "restart.log").read_text()


def test_a_bus_gone_past_the_limit_ends_the_run_with_exit_3_saying_so(envk, own_server) -> None:
    server, url = own_server()
    proc = envk.popen(
        "run",
        "--source",
        "sample",
        "--nats-url",
        url,
        "--out",
        "out",
        "--run-id",
        "gone",
        "--no-progress",
        "-G",
        "16",
        env={"ENVKERNEL_BUS_LOST_SECONDS": "2"},
        stdout=subprocess.DEVNULL,
        stderr=(envk.cwd / "gone.log").open("w"),
    )
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
    assert (
        s["exit_code"] == 3
        and "lost the bus" in s["aborted"]
        and "unreachable for more than 2 s" in s["aborted"]
    ), s["aborted"]


def test_a_worker_killed_mid_run_loses_nothing(envk, nats_server: str, wait_for_log) -> None:
    """A worker that serves ``process`` (the run leases sandboxes living in it) and the policies is
    killed with SIGKILL: its sandboxes' rollouts are retried elsewhere, its unacked events come back
    after the (short) ack_wait, and the run ends with the clean run's outputs."""
    env = {"ENVKERNEL_ACK_WAIT": "3"}
    clean = envk.run("--seed", "5", "-G", "4", "--set", "chains.tasks_per_env=16", run_id="clean5")
    assert clean.proc.returncode == 0
    log = envk.cwd / "worker.log"
    worker = envk.popen(
        "--json-logs",
        "worker",
        "--plugins",
        "process,baselines,traceoutcome",
        "--nats-url",
        nats_server,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    try:
        wait_for_log(log, "worker serving", worker)
        proc = envk.popen(
            "run",
            "--source",
            "sample",
            "--nats-url",
            nats_server,
            "--out",
            "out",
            "--run-id",
            "wk",
            "--no-progress",
            "--seed",
            "5",
            "-G",
            "4",
            "--set",
            "chains.tasks_per_env=16",
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(envk.cwd / "wk.log").open("w"),
        )
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
    assert (s["tasks"], s["rollouts"], s["groups"], s["failures"], s["infra_failures"]) == (
        c["tasks"],
        c["rollouts"],
        c["groups"],
        0,
        0,
    )

    def rows(d: Path) -> list[tuple[Any, Any]]:
        return sorted(
            (r["task_id"], r["trajectory"]["index"])
            for r in map(json.loads, (d / "rollouts.jsonl").read_text().splitlines())
        )

    assert rows(run_dir) == rows(clean.dir)


SLOW_OPENS = """
import asyncio, sys
from envkernel_bus import Bus
from envkernel.sandbox import SandboxService

class SlowToOpen:  # a runner still starting the sandbox when its process is killed (a slow \
container start)
    async def open(self, env, seed):
        await asyncio.sleep(600)

async def main():
    svc = SandboxService(await Bus.connect(sys.argv[1]), "slowopen", SlowToOpen())
    await svc.start()
    print("serving", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_an_open_in_flight_to_a_process_that_dies_fails_at_once(nats_server: str) -> None:
    """The process that took an open is killed (SIGKILL) before it answers: the open fails within
    seconds as a SandboxError (infra: the rollout is retried elsewhere), not after its 15 s
    timeout."""
    from envkernel.errors import SandboxError
    from envkernel.sandbox import open_sandbox
    from envkernel_sample import shop_env

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SLOW_OPENS, nats_server, stdout=asyncio.subprocess.PIPE
    )
    bus = await Bus.connect(nats_server)
    try:
        assert (
            proc.stdout is not None
            and (await asyncio.wait_for(proc.stdout.readline(), 30)).strip() == b"serving"
        )
        opening = asyncio.ensure_future(open_sandbox(bus, "slowopen", shop_env(), timeout=15))
        await asyncio.sleep(1.0)
        assert not opening.done()
        proc.kill()
        t0 = time.monotonic()
        with pytest.raises(
            SandboxError,
            match="no sandbox from runner 'slowopen': the process that took .* is gone",
        ):
            await opening
        assert time.monotonic() - t0 < 6
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        await bus.close()


def test_a_worker_stops_on_sigterm_while_its_server_is_down(envk, own_server, wait_for_log) -> None:
    server, url = own_server()
    log = envk.cwd / "w.log"
    worker = envk.popen(
        "--json-logs",
        "worker",
        "--plugins",
        "baselines",
        "--nats-url",
        url,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    try:
        wait_for_log(log, "worker serving", worker)
        _kill(server)
        wait_for_log(log, "lost the connection to NATS", worker)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()


# --- no orphans, and resume
# ------------------------------------------------------------------------


def test_a_killed_run_leaves_no_sandbox_and_resumes_to_a_clean_runs_result(
    envk, clean3, processes_mentioning
) -> None:
    """kill -9 of ``envkernel run``: within seconds its embedded server and its sandboxes'
    processes, folders and cgroups are gone (parent-death signals, the process runner's reaper);
    ``envkernel run --resume`` then ends with the clean run's outputs, each once."""
    from envkernel_process.confine import OWNER_FILE, host_support

    env = {"ENVKERNEL_ACK_WAIT": "3"}
    proc = envk.popen(
        "run",
        "--source",
        "sample",
        "--out",
        "out",
        "--run-id",
        "killed",
        "--no-progress",
        "--seed",
        "3",
        "--set",
        "chains.tasks_per_env=12",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(envk.cwd / "killed.log").open("w"),
    )
    run_dir = envk.cwd / "out" / "killed"

    def sandboxes() -> list[Path]:
        found = []
        for d in Path(tempfile.gettempdir()).glob("envk-p*"):
            try:
                if (d / OWNER_FILE).read_text().startswith(f"{proc.pid} "):
                    found.append(d)
            except OSError:
                pass
        return found

    try:
        _wait_lines(run_dir / "rollouts.jsonl", proc, 4)
        folders = sandboxes()
        cgroups = [
            Path(base, "envk-" + d.name.split("-")[1])
            for d in folders
            for _v, base in host_support().cgroups.values()
        ]
        assert folders and (all(c.is_dir() for c in cgroups) or not host_support().cgroups), (
            folders,
            cgroups,
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 5
    while (sandboxes() or any(c.exists() for c in cgroups)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandboxes() == [] and [c for c in cgroups if c.exists()] == [], (
        "the killed run's sandbox folders or cgroups remain"
    )
    assert processes_mentioning(f"--parent-pid {proc.pid} ") == [], (
        "the killed run's sandbox processes remain"
    )
    assert processes_mentioning(str(run_dir / "nats"), wait=5) == [], (
        "the embedded nats-server outlived its killed run"
    )
    assert not (run_dir / "summary.json").exists()
    resumed = envk("run", "--resume", str(run_dir), "--no-progress", env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "its stream is replayed" in resumed.stderr
    s = _same_outputs(run_dir, clean3)
    assert s["resumed"] is True
    import pyarrow.parquet as pq

    assert pq.read_table(run_dir / "rl.parquet").num_rows == s["tasks"]
    again = envk("run", "--resume", str(run_dir), env=env)
    assert again.returncode == 2 and "the run finished" in again.stderr, again.stderr[-2000:]


# --- resources run out loudly ---------------------------------------------------------------------


def test_a_full_disk_under_the_run_folder_aborts_with_exit_3_and_no_torn_line(envk) -> None:
    """``tasks.jsonl`` is /dev/full: every write fails with ENOSPC, as on a full disk."""
    run_dir = envk.cwd / "out" / "full"
    run_dir.mkdir(parents=True)
    (run_dir / "tasks.jsonl").symlink_to("/dev/full")
    run = envk.run(run_id="full")
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    s = run.summary
    assert (
        s["exit_code"] == 3
        and "No space left on device" in s["aborted"]
        and "disk holding the run folder is full" in s["aborted"]
    )
    for name in ("rollouts.jsonl", "rejected.jsonl", "failures.jsonl"):
        if (run_dir / name).exists():
            [json.loads(x) for x in (run_dir / name).read_text().splitlines()]


def test_a_full_jetstream_store_aborts_the_run_naming_the_cause(envk, tmp_path: Path) -> None:
    conf = tmp_path / "small.conf"
    conf.write_text(
        f'jetstream {{ store_dir: "{tmp_path / "js"}", max_file_store: 262144 '
        f"}}\nmax_payload: 8388608\n"
    )
    port = _free_port()
    server = subprocess.Popen(
        [find_server_binary(), "-c", str(conf), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        run = envk.run(
            "--nats-url", f"nats://127.0.0.1:{port}", "-G", "16", run_id="store", timeout=100
        )
    finally:
        server.kill()
        server.wait()
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    assert (
        "store is full" in run.summary["aborted"] and "Free disk space" in run.summary["aborted"]
    ), run.summary["aborted"]
    _agree(run.dir)


# --- a bus that lets no one in --------------------------------------------------------------------


@pytest.mark.parametrize(
    "creds",
    [
        {"ENVKERNEL_NATS_TOKEN": "tok-7f3a9c1e"},
        {"ENVKERNEL_NATS_USER": "envk", "ENVKERNEL_NATS_PASSWORD": "pw-51d0b2aa"},
    ],
)
def test_a_client_without_credentials_can_neither_read_nor_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, creds: dict[str, str]
) -> None:
    for k, v in creds.items():
        monkeypatch.setenv(k, v)
    secret = next(v for k, v in creds.items() if k != "ENVKERNEL_NATS_USER")
    with EmbeddedServer(tmp_path / "nats") as server:
        host, port = server.url.rsplit("/", 1)[1].split(":")

        async def scenario() -> None:
            with pytest.raises(
                Exception, match="(?i)authorization"
            ):  # the client library refuses to go on
                await nats.connect(
                    server.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2
                )
            bus = await Bus.connect(server.url)  # with the credentials (from the environment)
            got: list[bytes] = []

            async def on_msg(m: Any) -> None:
                got.append(m.data)

            sub = await bus.nc.subscribe("envk.ev.>", cb=on_msg)
            # a raw client without credentials: subscribe and publish, then see what the server says
            r, w = await asyncio.open_connection(host, int(port))
            await r.readline()  # INFO
            w.write(
                b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB envk.ev.> 1\r\nPUB '
                b"envk.ev.x.run.started 5\r\nhello\r\nPING\r\n"
            )
            await w.drain()
            answer = await asyncio.wait_for(r.read(4096), 5)
            assert b"Authorization Violation" in answer and b"PONG" not in answer, answer
            assert await asyncio.wait_for(r.read(), 5) == b""  # the server closed the connection
            await bus.publish_wait(
                "envk.ev.authed.run.started", b"x", "authed-1"
            )  # the authenticated client works
            await asyncio.sleep(0.3)
            assert got == [b"x"], got  # the raw client's message never arrived
            await sub.unsubscribe()
            await bus.close()

        asyncio.run(scenario())
    for path in (tmp_path / "nats").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"the secret was written to {path}"


def _tls_and_nkeys(d: Path) -> dict[str, str]:
    """A CA, a server certificate it signed (for 127.0.0.1 and localhost) and an nkey user seed,
    made now (``cryptography``, ``nkeys``); returns the environment that has the server and its
    clients use them."""
    import datetime
    import ipaddress
    import os

    import nkeys
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def cert(name: str, key: Any, issuer: Any, signer: Any, ca: bool) -> x509.Certificate:
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        return b.sign(signer, hashes.SHA256())

    ca_key, srv_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = cert(
        "envk test CA",
        ca_key,
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envk test CA")]),
        ca_key,
        True,
    )
    srv = cert("127.0.0.1", srv_key, ca.subject, ca_key, False)
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    (d / "ca.pem").write_bytes(pem(ca))
    (d / "server.pem").write_bytes(pem(srv))
    (d / "server.key").write_bytes(
        srv_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (d / "user.nk").write_bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))
    (d / "other.nk").write_bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))
    return {
        "ENVKERNEL_NATS_NKEY_SEED": str(d / "user.nk"),
        "ENVKERNEL_NATS_TLS_CERT": str(d / "server.pem"),
        "ENVKERNEL_NATS_TLS_KEY": str(d / "server.key"),
        "ENVKERNEL_NATS_TLS_CA": str(d / "ca.pem"),
    }


def test_nkeys_and_tls_let_in_only_the_right_key_and_say_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _tls_and_nkeys(tmp_path / "creds")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with EmbeddedServer(tmp_path / "nats") as server:
        host, port = server.url.rsplit("/", 1)[1].split(":")

        async def refused(match: str, **change: str | None) -> None:
            with monkeypatch.context() as m:
                for k, v in change.items():
                    m.delenv(k) if v is None else m.setenv(k, v)
                with pytest.raises(BusError, match=match):
                    await Bus.connect(server.url, timeout=3)

        async def scenario() -> None:
            bus = await Bus.connect(server.url)  # the right seed, over TLS verified by the CA
            await bus.publish_wait("envk.ev.tls.run.started", b"x", "tls-1")
            await bus.close()
            await refused(
                "refused the credentials",
                ENVKERNEL_NATS_NKEY_SEED=env["ENVKERNEL_NATS_NKEY_SEED"].replace("user", "other"),
            )
            await refused("refused the credentials", ENVKERNEL_NATS_NKEY_SEED=None)
            await refused(
                "could not be verified: set ENVKERNEL_NATS_TLS_CA", ENVKERNEL_NATS_TLS_CA=None
            )
            await refused(
                "is not an nkey seed", ENVKERNEL_NATS_NKEY_SEED=env["ENVKERNEL_NATS_TLS_CA"]
            )
            await refused(
                "ENVKERNEL_NATS_NKEY_SEED=.*no such readable file",
                ENVKERNEL_NATS_NKEY_SEED=str(tmp_path / "missing.nk"),
            )
            r, w = await asyncio.open_connection(
                host, int(port)
            )  # plain TCP: the server talks TLS only
            await r.readline()
            w.write(
                b'CONNECT {"verbose":false}\r\nPUB envk.ev.x.run.started 5\r\nhello\r\nPING\r\n'
            )
            await w.drain()
            answer = await asyncio.wait_for(r.read(4096), 5)
            assert b"PONG" not in answer, answer
            w.close()

        asyncio.run(scenario())
    seed = Path(env["ENVKERNEL_NATS_NKEY_SEED"]).read_bytes()
    for path in (tmp_path / "nats").rglob("*"):
        if path.is_file():
            assert seed not in path.read_bytes(), f"the seed was written to {path}"
    assert "nkey: U" in (tmp_path / "nats" / "nats-server.conf").read_text()
    with monkeypatch.context() as m:
        m.setenv("ENVKERNEL_NATS_TLS_KEY", "")
        with pytest.raises(
            ServerError, match="set both ENVKERNEL_NATS_TLS_CERT and ENVKERNEL_NATS_TLS_KEY"
        ):
            EmbeddedServer(tmp_path / "nats2").start()


def test_a_worker_a_run_and_a_tap_over_tls_with_an_nkey(
    envk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_for_log
) -> None:
    """The seed (a secret) stays out of the run's files, its logs and the worker's; a tap without it
    is refused, saying why."""
    env = _tls_and_nkeys(tmp_path / "creds")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with EmbeddedServer(tmp_path / "nats") as server:
        log = envk.cwd / "worker.log"
        worker = envk.popen(
            "--json-logs",
            "--log-level",
            "debug",
            "worker",
            "--plugins",
            "baselines,traceoutcome",
            "--nats-url",
            server.url,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        try:
            wait_for_log(log, "worker serving", worker)
            run = envk.run(
                "--nats-url", server.url, "--set", "chains.tasks_per_env=4", run_id="tls", env=env
            )
            assert run.proc.returncode == 0, run.proc.stderr[-3000:]
            tapped = envk(
                "tap",
                "envk.ev.tls.task.gated",
                "--from-start",
                "--nats-url",
                server.url,
                "--json",
                "--limit",
                "2",
                env=env,
                timeout=60,
            )
            assert tapped.returncode == 0 and len(tapped.stdout.splitlines()) == 2, tapped.stderr[
                -2000:
            ]
            plain = envk(
                "tap",
                "--from-start",
                "--nats-url",
                server.url,
                "--limit",
                "1",
                env={**env, "ENVKERNEL_NATS_NKEY_SEED": ""},
                timeout=60,
            )
            assert plain.returncode == 3 and "refused the credentials" in plain.stderr, (
                plain.stderr[-2000:]
            )
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0, log.read_text()[-3000:]
            assert '"event": "handled"' in log.read_text(), "the worker served nothing"
        finally:
            if worker.poll() is None:
                worker.kill()
    seed = Path(env["ENVKERNEL_NATS_NKEY_SEED"]).read_bytes()
    assert seed.decode() not in run.proc.stderr + run.proc.stdout
    for path in [*run.dir.rglob("*"), log]:
        if path.is_file():
            assert seed not in path.read_bytes(), f"the seed was written to {path}"


def test_forged_events_neither_end_nor_hang_a_run(envk, nats_server: str) -> None:
    """A well-formed ``kernel.handled`` naming ids the run never saw, and a ``run.ending`` on a
    policy's subject: both are ignored, and the run ends as a clean one of the same seed."""
    clean = envk.run("--seed", "9", run_id="clean9")

    async def scenario() -> int:
        bus = await Bus.connect(nats_server)
        sent = asyncio.Event()

        async def on_gated(msg: Any) -> None:
            if sent.is_set():
                return
            sent.set()
            forged = Handled(
                run="forged",
                id="f" * 24,
                parent="0" * 24,
                time=time.time(),
                handler="reference",
                events=[f"{i:024x}" for i in range(500)],
                children=[0] * 500,
            )
            await bus.publish_wait("envk.ev.forged.kernel.handled", encode(forged), forged.id)
            ending = RunEnding(run="forged", id="e" * 24, iteration=0, time=time.time())
            await bus.publish_wait("envk.ev.forged.run.ending.reference", encode(ending), ending.id)

        sub = await bus.nc.subscribe("envk.ev.forged.task.gated", cb=on_gated)
        proc = await asyncio.create_subprocess_exec(
            ENVKERNEL,
            "run",
            "--source",
            "sample",
            "--nats-url",
            nats_server,
            "--out",
            "out",
            "--run-id",
            "forged",
            "--no-progress",
            "--seed",
            "9",
            cwd=envk.cwd,
            env=envk.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 100)
        (envk.cwd / "forged.log").write_bytes(err)
        await sub.unsubscribe()
        await bus.close()
        assert sent.is_set()
        return proc.returncode or 0

    assert asyncio.run(scenario()) == 0, (envk.cwd / "forged.log").read_text()[-3000:]
    run_dir = envk.cwd / "out" / "forged"
    s = _agree(run_dir)
    assert (s["tasks"], s["rollouts"], s["groups"]) == (
        clean.summary["tasks"],
        clean.summary["rollouts"],
        clean.summary["groups"],
    )
    assert s["undecodable_events"] == 1  # the misrouted run.ending
    import pyarrow.parquet as pq

    assert (
        pq.read_table(run_dir / "rl.parquet").num_rows
        == len((run_dir / "rl.jsonl").read_text().splitlines())
        == s["tasks"]
    )


def test_a_worker_releases_a_finished_runs_sandboxes(
    envk, nats_server: str, worker_process, processes_mentioning
) -> None:
    with worker_process("process,baselines,traceoutcome"):
        (pid,) = processes_mentioning(
            f"worker --plugins process,baselines,traceoutcome --nats-url {nats_server}"
        )  # this test's worker only
        run = envk.run("--nats-url", nats_server, "-G", "8", run_id="release")
        assert run.proc.returncode == 0, run.proc.stderr[-3000:]

        def sandboxes() -> list[
            int
        ]:  # the executors; not the runner's zygote (its child, which forks them)
            found = processes_mentioning(f"--parent-pid {pid} ")
            return [p for p in found if not (_ppid(p) == pid and "--zygote" in _cmdline(p))]

        deadline = time.monotonic() + 10
        while sandboxes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandboxes() == [], "the idle worker kept the finished run's sandboxes"


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


READY_AND_SET_UP = """
import asyncio, sys
from envkernel_bus import Bus
from envkernel_bus.server import wait_cluster_ready
wait_cluster_ready(sys.argv[1])
async def setup():
    await (await Bus.connect(sys.argv[1])).close()
asyncio.run(setup())
"""
"""Run on a test host: wait for the cluster, then create the replicated stream, bucket and store
once."""


class NetnsHosts:
    """Test hosts as network namespaces on this machine: ``h0`` .. ``h{n-1}``, each with one veth
    link (``eth0``, 10.99.0.(10+i)/24) to a bridge in a namespace of its own (the switch). Nothing
    is added to the machine's own network namespace; everything is removed by :meth:`close`."""

    def __init__(self, n: int) -> None:
        tag = secrets.token_hex(3)
        self.switch, self.names = f"envk{tag}-sw", [f"envk{tag}-h{i}" for i in range(n)]
        self.addrs = [f"10.99.0.{10 + i}" for i in range(n)]
        self._ip("netns", "add", self.switch)
        self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.switch, "link", "set", "br0", "up")
        for i, ns in enumerate(self.names):
            self._ip("netns", "add", ns)
            self._ip(
                "-n",
                self.switch,
                "link",
                "add",
                f"vh{i}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns,
            )
            self._ip("-n", self.switch, "link", "set", f"vh{i}", "master", "br0", "up")
            self._ip("-n", ns, "addr", "add", f"{self.addrs[i]}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
            self._ip("-n", ns, "link", "set", "lo", "up")

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    def on(self, i: int) -> list[str]:
        """The command prefix that runs a program on host ``i``."""
        return ["ip", "netns", "exec", self.names[i]]

    def cut(self, i: int) -> None:
        """Cut host ``i`` off the network (its link goes down; its processes live on, alone)."""
        self._ip("-n", self.switch, "link", "set", f"vh{i}", "down")

    def close(self) -> None:
        for ns in [*self.names, self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def _netns_available() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip") is not None


@pytest.mark.timeout(
    300
    # a hang guard: a cut-off host's work is redelivered after ack waits, slow beside another test
    # worker
)
def test_a_cluster_of_three_hosts_loses_nothing_when_a_host_is_cut_off(
    envk, tmp_path: Path, clean3, wait_for_log
) -> None:
    """Four hosts (network namespaces): the run on h0; NATS nodes on h1, h2, h3 with the stream
    replicated (R3); workers serving the sandboxes, policies and reward on h2 and h3. Mid-run h2 is
    cut off (its link goes down: a node and a worker gone at once); the run ends with the clean
    run's outputs, each once.

    Namespaces need root and iproute2 (CI runs scripts/test.sh as root, which installs iproute2);
    without them the same cluster runs on loopback and host 2's node and worker are killed with
    SIGKILL instead."""
    from envkernel_bus import LocalCluster

    hosts = NetnsHosts(4) if _netns_available() else None
    on = hosts.on if hosts else (lambda i: [])
    env = {
        **envk.env,
        "ENVKERNEL_STREAM_REPLICAS": "3",
        "ENVKERNEL_ACK_WAIT": "3",
        "ENVKERNEL_NATS_PING_SECONDS": "1",
    }
    procs: list[subprocess.Popen[str]] = []
    cluster = None
    try:
        cluster = LocalCluster(
            tmp_path / "cluster",
            hosts=hosts.addrs[1:] if hosts else None,
            wrap=lambda i: on(i + 1),
            ping=1,
        )

        def start(i: int, *args: str, log: str) -> subprocess.Popen[str]:
            p = subprocess.Popen(
                [*on(i), ENVKERNEL, "--json-logs", *args],
                cwd=envk.cwd,
                env=env,
                text=True,
                stdout=subprocess.DEVNULL,
                stderr=(envk.cwd / log).open("w"),
            )
            procs.append(p)
            return p

        ready = subprocess.run(
            [*on(0), sys.executable, "-c", READY_AND_SET_UP, cluster.url],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert ready.returncode == 0, ready.stderr[-2000:]
        workers = [
            start(
                i,
                "worker",
                "--plugins",
                "process,baselines,traceoutcome",
                "--nats-url",
                cluster.url,
                log=f"w{i}.log",
            )
            for i in (2, 3)
        ]
        for w, i in zip(workers, (2, 3), strict=True):
            wait_for_log(envk.cwd / f"w{i}.log", "worker serving", w)
        proc = start(
            0,
            "run",
            "--source",
            "sample",
            "--nats-url",
            cluster.url,
            "--out",
            "out",
            "--run-id",
            "hosts",
            "--no-progress",
            "--seed",
            "3",
            "--set",
            "chains.tasks_per_env=12",
            log="hosts.log",
        )
        run_dir = envk.cwd / "out" / "hosts"
        _wait_lines(run_dir / "rollouts.jsonl", proc, 4)
        if hosts:
            hosts.cut(2)
        else:
            cluster.kill(1)
            workers[0].send_signal(signal.SIGKILL)
        assert proc.wait(timeout=120) == 0, (envk.cwd / "hosts.log").read_text()[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if cluster is not None:
            cluster.stop()
        if hosts:
            hosts.close()
    _same_outputs(run_dir, clean3)
