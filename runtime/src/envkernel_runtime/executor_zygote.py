"""The executor's fork server for the ``process`` runner (``executor.py --zygote FOLDER``).

Standard library only; imported by :func:`envkernel_runtime.executor_serving.main` when
``--zygote`` is given, before anything is confined.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket

# a child may be a nest: its code is loaded here, before any child confines itself
import envkernel_runtime.executor_nests  # noqa: F401
from envkernel_runtime.executor_confine import (
    _RUNTIME_PATHS,
    _VIA_FD,
    _keep_runtime_reachable,
    _runtime_paths,
)
from envkernel_runtime.executor_protocol import _libc, _set_parent_death_signal
from envkernel_runtime.executor_serving import _parser, _run

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is never imported at run time: it would slow the executor's start
    from typing import Any

# --------------------------------------------------------------------------- the zygote (fork
# server)
#
# ``--zygote`` makes this file a fork server for the ``process`` runner: started once (as the
# runner's user, unconfined, never running environment code), it has the interpreter, this module,
# the engine and ctypes loaded. Its stdin is a SOCK_SEQPACKET control socket. Each request is one
# packet, ``{"batch": [{"id": n, "argv": [executor options], "env": {...}, "nfds": 2 or 3}, ...]}``,
# carrying each executor's two or three descriptors in order (SCM_RIGHTS): its protocol socket, its
# log, and optionally its direct lane (see ``_serve_lanes``). The zygote forks one child per item;
# each
# starts
# a session of its own, points stdout/stderr at the log, and runs exactly what a freshly started
# executor runs (``_run``: namespaces, cgroups, rlimits, tmpfs, Landlock, uid, seccomp, in that
# order) before it serves the protocol on its socket. The zygote answers ``{"forked": [[n, pid],
# ...],
# "errors": [[n, why], ...]}`` per packet, and later ``{"exits": [[pid, code], ...]}`` (a negative
# code: killed by that signal) when it reaps them.
# Its children die with it (parent-death signal), and it dies with the runner.


def _zygote(args: argparse.Namespace) -> int:
    return _ForkServer(args).serve()


class _ForkServer:
    """The zygote's state: its control socket, the self-pipe SIGCHLD wakes it with, and the
    parser each child's options are read with."""

    def __init__(self, args: argparse.Namespace) -> None:
        # its folder is on its command line, which its children share: they are findable by it
        os.chdir(args.zygote)
        self.ctl = socket.socket(fileno=os.dup(0))
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.close(devnull)
        _libc()
        if args.parent_pid:
            _set_parent_death_signal(args.parent_pid)
        _RUNTIME_PATHS[:] = _runtime_paths()
        # Work every child would repeat, done once here (0.5 and 0.8 ms of each open's CPU): the
        # rlimits' C module loaded, and the walk for the runtime's unreachable folders, with
        # sys.path moved onto descriptors (each child opens them again in its own mount namespace,
        # onto the same numbers, or puts the paths back if it keeps the runner's uid:
        # _reopen_runtime).
        import resource  # noqa: F401

        if os.geteuid() == 0:  # only a root runner's children drop to a uid of their own
            _VIA_FD[0] = _keep_runtime_reachable()
        self.parser = _parser()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    def serve(self) -> int:
        """Reap and fork until the runner closes the control socket."""
        import select

        ctl = self.ctl
        watched: list[socket.socket | int] = [ctl, self.wake_r]
        while True:
            ready = select.select(watched, [], [])[0]
            if self.wake_r in ready:
                self.reap()
            # every request already queued is forked in this wake-up (opens come in bursts)
            queued = ctl in ready
            while queued:
                data, fds, _flags, _addr = socket.recv_fds(
                    ctl, 1 << 20, _ZYGOTE_MAX_FDS
                )  # (its flags are ignored in 3.11: no MSG_DONTWAIT)
                queued = bool(select.select([ctl], [], [], 0)[0])
                if not data:
                    return 0  # the runner closed it: children die with us
                self.packet(data, fds)

    def reap(self) -> None:
        """Collect the children that ended and report their exit codes."""
        os.read(self.wake_r, 4096)
        exits = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            exits.append([pid, os.waitstatus_to_exitcode(status)])
        if exits:
            self.ctl.send(json.dumps({"exits": exits}).encode())

    def packet(self, data: bytes, fds: list[int]) -> None:
        """Fork one child per item of a request packet; answer what was forked and what not."""
        try:
            items = _batch(data, fds)
        except Exception as exc:
            for fd in fds:
                os.close(fd)
            error = [[None, f"{type(exc).__name__}: {exc}"]]
            self.ctl.send(json.dumps({"forked": [], "errors": error}).encode())
            return
        forked, errors, at = [], [], 0
        for item in items:
            n = int(item.get("nfds") or len(fds))
            own, at = fds[at : at + n], at + n
            try:
                if n not in (2, 3):
                    raise ValueError(f"expected 2 or 3 descriptors, got {n}")
                item["parsed"] = _parsed(self.parser, item.get("argv") or [])
                pid = os.fork()
            except Exception as exc:
                for fd in own:
                    os.close(fd)
                errors.append([item.get("id"), f"{type(exc).__name__}: {exc}"])
                continue
            if pid == 0:
                wake = (self.wake_r, self.wake_w)
                _zygote_child(self.ctl, wake, self.parser, item, own, fds[at:])
            for fd in own:
                os.close(fd)
            forked.append([item.get("id"), pid])
        self.ctl.send(json.dumps({"forked": forked, "errors": errors}).encode())


def _batch(data: bytes, fds: list[int]) -> list[dict[str, Any]]:
    """A request packet's items (a batch, or one item), checked against the descriptors it
    carried."""
    req = json.loads(data)
    items: list[dict[str, Any]] = (
        req["batch"] if isinstance(req, dict) and "batch" in req else [req]
    )
    if sum(int(it.get("nfds") or len(fds)) for it in items) != len(fds):
        raise ValueError(
            f"the requests name {sum(int(it.get('nfds') or 0) for it in items)} "
            f"descriptors, got {len(fds)}"
        )
    return items


def _parsed(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | None:
    """``argv`` parsed in the zygote before the fork, where the parser's code and data are warm: in
    a fresh child the same parse took about 1 ms (its pages copied on write as it ran), 0.1-0.2 ms
    here. None when it does not parse (the child then parses it again and fails with the message in
    its log)."""
    try:
        return parser.parse_args(argv)
    except (SystemExit, Exception):
        return None


_ZYGOTE_MAX_FDS = 3 * 64
"""Descriptors one request to the zygote may carry: a batch of up to 64 executors, 3 each
(SCM_RIGHTS takes at most 253)."""


def _zygote_child(
    ctl: socket.socket,
    wake: tuple[int, int],
    parser: argparse.ArgumentParser,
    req: dict[str, Any],
    fds: list[int],
    others: list[int],
) -> None:
    """In a child the zygote just forked: drop the zygote's descriptors (and those of the sandboxes
    later in its batch), then confine and serve as ``req`` asks (see :func:`_run`); never
    returns."""
    code = 70
    try:
        ctl.close()
        for fd in others:  # the next sandboxes' sockets: never this one's
            os.close(fd)
        signal.set_wakeup_fd(-1)
        for fd in wake:
            os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        proto, log, *lane = fds
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.environ.clear()
        os.environ.update(req.get("env") or {})
        child = req.get("parsed") or parser.parse_args(
            req.get("argv") or []
        )  # a bad one fails here, in its own log
        child.parent_pid = os.getppid()  # the zygote: it dies with the runner
        code = _run(
            child, socket.socket(fileno=proto), socket.socket(fileno=lane[0]) if lane else None
        )
    except BaseException as exc:
        try:
            os.write(2, f"envkernel executor (forked): {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
    os._exit(code)
