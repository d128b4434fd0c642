"""The executor's confinement, applied before any environment code runs.

Standard library only (ctypes for the system calls). Namespaces, cgroups, rlimits, a tmpfs working
folder, its own uid, a parent-death signal, seccomp and Landlock; :func:`_confine` applies what the
command line asks and returns what was applied, or raises: a sandbox never runs less confined
than its runner believes.
"""

from __future__ import annotations

import argparse
import os
import sys
import types

from envkernel_runtime.executor_protocol import (
    _LIBC,
    _WORKSPACE,
    _Forks,
    _libc,
    _set_parent_death_signal,
)

# --------------------------------------------------------------------------- confinement
#
# Applied by main() before any environment code runs, in this order: join the sandbox's cgroups,
# set resource limits, mount a private tmpfs on the working folder (root, in a private mount
# namespace), drop to the sandbox's own uid, set the parent-death signal, a seccomp filter (no
# unix-domain sockets, no io_uring), then Landlock (no new privileges; files: the working folder
# read-write, the Python runtime read-only, nothing else; no TCP; no signals or abstract unix
# sockets outside the sandbox). What was applied is reported in the answers to ``ping`` and
# ``load`` (``confinement``).


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}  # audit arch, socket()
_NR_IO_URING_SETUP = 425
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_CLONE_NEWNS, _CLONE_NEWNET = 0x00020000, 0x40000000
_SYS_LANDLOCK = (
    444,
    445,
    446,
)  # create_ruleset, add_rule, restrict_self (same on x86_64 and arm64)
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1, 2, 4, 8
_LL_MAKE_CHAR, _LL_MAKE_BLOCK, _LL_TRUNCATE, _LL_IOCTL_DEV = 1 << 6, 1 << 11, 1 << 14, 1 << 15
_LL_RUNTIME_DIRS = (
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/lib",
    "/lib64",
    "/usr/share/zoneinfo",
)
_LL_RUNTIME_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_LL_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


def _join_cgroups(files: list[str]) -> list[str]:
    for path in files:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    return [os.path.dirname(path) for path in files]


def _apply_limits(args: argparse.Namespace) -> dict[str, int]:
    try:
        import resource
    except ImportError:  # not on this platform
        return {}
    applied = {}
    limits = (
        ("RLIMIT_AS", args.rlimit_as),
        ("RLIMIT_CPU", args.rlimit_cpu),
        ("RLIMIT_FSIZE", args.rlimit_fsize),
        ("RLIMIT_NPROC", args.rlimit_nproc),
        ("RLIMIT_NOFILE", args.rlimit_nofile),
        ("RLIMIT_CORE", 0 if args.uid is not None else None),
    )
    for name, value in limits:
        if value is None or (not value and name != "RLIMIT_CORE"):
            continue
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        _soft, hard = resource.getrlimit(limit)
        v = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(limit, (v, v))
            applied[name] = v
        except (ValueError, OSError):
            pass
    return applied


def _new_namespaces() -> None:
    """An empty network namespace and a private mount namespace of this process's own: what
    ``unshare -n -m`` gives an executor started from scratch (root only)."""
    ctypes, libc = _libc()
    if libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(network, mount): {os.strerror(err)}")
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:  # mounts stay in here
        err = ctypes.get_errno()
        raise OSError(err, f"make the mounts private: {os.strerror(err)}")


def _mount_tmpfs(path: str, size: int, uid: int | None, gid: int | None) -> None:
    ctypes, libc = _libc()
    opts = f"size={size},mode=0700" + (f",uid={uid},gid={gid}" if uid is not None else "")
    if (
        libc.mount(
            b"envk", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, opts.encode()
        )
        != 0
    ):
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {path}: {os.strerror(err)}")
    os.chdir(path)


def _world_reachable(path: str) -> bool:
    """Can a uid that owns nothing on the host read ``path`` (every folder above it searchable)?"""
    import stat as _stat

    try:
        st = os.stat(path)
        if not st.st_mode & _stat.S_IROTH:
            return False
        d = path if _stat.S_ISDIR(st.st_mode) else os.path.dirname(path)
        while True:
            if not os.stat(d).st_mode & _stat.S_IXOTH:
                return False
            parent = os.path.dirname(d)
            if parent == d:
                return True
            d = parent
    except OSError:
        return False


_VIA_FD: list[dict[str, str] | None] = [None]
"""What :func:`_keep_runtime_reachable` moved (folder -> ``/proc/self/fd/N``), when a zygote did it
once for all its children (None: not done); each child then calls :func:`_reopen_runtime`."""


def _reopen_runtime(moved: dict[str, str], keep: bool) -> list[str]:
    """In a zygote's child, where the zygote moved the runtime's folders onto descriptors
    (:data:`_VIA_FD`): with ``keep`` (it drops to its own uid), open each folder again here, after
    its own namespaces were made, onto the same descriptor, so the path resolves in this sandbox's
    mount namespace, not the zygote's; without (it keeps the runner's uid), close them and put the
    real paths back. The folders it moved."""
    if keep:
        for entry, via in moved.items():
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            os.dup2(fd, int(via.rsplit("/", 1)[1]), inheritable=False)
            os.close(fd)
        return list(moved)
    back = {via: entry for entry, via in moved.items()}
    sys.path[:] = [back.get(p, p) for p in sys.path]
    _rebase_package_paths(back)
    for via in back:
        os.close(int(via.rsplit("/", 1)[1]))
    return []


def _rebase_package_paths(moves: dict[str, str]) -> None:
    """Rewrite every loaded package's ``__path__`` entries under an ``old`` folder of ``moves`` (old
    -> new)."""
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if not isinstance(path, list):
            continue
        for j, p in enumerate(path):
            for old, new in moves.items():
                if isinstance(p, str) and (p == old or p.startswith(old + os.sep)):
                    path[j] = new + p[len(old) :]
                    break
    sys.path_importer_cache.clear()


def _keep_runtime_reachable() -> dict[str, str]:
    """Before dropping root: keep the stdlib importable when it lives under a folder the sandbox's
    uid cannot enter (e.g. ``/root/.pyenv``). Each such ``sys.path`` folder is opened now and
    reached through ``/proc/self/fd/N`` afterwards (read-only; Landlock still applies). Packages
    imported already (``encodings``...) get the same treatment for their ``__path__``. A zygote does
    it once, before its first fork (:data:`_VIA_FD`): its children inherit the paths and reopen the
    descriptors in their own mount namespace (:func:`_reopen_runtime`)."""
    moved = {}
    for i, entry in enumerate(list(sys.path)):
        if not entry or not os.path.isdir(entry) or _world_reachable(entry):
            continue
        fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        sys.path[i] = moved[entry] = f"/proc/self/fd/{fd}"
    if moved:
        _rebase_package_paths(moved)
    return moved


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is not available."""
    try:
        ctypes, libc = _libc()
        v = libc.syscall(
            ctypes.c_long(_SYS_LANDLOCK[0]), None, ctypes.c_size_t(0), ctypes.c_uint32(1)
        )
    except Exception:
        return 0
    return int(v) if v > 0 else 0


def _landlock_ruleset(
    workdir: str, runtime: list[str], abi: int, tools: list[str] | None = None
) -> int:
    """Build the sandbox's Landlock ruleset (before dropping root: the rules open their paths);
    returns its descriptor for :func:`_landlock_restrict`."""
    _, libc = _libc()
    import ctypes  # loaded by _libc: no file is read

    class _RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class _PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= 1 << 13  # REFER
    if abi >= 3:
        fs |= _LL_TRUNCATE
    if abi >= 5:
        fs |= _LL_IOCTL_DEV
    file_rights = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | _LL_TRUNCATE | _LL_IOCTL_DEV
    attr = _RulesetAttr(
        fs=fs, net=3 if abi >= 4 else 0, scoped=3 if abi >= 6 else 0
    )  # net: bind+connect TCP
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _ll_check(
        ctypes,
        libc.syscall(
            ctypes.c_long(_SYS_LANDLOCK[0]),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        ),
        "create",
    )

    def allow(path: str, rights: int) -> None:
        try:
            fd = os.open(path, getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                rights &= file_rights
            rule = _PathBeneath(allowed=rights & fs, fd=fd)
            _ll_check(
                ctypes,
                libc.syscall(
                    ctypes.c_long(_SYS_LANDLOCK[1]),
                    ctypes.c_int(ruleset),
                    ctypes.c_int(1),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                ),
                f"rule for {path}",
            )
        finally:
            os.close(fd)

    try:
        for path in runtime:
            allow(path, _LL_READ_FILE | _LL_READ_DIR)
        for path in tools or []:  # a workspace's shell and its tools: read and execute, never write
            allow(path, _LL_READ_FILE | _LL_READ_DIR | _LL_EXECUTE)
        for path in _LL_DEVICES:
            allow(path, _LL_READ_FILE | _LL_WRITE_FILE | _LL_TRUNCATE)
        allow(workdir, fs & ~(_LL_EXECUTE | _LL_MAKE_CHAR | _LL_MAKE_BLOCK | _LL_IOCTL_DEV))
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _landlock_restrict(ruleset: int) -> None:
    """No new privileges, then enforce the ruleset on this (single-threaded) process."""
    ctypes, libc = _libc()
    try:
        _ll_check(ctypes, libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _ll_check(
            ctypes,
            libc.syscall(
                ctypes.c_long(_SYS_LANDLOCK[2]), ctypes.c_int(ruleset), ctypes.c_uint32(0)
            ),
            "restrict_self",
        )
    finally:
        os.close(ruleset)


def _load_seccomp(code: list[tuple[int, int, int, int]]) -> None:
    """Set no-new-privileges and stack this classic-BPF seccomp program on the calling thread."""
    _, libc = _libc()
    import ctypes  # loaded by _libc: no file is read

    class _Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]

    filters = (_Filter * len(code))(*[_Filter(*c) for c in code])
    prog = _Prog(len(code), ctypes.cast(filters, ctypes.POINTER(_Filter)))
    _ll_check(ctypes, libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")


def _deny_unix_sockets() -> None:
    """Seccomp: ``socket(AF_UNIX, ...)`` fails with EACCES, and so do io_uring (which could open
    sockets past seccomp) and system calls of a foreign ABI. Landlock (before ABI 8) does not cover
    connecting to a unix socket by path, and a runner's own sockets may be world-connectable."""
    machine = os.uname().machine
    if machine not in _SECCOMP_ARCH:
        raise OSError(f"no seccomp filter for {machine}")
    arch, nr_socket = _SECCOMP_ARCH[machine]
    ld, jeq, jge, ret = (
        0x20,
        0x15,
        0x35,
        0x06,
    )  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    deny, allow = 0x00050000 | 13, 0x7FFF0000  # SECCOMP_RET_ERRNO | EACCES, SECCOMP_RET_ALLOW
    code = [
        (ld, 0, 0, 4),                 # 0  A = arch
        (jeq, 1, 0, arch),             # 1  native -> 3
        (ret, 0, 0, deny),             # 2  a foreign ABI (e.g. int 0x80): refused
        (ld, 0, 0, 0),                 # 3  A = syscall number
        (jge, 4, 0, 0x40000000),       # 4  x32 -> 9
        (jeq, 3, 0, _NR_IO_URING_SETUP),  # 5  io_uring_setup -> 9
        (jeq, 0, 3, nr_socket),        # 6  socket -> 7, else -> 10
        (ld, 0, 0, 16),                # 7  A = first argument (the address family)
        (jeq, 0, 1, 1),                # 8  AF_UNIX -> 9, else -> 10
        (ret, 0, 0, deny),             # 9
        (ret, 0, 0, allow),            # 10
    ]  # fmt: skip
    _load_seccomp(code)


def _drop_uid(args: argparse.Namespace) -> None:
    """Drop root for the sandbox's own uid and gid (no supplementary groups), for good."""
    gid = args.gid if args.gid is not None else args.uid
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(args.uid, args.uid, args.uid)
    if os.getuid() != args.uid or os.geteuid() != args.uid:
        raise OSError(f"could not drop to uid {args.uid}")
    _Forks.own_uid = True


_NEST_DENIED = {  # what a session forked from a nest may not call: state that outlives a process
    "x86_64": {"shmget": 29, "semget": 64, "msgget": 68, "ptrace": 101, "mq_open": 240,
               "add_key": 248, "request_key": 249, "keyctl": 250, "process_vm_readv": 310,
               "process_vm_writev": 311},
    "aarch64": {"mq_open": 180, "msgget": 186, "semget": 190, "shmget": 194, "add_key": 217,
                "request_key": 218, "keyctl": 219, "ptrace": 117, "process_vm_readv": 270,
                "process_vm_writev": 271},
}  # fmt: skip
"""SysV shared memory, semaphores and message queues, POSIX message queues and keyrings outlive the
process that made them (a successive session of the same uid could read them), and ptrace and
process_vm_* could reach another process of the uid."""


def _deny_syscalls(names: dict[str, int]) -> None:
    """Seccomp, stacked on the sandbox's filter: these system calls fail with EPERM."""
    machine = os.uname().machine
    if machine not in _SECCOMP_ARCH:
        raise OSError(f"no seccomp filter for {machine}")
    arch = _SECCOMP_ARCH[machine][0]
    ld, jeq, ret = 0x20, 0x15, 0x06
    deny, allow = 0x00050000 | 1, 0x7FFF0000  # SECCOMP_RET_ERRNO | EPERM, SECCOMP_RET_ALLOW
    nrs = sorted(names.values())
    code = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny), (ld, 0, 0, 0)]
    for i, nr in enumerate(nrs):  # a match jumps to the deny at the end
        code.append((jeq, len(nrs) - i, 0, nr))
    code += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    _load_seccomp(code)


def _ll_check(ctypes: types.ModuleType, v: int, what: str) -> int:
    if v < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock {what}: {os.strerror(err)}")
    return v


# computed once by a zygote before it forks (its children map the same files)
_RUNTIME_PATHS: list[str] = []


def _runtime_paths() -> list[str]:
    """Read-only paths the Python runtime needs: ``sys.path``, the folders of loaded shared
    libraries, the system library folders and time-zone data."""
    if _RUNTIME_PATHS:
        return list(_RUNTIME_PATHS)
    paths = [p for p in sys.path if p and os.path.exists(p)]
    paths.append(os.path.join(sys.base_prefix, "lib"))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                part = line.split(None, 5)
                if len(part) == 6 and part[5].startswith("/") and ".so" in part[5]:
                    paths.append(os.path.dirname(part[5].strip()))
    except OSError:
        pass
    paths.extend(_LL_RUNTIME_DIRS)
    paths.extend(_LL_RUNTIME_FILES)
    seen, out = set(), []
    for p in paths:
        if p not in seen and os.path.exists(p):
            seen.add(p)
            out.append(p)
    return out


def _confine(args: argparse.Namespace, drop_uid: bool = True) -> dict[str, object]:
    """Apply the confinement the runner asked for; returns what was applied. Raises on failure:
    a sandbox never runs with less confinement than its runner believes it has. ``drop_uid=False``
    (a *nest*, see :func:`_nest`): everything but the drop to ``--uid``, which each session's child
    does itself."""
    return _Confinement(args, drop_uid).apply()


class _Confinement:
    """The steps of :func:`_confine`, in the order they must run (Landlock's ruleset is built
    while the runtime is reachable and enforced last); each adds what it applied to ``report``."""

    def __init__(self, args: argparse.Namespace, drop_uid: bool) -> None:
        self.args, self.drop_uid = args, drop_uid
        self.report: dict[str, object] = {}
        self.workdir = os.path.abspath(args.workdir) if args.workdir else ""
        self.ruleset: int | None = None

    def apply(self) -> dict[str, object]:
        """Run every step; the report of what was applied."""
        for step in (
            self.namespaces,
            self.limits,
            self.workspace,
            self.landlock_rules,
            self.user,
            self.parent_death,
            self.seccomp,
        ):
            step()
        if self.ruleset is not None:
            _landlock_restrict(self.ruleset)
        return self.report

    def namespaces(self) -> None:
        """New network and mount namespaces, then the cgroups."""
        args = self.args
        if args.unshare:
            _new_namespaces()
            self.report["namespaces"] = ["network", "mount"]
        if args.cgroup:
            self.report["cgroups"] = _join_cgroups(args.cgroup)

    def limits(self) -> None:
        """The resource limits."""
        self.report["rlimits"] = _apply_limits(self.args)

    def workspace(self) -> None:
        """Into the working folder, a tmpfs of its own if asked for."""
        args, workdir = self.args, self.workdir
        if (args.tmpfs_size or args.landlock) and not workdir:
            raise OSError("--tmpfs-size and --landlock need --workdir")
        if workdir:
            os.chdir(workdir)
        if args.tmpfs_size:
            gid = args.gid if args.gid is not None else args.uid
            _mount_tmpfs(workdir, args.tmpfs_size, args.uid, gid)
            self.report["workspace_tmpfs"] = args.tmpfs_size
        _WORKSPACE[0] = workdir  # "" without --workdir: the working folder is not part of the state

    def landlock_rules(self) -> None:
        """Landlock's ruleset, built now (the runtime's paths are still reachable)."""
        args = self.args
        if not args.landlock:
            return
        abi = landlock_abi()
        if not abi:
            raise OSError("Landlock was asked for but this kernel does not offer it")
        tool_paths = [p for p in args.tool_path if os.path.exists(p)]
        self.ruleset = _landlock_ruleset(self.workdir, _runtime_paths(), abi, tool_paths)
        self.report["landlock"] = abi
        if args.tool_path:
            self.report["tool_paths"] = tool_paths

    def user(self) -> None:
        """The runtime kept reachable through descriptors, then the drop to ``--uid``."""
        args = self.args
        if args.parent_pid or args.deny_unix_sockets:
            _libc()  # import ctypes while the whole stdlib is still reachable
        # the runtime's folders reached through descriptors (see _keep_runtime_reachable)
        reachable: list[str] = []
        if _VIA_FD[0] is not None:  # a zygote's child: the walk was done there, once
            reachable = _reopen_runtime(_VIA_FD[0], keep=args.uid is not None)
        elif args.uid is not None:
            reachable = list(_keep_runtime_reachable())
        if args.uid is None:
            return
        if reachable:
            self.report["runtime_via_fd"] = reachable
        if self.drop_uid:
            _drop_uid(args)
        self.report["uid"] = args.uid

    def parent_death(self) -> None:
        """A signal when the runner dies; orphans of processes env code forks come back to the
        executor, which reaps them."""
        if not self.args.parent_pid:
            return
        _set_parent_death_signal(self.args.parent_pid)
        self.report["parent_death_signal"] = True
        if (_Forks.own_uid or not self.drop_uid) and _LIBC[0][1].prctl(
            _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0
        ) == 0:
            self.report["subreaper"] = True

    def seccomp(self) -> None:
        """No unix sockets, if asked for."""
        if self.args.deny_unix_sockets:
            _deny_unix_sockets()
            self.report["seccomp"] = "no unix sockets"
