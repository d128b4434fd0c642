"""The ``podman system service`` the runner talks to, and who owns what.

The runner uses the service at ``Settings.url`` when one is given (and never stops it). Otherwise
it starts its own, on a socket in its own folder, with envkernel's ``containers.conf``, and stops it
when it closes. That service also exits by itself after ``service_idle`` seconds without a request
(so a killed runner cannot leave it behind for long); the runner starts it again when it needs it.

Ownership: every folder and container a runner makes carries its owner's host, boot id, pid and
the pid's start time. A pid that is gone, or now belongs to another process (another start time),
or a boot id that changed, means the owner is dead and what it made may be reaped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import SandboxError

ASSETS = resources.files(__package__).joinpath("assets")


def asset_path(name: str) -> str:
    """Filesystem path of a file shipped in ``envkernel_podman/assets``."""
    path = Path(str(ASSETS.joinpath(name)))
    if not path.exists():
        raise SandboxError(
            f"envkernel-podman is missing its asset {name!r} (looked in {path}); reinstall it"
        )
    return str(path)


def containers_conf(setting: str = "") -> str:
    """The containers.conf to use: the setting, else ``$CONTAINERS_CONF``, else the shipped one."""
    path = setting or os.environ.get("CONTAINERS_CONF", "") or asset_path("containers.conf")
    if not os.path.isfile(path):
        raise SandboxError(f"containers.conf {path!r} does not exist")
    return path


def podman_binary() -> str:
    """Path of the ``podman`` command, or a clear error saying how to install it."""
    path = shutil.which("podman")
    if path is None:
        raise SandboxError(
            "podman is not installed: run scripts/install-podman.sh "
            "(or apt-get install podman runc debootstrap, then `envkernel sandbox build-image`)"
        )
    return path


def podman_env(conf: str) -> dict[str, str]:
    """The environment for podman commands: ours, with CONTAINERS_CONF set."""
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = conf
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    return env


# --------------------------------------------------------------------------- ownership


def boot_id() -> str:
    """This boot's id (changes at every reboot)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def process_start(pid: int) -> str:
    """Start time of ``pid`` in clock ticks since boot ("" when there is no such process)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return ""
    if fields and fields[0] == "Z":  # a zombie is dead
        return ""
    return fields[19] if len(fields) > 19 else ""


@dataclass(frozen=True)
class Owner:
    """Who made a container or a folder: host, boot, pid and the pid's start time."""

    host: str
    boot: str
    pid: int
    start: str

    @classmethod
    def me(cls) -> Owner:
        pid = os.getpid()
        return cls(socket.gethostname(), boot_id(), pid, process_start(pid))

    @property
    def key(self) -> str:
        """A short token naming this owner in folder names."""
        return f"{self.pid}-{self.start}"

    def alive(self) -> bool | None:
        """True or False on this host; None when the owner is on another host (unknown)."""
        if self.host != socket.gethostname():
            return None
        if self.boot != boot_id():
            return False
        return bool(self.start) and process_start(self.pid) == self.start

    def labels(self) -> dict[str, str]:
        return {
            "envkernel.owner.host": self.host,
            "envkernel.owner.boot": self.boot,
            "envkernel.owner.pid": str(self.pid),
            "envkernel.owner.start": self.start,
        }

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> Owner | None:
        try:
            return cls(
                labels["envkernel.owner.host"],
                labels["envkernel.owner.boot"],
                int(labels["envkernel.owner.pid"]),
                labels["envkernel.owner.start"],
            )
        except (KeyError, ValueError):
            return None


def default_run_dir() -> str:
    """Where runners keep their folders (sockets, service): short paths, on tmpfs when possible."""
    if os.geteuid() == 0:
        return "/run/envkernel/podman"
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"envkernel-podman-{os.geteuid()}")


# --------------------------------------------------------------------------- the service


class Service:
    """A podman API service: an existing one at ``url``, or one this object starts and stops."""

    def __init__(self, url: str, folder: str, conf: str, idle: int) -> None:
        self.url = url
        self.folder = folder
        self.conf = conf
        self.idle = idle
        self.owned = not url
        self.proc: subprocess.Popen[bytes] | None = None
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def socket_path(self) -> str:
        return os.path.join(self.folder, "podman.sock")

    def client(self) -> Any:
        """A connected ``podman.PodmanClient`` (starting the service if it is ours and not
        running)."""
        with self._lock:
            if self._client is not None and (
                not self.owned or (self.proc is not None and self.proc.poll() is None)
            ):
                return self._client
            return self._connect()

    def restart(self) -> Any:
        """Our service stopped (idle timeout, killed): start it again. Returns the client."""
        with self._lock:
            if not self.owned:
                raise SandboxError(f"the podman service at {self.url} does not answer")
            self._stop_locked()
            return self._connect()

    def _connect(self) -> Any:
        import podman  # lazy: only runs that use this runner pay for the import

        if self.owned:
            self._start_locked()
            url = "unix://" + self.socket_path
        else:
            url = self.url
        client = podman.PodmanClient(base_url=url, timeout=60)
        deadline = time.monotonic() + 20
        while True:
            try:
                if client.ping():
                    break
            except Exception as exc:
                if time.monotonic() > deadline or (
                    self.owned and self.proc is not None and self.proc.poll() is not None
                ):
                    raise SandboxError(
                        f"cannot reach the podman service at {url}: {exc}{self._log_tail()}"
                    ) from None
            time.sleep(0.02)
        self._client = client
        return client

    def _start_locked(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        os.makedirs(self.folder, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        log = open(os.path.join(self.folder, "service.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                [
                    podman_binary(),
                    "system",
                    "service",
                    f"--time={self.idle}",
                    "unix://" + self.socket_path,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=podman_env(self.conf),
                start_new_session=True,
                # conmon writes an `oom` marker into its working folder: keep it out of the caller's
                cwd=self.folder,
            )
        finally:
            log.close()
        with open(os.path.join(self.folder, "service.json"), "w") as f:
            json.dump(
                {
                    "pid": self.proc.pid,
                    "start": process_start(self.proc.pid),
                    "socket": self.socket_path,
                },
                f,
            )

    def _log_tail(self) -> str:
        try:
            text = Path(self.folder, "service.log").read_text(errors="replace")[-1500:]
        except OSError:
            return ""
        return f"\nservice log:\n{text}" if text.strip() else ""

    def stop(self) -> None:
        """Stop the service if this object started it."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.folder, "service.json"))


def stop_orphan_service(folder: str) -> bool:
    """Stop the podman service a dead runner started in ``folder`` (if it still runs). True if one
    was."""
    try:
        with open(os.path.join(folder, "service.json")) as f:
            info = json.load(f)
        pid, start = int(info["pid"]), str(info["start"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not start or process_start(pid) != start:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    if not any(a.endswith(b"podman") for a in argv[:1]) or b"service" not in argv:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if process_start(pid) != start:
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return True
