"""What the ``process`` runner can confine a sandbox with on this host, and the means to do it.

Checked once per process (:func:`host_support`):

- **root**: each sandbox gets a uid of its own (from ``uid_base``, no passwd entry), so
  ``RLIMIT_NPROC`` binds and the sandbox cannot signal or read anything of the host's users;
- **namespaces**: ``unshare -n -m`` gives an empty network namespace and a private mount namespace
  (the working folder becomes a size-capped tmpfs);
- **cgroups** (v1 or v2, wherever the host lets us create a child of our own cgroup): memory,
  pids and cpu limits for all the sandbox's processes together, and a reliable kill of all of them;
- **Landlock**: files (working folder read-write, Python runtime read-only, nothing else), TCP,
  and signals / abstract unix sockets leaving the sandbox;
- **seccomp**: no unix-domain sockets (Landlock before ABI 8 does not cover connecting to one by
  path, and the host's may be world-connectable), no io_uring.

:func:`protections` turns that into the table in ``docs/sandboxes.md``: what is blocked and what
is only detected or reported.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
_LIMIT_FILES = {
    1: {"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpu.cfs_quota_us"},
    2: {"memory": "memory.max", "pids": "pids.max", "cpu": "cpu.max"},
}
UID_BLOCK = 1000
"""Uids a runner process reserves at a time (one lock file per block)."""
UID_BLOCKS = 64
UID_QUARANTINE = 30.0
"""Seconds a uid rests after its sandbox (or executor) ended before it is handed out again: killed
processes may linger as zombies until the host's init reaps them, and they count against the
uid's RLIMIT_NPROC."""


# ----------------------------------------------------------------------------- what the host offers


@dataclass(frozen=True)
class HostSupport:
    """Confinement available to sandboxes started by this process."""

    root: bool
    unshare: tuple[str, ...] = ()
    """``unshare -n -m --`` (empty network namespace, private mounts), or () when unavailable."""
    cgroups: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Controller -> (cgroup version, folder under which a sandbox's cgroup is created)."""
    landlock: int = 0
    """Landlock ABI version, 0 when unavailable."""
    seccomp: bool = False
    """Seccomp filters work (the executor then refuses unix-domain sockets)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Why something is unavailable."""

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly description (for ``env call --verbose`` and the benchmark)."""
        return {
            "root": self.root,
            "separate_uid": self.root,
            "network_namespace": bool(self.unshare),
            "mount_namespace": bool(self.unshare),
            "cgroups": {c: f"v{v}" for c, (v, _base) in self.cgroups.items()},
            "landlock": self.landlock,
            "seccomp": self.seccomp,
            "not_available": dict(self.notes),
        }


_support: HostSupport | None = None
_support_lock = threading.Lock()


def host_support() -> HostSupport:
    """What this host offers (checked once per process)."""
    global _support
    with _support_lock:
        if _support is None:
            _support = _detect()
    return _support


def _detect() -> HostSupport:
    notes: dict[str, str] = {}
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not root:
        notes["separate_uid"] = "the runner is not root"
    unshare: tuple[str, ...] = ()
    path = shutil.which("unshare")
    if not root:
        notes["namespaces"] = "the runner is not root"
    elif not path:
        notes["namespaces"] = "no `unshare` binary"
    else:
        try:
            r = subprocess.run(
                [path, "-n", "-m", "--", "true"], check=False, capture_output=True, timeout=10
            )
            if r.returncode == 0:
                unshare = (path, "-n", "-m", "--")
            else:
                notes["namespaces"] = (
                    f"`unshare -n -m` failed: {r.stderr.decode(errors='replace').strip()}"
                )
        except (OSError, subprocess.SubprocessError) as exc:
            notes["namespaces"] = f"`unshare -n -m` failed: {exc}"
    cgroups = _detect_cgroups(notes)
    ll = landlock_abi()
    if not ll:
        notes["landlock"] = "the kernel does not offer Landlock"
    seccomp = _seccomp_available()
    if not seccomp:
        notes["seccomp"] = "no seccomp filters here (or no filter for this CPU)"
    return HostSupport(
        root=root, unshare=unshare, cgroups=cgroups, landlock=ll, seccomp=seccomp, notes=notes
    )


def _seccomp_available() -> bool:
    if os.uname().machine not in ("x86_64", "aarch64"):
        return False
    try:
        return any(
            line.startswith("Seccomp:")
            for line in Path("/proc/self/status").read_text().splitlines()
        )
    except OSError:
        return False


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        v = libc.syscall(
            ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1)
        )  # create_ruleset(VERSION)
    except Exception:
        return 0
    return int(v) if v > 0 else 0


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fs type, super options) of every cgroup mount."""
    out = []
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if len(a) >= 5 and len(b) >= 3 and b[0] in ("cgroup", "cgroup2"):
            out.append((a[3], a[4].replace("\\040", " "), b[0], set(b[2].split(","))))
    return out


def _detect_cgroups(notes: dict[str, str]) -> dict[str, tuple[int, str]]:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        notes["cgroups"] = "no /proc/self/cgroup"
        return {}
    mounts = _mounts()
    found: dict[str, tuple[int, str]] = {}
    v2_path = None
    for line in lines:
        _hid, ctrls, path = line.split(":", 2)
        if ctrls == "":
            v2_path = path
            continue
        for c in ctrls.split(","):
            if c in CONTROLLERS:
                _find_v1(c, path, mounts, found)
    if v2_path is not None and any(c not in found for c in CONTROLLERS):
        _find_v2(v2_path, mounts, found)
    for c in CONTROLLERS:
        if c not in found:
            notes[f"cgroup_{c}"] = "no writable cgroup with this controller"
    for _c, (_v, base) in found.items():
        _sweep(base)
    return found


def _under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _find_v1(
    c: str,
    path: str,
    mounts: list[tuple[str, str, str, set[str]]],
    found: dict[str, tuple[int, str]],
) -> None:
    """Controller ``c``'s cgroup v1 folder for this process's ``path``, if usable."""
    for mroot, point, fstype, opts in mounts:
        if fstype == "cgroup" and c in opts and _under(path, mroot):
            base = os.path.join(point, os.path.relpath(path, mroot)) if path != mroot else point
            if _usable(base, 1, c):
                found[c] = (1, os.path.normpath(base))
            return


def _find_v2(
    v2_path: str, mounts: list[tuple[str, str, str, set[str]]], found: dict[str, tuple[int, str]]
) -> None:
    """The controllers still missing, from the cgroup v2 folder of this process, if usable."""
    for mroot, point, fstype, _opts in mounts:
        if fstype != "cgroup2" or not _under(v2_path, mroot):
            continue
        base = os.path.normpath(os.path.join(point, os.path.relpath(v2_path, mroot)))
        try:
            enabled = set(Path(base, "cgroup.subtree_control").read_text().split())
        except OSError:
            enabled = set()
        for c in CONTROLLERS:
            if c not in found and c in enabled and _usable(base, 2, c):
                found[c] = (2, base)
        return


def _usable(base: str, version: int, controller: str) -> bool:
    probe = os.path.join(base, f"envk-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        return os.path.exists(os.path.join(probe, _LIMIT_FILES[version][controller]))
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)


SWEEP_AGE = 4 * 3600.0
"""An empty sandbox cgroup older than this was left by a runner that crashed."""


def _sweep(base: str) -> None:
    """Remove old empty sandbox cgroups a crashed runner left behind. Young ones may belong to a
    live runner that is about to start an executor in them; a busy one cannot be removed."""
    try:
        names = [n for n in os.listdir(base) if n.startswith("envk-")]
    except OSError:
        return
    now = time.time()
    for n in names:
        path = os.path.join(base, n)
        with contextlib.suppress(OSError):
            if now - os.stat(path).st_mtime > SWEEP_AGE:
                os.rmdir(path)


# ----------------------------------------------------------------------------- folders of crashed
# runners

OWNER_FILE = "owner"
"""In each sandbox folder: ``<pid> <start time>`` of the runner process that made it."""


def process_start(pid: int) -> str:
    """A live process's start time (clock ticks since boot), "" when it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    return fields[19] if len(fields) > 19 and fields[0] not in ("Z", "X") else ""


_STAMP: list[
    tuple[int, str]
] = []  # (pid, stamp): read once per process (a fork has a pid of its own)


def owner_stamp() -> str:
    """What :data:`OWNER_FILE` holds for this process."""
    pid = os.getpid()
    if not _STAMP or _STAMP[0][0] != pid:
        _STAMP[:] = [(pid, f"{pid} {process_start(pid)}")]
    return _STAMP[0][1]


def sweep_folders(folder: str, support: HostSupport, owner: str = "") -> int:
    """Remove the sandbox folders (and cgroups) that runners which died without cleaning up left
    in ``folder`` (with ``owner``: those of that one runner, :func:`owner_stamp`); their processes
    died with them (parent-death signal), and what they forked dies with the cgroup. Returns how
    many."""
    removed = 0
    try:
        entries = [
            e
            for e in os.scandir(folder)
            if e.name.startswith(("envk-p", "envk-zygote-")) and e.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return 0
    for e in entries:
        try:
            if e.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            stamp = Path(e.path, OWNER_FILE).read_text()
            pid, start = stamp.split()
        except (OSError, ValueError):
            continue
        if (stamp != owner) if owner else process_start(int(pid)) == start:
            continue  # another runner's, or its runner is alive
        sid = e.name.split("-")[1]
        for _c, (_v, base) in support.cgroups.items():
            d = os.path.join(base, f"envk-{sid}")
            if os.path.isdir(d):
                Cgroup.remove_folder(d)
        shutil.rmtree(e.path, ignore_errors=True)
        removed += 1
    return removed


def start_reaper(folder: str, support: HostSupport) -> subprocess.Popen[bytes]:
    """Start the reaper of this runner process's sandboxes: a small process (this file, stdlib only)
    that waits until the runner dies (its stdin, a pipe only the runner holds, reaches EOF: a kill
    -9 too) and then removes the sandbox folders and cgroups the runner left
    (:func:`sweep_folders`)."""
    bases = [f"{c}={v}:{base}" for c, (v, base) in support.cgroups.items()]
    return subprocess.Popen(
        [sys.executable, "-S", "-P", os.path.abspath(__file__), folder, owner_stamp(), *bases],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def _reap(argv: list[str]) -> None:
    """The reaper's main (see :func:`start_reaper`):
    ``FOLDER OWNER [CONTROLLER=VERSION:BASE ...]``."""
    folder, owner, *bases = argv
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # a Ctrl-C of the run's terminal: the run cleans up, the reaper checks
    while sys.stdin.buffer.read(65536):
        pass
    cgroups = {
        c: (int(v), base)
        for c, rest in (b.split("=", 1) for b in bases)
        for v, base in [rest.split(":", 1)]
    }
    sweep_folders(folder, HostSupport(root=os.geteuid() == 0, cgroups=cgroups), owner=owner)


# ----------------------------------------------------------------------------- fast cgroup joins


class JoinKeeper:
    """Keeps the kernel's cgroup-migration lock in its writer mode while sandboxes are being opened,
    so that an executor's join of its cgroups costs half a millisecond instead of an RCU grace
    period.

    Every move of a process between cgroups (a write to ``cgroup.procs``) takes the kernel's global
    ``cgroup_threadgroup_rwsem`` for writing. That lock is a per-CPU rwsem: a writer first switches
    it from its fast reader mode to its slow one, which waits for an RCU grace period (1 to 30 ms
    here), and it switches back only a grace period or two after the last writer left. Joins that
    follow each other closely therefore pay nothing; a lone one pays the whole grace period: about
    18 ms of a 32-36 ms fresh open measured on this project's host (cgroup v1). Cgroup v2 has a
    mount option for this (``favordynmods``); this does the same for the runner's own lifetime only,
    with no change to the host: after each :meth:`touch` (an executor about to join), a thread
    writes ``0`` (this process, into the cgroup it is already in: a migration that moves nothing) to
    ``procs_file`` every ``period`` seconds for ``keepalive`` seconds. Each write costs about a
    microsecond; while it runs, forks and exits on the host take the lock's slow reader path (an
    atomic operation more). Nothing about the sandboxes changes: each executor still joins its own
    cgroups, with their limits, before any environment code runs."""

    def __init__(
        self, procs_file: str, keepalive: float, period: float = 0.005, controller: str = "pids"
    ) -> None:
        self.procs_file = procs_file
        self.controller = controller
        self.keepalive = keepalive
        self.period = period
        self.writes = 0
        """No-op migrations written so far."""
        self.error = ""
        """Why the keeper stopped for good (its write failed), else ``""``."""
        self._until = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        """Is the lock being kept in its writer mode now?"""
        with self._lock:
            return self._thread is not None

    def touch(self) -> None:
        """An executor is about to join its cgroups: keep the lock warm for ``keepalive`` seconds
        from now."""
        with self._lock:
            self._until = time.monotonic() + self.keepalive
            if self._thread is None and not self.error and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="envk-cgroup-keeper", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        if not _still_in(os.path.dirname(self.procs_file), self.controller):
            self._give_up(
                f"this process is no longer in {os.path.dirname(self.procs_file)}"
            )  # never move the runner
            return
        try:
            fd = os.open(self.procs_file, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            self._give_up(f"cannot open {self.procs_file}: {exc}")
            return
        try:
            while not self._stop.is_set():
                with self._lock:
                    if time.monotonic() >= self._until:
                        self._thread = None
                        return
                if self.writes % 20 == 19 and not _still_in(
                    os.path.dirname(self.procs_file), self.controller
                ):
                    self._give_up(
                        f"this process was moved out of {os.path.dirname(self.procs_file)}"
                    )  # never move it back
                    return
                try:
                    os.write(fd, b"0")
                except OSError as exc:
                    self._give_up(f"cannot write {self.procs_file}: {exc}")
                    return
                self.writes += 1
                self._stop.wait(self.period)
            with self._lock:
                self._thread = None
        finally:
            os.close(fd)

    def _give_up(self, why: str) -> None:
        with self._lock:
            self.error, self._thread = why, None

    def close(self, timeout: float = 2.0) -> None:
        """Stop for good (and wait for the thread)."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)


def join_keeper(support: HostSupport, keepalive: float) -> JoinKeeper | None:
    """A :class:`JoinKeeper` on this process's own cgroup of a v1 hierarchy the sandboxes join (None
    when there is none, or ``keepalive`` is 0). Cgroup v2 is left alone: writing to a cgroup that
    has controllers enabled for its children would fail there, and v2 has ``favordynmods`` for
    this."""
    if keepalive <= 0:
        return None
    for controller in ("pids", "cpu", "memory"):
        version, base = support.cgroups.get(controller, (0, ""))
        if version == 1 and os.access(os.path.join(base, "cgroup.procs"), os.W_OK):
            return JoinKeeper(os.path.join(base, "cgroup.procs"), keepalive, controller=controller)
    return None


def _still_in(folder: str, controller: str) -> bool:
    """Is this process (still) in the v1 cgroup ``folder`` of ``controller``'s hierarchy?"""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        _hid, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            if path == "/":  # the hierarchy's root: its mount point
                return os.path.ismount(folder)
            return os.path.normpath(folder).endswith(os.path.normpath(path))
    return False


# ----------------------------------------------------------------------------- a sandbox's cgroup


class Cgroup:
    """The cgroup(s) of one sandbox: one folder per v1 controller, or one v2 folder."""

    def __init__(
        self, name: str, support: HostSupport, memory: int, pids: int, cpus: float
    ) -> None:
        self.name = name
        self.memory = memory
        self.pids = pids
        self.cpus = cpus
        self.dirs: dict[str, tuple[int, str]] = {
            c: (v, os.path.join(base, name))
            for c, (v, base) in support.cgroups.items()
            if c != "cpu" or cpus > 0
        }
        self._oom_base = 0

    @property
    def controllers(self) -> list[str]:
        """The controllers this sandbox is limited by."""
        return sorted(self.dirs)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the executor joins (one per distinct folder)."""
        return sorted({os.path.join(d, "cgroup.procs") for _v, d in self.dirs.values()})

    def ensure(self) -> None:
        """Create the folders and write the limits (idempotent)."""
        for c, (v, d) in self.dirs.items():
            with contextlib.suppress(FileExistsError):
                os.mkdir(d)
            if c == "memory":
                if v == 1:
                    _write(d, "memory.limit_in_bytes", self.memory)
                    with contextlib.suppress(OSError):
                        _write(d, "memory.memsw.limit_in_bytes", self.memory)  # no swap either
                else:
                    _write(d, "memory.max", self.memory)
                    with contextlib.suppress(OSError):
                        _write(d, "memory.swap.max", 0)
            elif c == "pids":
                _write(d, "pids.max", self.pids)
            elif c == "cpu":
                quota = max(1000, int(self.cpus * 100_000))
                if v == 1:
                    _write(d, "cpu.cfs_period_us", 100_000)
                    _write(d, "cpu.cfs_quota_us", quota)
                else:
                    _write(d, "cpu.max", f"{quota} 100000")
        self._oom_base = self._oom_raw()

    def pids_inside(self) -> set[int]:
        """Processes in the sandbox's cgroup(s)."""
        out: set[int] = set()
        for f in self.procs_files:
            try:
                out.update(int(x) for x in Path(f).read_text().split())
            except (OSError, ValueError):
                pass
        return out

    def kill_all(self, timeout: float = 3.0) -> bool:
        """SIGKILL every process inside until none is left; True when empty."""
        for _v, d in self.dirs.values():
            kill = os.path.join(d, "cgroup.kill")
            if os.path.exists(kill):
                with contextlib.suppress(OSError):
                    _write(d, "cgroup.kill", 1)
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids_inside()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)

    def oom_kills(self) -> int:
        """Processes the kernel killed for running out of the sandbox's memory, since the last
        :meth:`ensure` (that is, in the current executor's time)."""
        return self._oom_raw() - self._oom_base

    def _oom_raw(self) -> int:
        m = self.dirs.get("memory")
        if m is None:
            return 0
        v, d = m
        try:
            text = Path(d, "memory.oom_control" if v == 1 else "memory.events").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            k, _, n = line.partition(" ")
            if k == "oom_kill":
                return int(n)
        return 0

    def remove(self) -> None:
        """Kill what is inside and remove the folders."""
        self.kill_all()
        for _v, d in self.dirs.values():
            self.remove_folder(d)

    @staticmethod
    def remove_folder(d: str) -> None:
        """Kill the processes in one cgroup folder and remove it."""
        procs = os.path.join(d, "cgroup.procs")
        for _ in range(500):
            try:
                pids = [int(x) for x in Path(procs).read_text().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            try:
                os.rmdir(d)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.002)


def _write(folder: str, name: str, value: object) -> None:
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(value))


# ----------------------------------------------------------------------------- uids


class UidPool:
    """Hands out uids no other sandbox on this host is using.

    A runner process reserves blocks of :data:`UID_BLOCK` uids with an exclusive ``flock`` on a
    lock file in a root-only folder; the kernel releases it if the process dies. When a block is
    taken over, processes a crashed runner left running under its uids are killed first. A uid
    given back rests for :data:`UID_QUARANTINE` seconds before it is used again.
    """

    def __init__(self, base: int) -> None:
        self.base = base
        self._free: list[int] = []
        self._resting: list[tuple[float, int]] = []
        self._locks: list[int] = []
        self._lock = threading.Lock()
        self._folder: str | None = None

    def acquire(self) -> int:
        """A uid for a new sandbox."""
        with self._lock:
            now = time.monotonic()
            while self._resting and self._resting[0][0] <= now:
                self._free.append(self._resting.pop(0)[1])
            if not self._free:
                self._reserve()
            return self._free.pop()

    def release(self, uid: int) -> None:
        """Give a uid back (its processes must be dead); it rests before it is used again."""
        with self._lock:
            self._resting.append((time.monotonic() + UID_QUARANTINE, uid))

    def _lock_folder(self) -> str:
        if self._folder is None:
            for candidate in (
                "/run/envkernel-process",
                os.path.join(tempfile.gettempdir(), f"envkernel-process-{os.geteuid()}"),
            ):
                with contextlib.suppress(FileExistsError, OSError):
                    os.mkdir(candidate, 0o700)
                try:
                    st = os.lstat(candidate)
                except OSError:
                    continue
                if (
                    stat.S_ISDIR(st.st_mode)
                    and st.st_uid == os.geteuid()
                    and not st.st_mode & 0o077
                ):
                    self._folder = candidate
                    break
            else:
                raise OSError(
                    "no private folder for the sandbox uid locks (/run or the temp folder)"
                )
        return self._folder

    def _reserve(self) -> None:
        folder = self._lock_folder()
        for block in range(UID_BLOCKS):
            lo = self.base + block * UID_BLOCK
            fd = os.open(
                os.path.join(folder, f"uids-{lo}.lock"),
                os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                0o600,
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self._locks.append(fd)
            kill_uids(range(lo, lo + UID_BLOCK))  # leftovers of a runner that crashed
            self._free.extend(reversed(range(lo, lo + UID_BLOCK)))
            return
        raise OSError(
            f"all {UID_BLOCKS * UID_BLOCK} sandbox uids from {self.base} are in use on this host"
        )


_pools: dict[int, UidPool] = {}


def uid_pool(base: int) -> UidPool:
    """The process-wide pool for ``base``."""
    pool = _pools.get(base)
    if pool is None:
        pool = _pools[base] = UidPool(base)
    return pool


def kill_uids(uids: range, timeout: float = 3.0) -> int:
    """SIGKILL every live process whose real uid is in ``uids`` (scans /proc) until none is left;
    returns how many were killed. Zombies are dead already and are left to their parent."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        found = 0
        try:
            entries = os.listdir("/proc")
        except OSError:
            return len(killed)
        for name in entries:
            if not name.isdigit():
                continue
            uid, state = -1, ""
            try:
                with open(f"/proc/{name}/status", "rb") as f:
                    for line in f:
                        if line.startswith(b"State:"):
                            state = line.split()[1].decode()
                        elif line.startswith(b"Uid:"):
                            uid = int(line.split()[1])
                            break
            except (OSError, ValueError, IndexError):
                continue
            if uid in uids and state not in ("Z", "X"):
                found += 1
                killed.add(int(name))
                with contextlib.suppress(OSError):
                    os.kill(int(name), signal.SIGKILL)
        if not found or time.monotonic() > deadline:
            return len(killed)
        time.sleep(0.005)


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Protection:
    """One row of the table: what happens when an environment tries ``threat``."""

    threat: str
    outcome: str
    """``blocked`` (it cannot happen), ``detected`` (it happens, the call fails with a clear error
    and the sandbox is replaced) or ``not blocked``."""
    how: str


THREATS: dict[str, str] = {
    "infinite_loop": "an infinite loop",
    "fork_bomb": "a fork bomb",
    "memory_bomb": "a memory bomb",
    "network": "opening a network connection",
    "host_files": "reading host files outside the sandbox",
    "huge_output": "writing a huge output",
    "kill_executor": "killing its own executor",
    "other_processes": "signalling the runner or another sandbox",
    "leftovers": "leaving processes behind",
}
"""The threats of the hostile suite, in table order."""


def protections(
    support: HostSupport | None = None, *, isolate: bool = True
) -> dict[str, Protection]:
    """What the ``process`` runner blocks and what it only detects, on this host."""
    s = support or host_support()
    facts = _Facts(
        uid=isolate and s.root,
        ll=s.landlock if isolate else 0,
        netns=isolate and bool(s.unshare),
        cg=frozenset(s.cgroups) if isolate else frozenset(),
        sc=isolate and s.seccomp,
    )
    return {k: Protection(k, *_THREAT_ROWS[k](facts)) for k in THREATS}


@dataclass(frozen=True)
class _Facts:
    """What confinement :func:`protections` can count on: an own uid, the Landlock ABI (0: none),
    a network namespace, the cgroup controllers, seccomp."""

    uid: bool
    ll: int
    netns: bool
    cg: frozenset[str]
    sc: bool


_Row = tuple[str, str]


def _infinite_loop(f: _Facts) -> _Row:
    loop = (
        "per-call timeout in the executor (SIGALRM): the call fails with `timeout` and has no "
        "effect; code that swallows it is killed by the runner 2 s later and the executor "
        "replaced; RLIMIT_CPU"
    )
    return ("blocked", loop + ("; cpu cgroup quota" if "cpu" in f.cg else ""))


def _fork_bomb(f: _Facts) -> _Row:
    if f.uid:
        how = "own uid with RLIMIT_NPROC" + (" and a pids cgroup" if "pids" in f.cg else "")
        return (
            "blocked",
            how
            + ": fork fails with EAGAIN; every process a call started is killed when it returns",
        )
    return (
        "not blocked",
        "RLIMIT_NPROC cannot bind without a uid of its own (runner not root); children "
        "are killed when the call returns, best effort",
    )


def _memory_bomb(f: _Facts) -> _Row:
    if "memory" in f.cg:
        return (
            "blocked",
            "RLIMIT_AS per process (MemoryError) and a memory cgroup for all its processes "
            "(the kernel kills inside the sandbox only)",
        )
    if f.uid:
        return (
            "blocked",
            "RLIMIT_AS per process (MemoryError); no memory cgroup: several processes may "
            "together use max_processes x memory_mb",
        )
    return ("blocked", "RLIMIT_AS per process (MemoryError)")


def _network(f: _Facts) -> _Row:
    if f.netns and f.sc:
        return (
            "blocked",
            "empty network namespace (`unshare -n`)"
            + (", Landlock: no TCP connect or bind" if f.ll >= 4 else "")
            + ", and seccomp: no unix-domain sockets",
        )
    if f.netns:
        return (
            "not blocked",
            "empty network namespace (`unshare -n`); unix-domain sockets of the host that "
            "its uid may connect to are reachable (no seccomp)",
        )
    if f.ll >= 4:
        return (
            "not blocked",
            "Landlock blocks TCP connect and bind; UDP is not blocked without a network "
            "namespace (runner not root)",
        )
    return ("not blocked", "no network namespace (runner not root) and no Landlock network rules")


def _host_files(f: _Facts) -> _Row:
    if f.ll:
        return (
            "blocked",
            "Landlock: only the working folder (read-write) and the Python runtime (stdlib, "
            "shared libraries, time zones: read-only) can be opened"
            + ("; own uid" if f.uid else ""),
        )
    if f.uid:
        return (
            "not blocked",
            "own uid: files not readable by others are blocked, world-readable host files "
            "are not (no Landlock)",
        )
    return ("not blocked", "no Landlock and no uid of its own")


def _huge_output(f: _Facts) -> _Row:
    huge = (
        "a result over the response limit fails with `too_large`; a file over file_size_mb fails "
        "with EFBIG (RLIMIT_FSIZE); prints go to a log capped the same way"
    )
    if f.netns:
        huge += "; the working folder is a tmpfs of workspace_mb (ENOSPC)"
        return ("blocked", huge + (", nothing else is writable (Landlock)" if f.ll else ""))
    if f.ll:
        return (
            "not blocked",
            huge
            + "; only the working folder is writable (Landlock), but its total size is not capped",
        )
    return ("not blocked", huge + "; many files, or files elsewhere, are not capped")


def _kill_executor(f: _Facts) -> _Row:
    return (
        "detected",
        "the call fails with `crashed`, naming the signal or exit code (and an out-of-memory "
        "kill); the executor is replaced and the earlier calls replayed",
    )


def _other_processes(f: _Facts) -> _Row:
    if f.uid or f.ll >= 6:
        means = ("own uid" if f.uid else "", "Landlock signal scope" if f.ll >= 6 else "")
        return ("blocked", " and ".join(x for x in means if x) + ": EPERM")
    return ("not blocked", "same uid as the runner and no Landlock signal scope")


def _leftovers(f: _Facts) -> _Row:
    means = ["own process group", "parent-death signal", "hard lifetime"]
    if "pids" in f.cg:
        means.insert(0, "everything in the sandbox's cgroup is killed on close and on replacement")
    elif f.uid:
        means.insert(0, "every process of the sandbox's uid is killed on close and on replacement")
    if f.uid:
        return ("blocked", "; ".join(means))
    return (
        "not blocked",
        "; ".join(means)
        + " (a process that calls setsid and clears its parent-death signal escapes)",
    )


_THREAT_ROWS = {
    "infinite_loop": _infinite_loop,
    "fork_bomb": _fork_bomb,
    "memory_bomb": _memory_bomb,
    "network": _network,
    "host_files": _host_files,
    "huge_output": _huge_output,
    "kill_executor": _kill_executor,
    "other_processes": _other_processes,
    "leftovers": _leftovers,
}
"""How each threat of :data:`THREATS` is met, given what the host offers."""


if __name__ == "__main__":
    _reap(sys.argv[1:])
