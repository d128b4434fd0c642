"""The executor's nests: sandboxes reused, never their processes (``--nest``, from a zygote).

Standard library only; loaded by the zygote (:mod:`envkernel_runtime.executor_zygote`), which is
the only one to start a nest.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import time

from envkernel_runtime import executor_protocol as _protocol
from envkernel_runtime.executor_confine import (
    _NEST_DENIED,
    _PR_SET_CHILD_SUBREAPER,
    _deny_syscalls,
    _drop_uid,
)
from envkernel_runtime.executor_protocol import (
    _LIBC,
    CONFINEMENT,
    Executor,
    _Forks,
    _install_fork_guards,
    _install_patches,
    _real_monotonic,
    _set_parent_death_signal,
)
from envkernel_runtime.executor_serving import _NESTED, _RECYCLED, _serve_connection

# --------------------------------------------------------------------------- nests: sandboxes
# reused, never their processes
#
# ``--nest`` makes a confined executor that never runs environment code itself: it applies the whole
# confinement but the uid (namespaces, cgroups, rlimits, tmpfs, Landlock, seccomp; it stays root
# inside
# them, so no session can signal it, trace it or write its memory), then forks one *session* child
# after another. Each child drops to the sandbox's uid, stacks a seccomp filter against state that
# outlives a process (``_NEST_DENIED``), and serves the runner's socket and a direct lane exactly as
# an
# executor does. The runner's ``{"op":"recycle"}`` makes the child answer and exit (code 75); the
# nest
# then kills every process left with the uid, empties the working folder (a tmpfs) and the log, and
# reads ``{"op":"session"}`` carrying the next session's lane (SCM_RIGHTS): it forks the next child
# from
# its own untouched memory and answers ``{"ok":true,"value":{...}}``. A child that ends any other
# way
# ends the nest with the same code (the runner then sees the death it would have seen).


def _nest(args: argparse.Namespace, conn: socket.socket, lane: socket.socket | None) -> int:
    """Fork sessions one after another (see above); returns (or exits) when one ends unasked."""
    nest_pid, workdir, n, reply = os.getpid(), os.path.abspath(args.workdir), 0, None
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        n += 1
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = _nest_session(args, conn, lane, n, nest_pid)
            except BaseException as exc:
                os.write(
                    2, f"envkernel executor (nest session): {type(exc).__name__}: {exc}\n".encode()
                )
            os._exit(code)
        if lane is not None:
            lane.close()
        if reply is not None:
            reply["pid"] = pid
            conn.sendall(
                json.dumps({"ok": True, "value": reply}, separators=(",", ":")).encode() + b"\n"
            )
        code = _nest_wait(pid)
        if code != _RECYCLED:
            _nest_exit(code)
        try:
            killed = _nest_sweep(args.uid)
            _nest_wipe(workdir)
            if os.listdir(workdir):
                raise OSError(f"the working folder is not empty: {os.listdir(workdir)[:5]}")
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)
        except OSError as exc:
            os.write(
                2,
                f"envkernel executor (nest): cannot clear the sandbox for reuse: {exc}\n".encode(),
            )
            return 70
        data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 1)
        if not data.startswith(b'{"op":"session"') or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return 0
        lane = socket.socket(fileno=fds[0])
        reply = {"session": n + 1, "killed": killed}


def _nest_session(
    args: argparse.Namespace, conn: socket.socket, lane: socket.socket | None, n: int, nest_pid: int
) -> int:
    """In a nest's child: drop to the sandbox's uid, deny what outlives a process, then serve."""
    _Forks.main_pid = os.getpid()
    _set_parent_death_signal(nest_pid)
    _drop_uid(args)
    _LIBC[0][1].prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _deny_syscalls(_NEST_DENIED.get(os.uname().machine, {}))
    CONFINEMENT["nest"] = {"session": n, "denied": sorted(_NEST_DENIED.get(os.uname().machine, {}))}
    _NESTED[0] = True
    _install_fork_guards()
    _install_patches()
    _protocol._CURRENT = Executor(max_response=args.max_response)
    _Forks.protocol_fds = [conn.fileno()] + ([lane.fileno()] if lane is not None else [])
    _serve_connection(_protocol._CURRENT, conn, lane)
    return 0


def _nest_wait(pid: int) -> int:
    """Reap the nest's children (orphans of the session come here too) until ``pid``; its exit
    code."""
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 70
        if got == pid:
            return os.waitstatus_to_exitcode(status)


def _nest_exit(code: int) -> None:
    """End the nest as its session ended (the same signal or code), so the runner sees that."""
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # (those two cannot be caught anyway)
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(code)


def _nest_sweep(uid: int) -> int:
    """Kill every process of ``uid`` and reap them; the number reaped. Every one of them descends
    from the nest (its subreaper), so it is done when the nest has no child left (the usual case
    right away: the executor kills what each call started). ``kill(-1)`` with
    the real and effective uid set to ``uid`` (and no capability in effect) reaches that uid's
    processes only (a fork cannot race it); root comes back from the saved uid."""
    killed, deadline = 0, _real_monotonic() + 5.0
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            pass  # some are left: kill them all
        else:
            killed += 1  # one was reaped: kill the rest too
    except ChildProcessError:
        # no descendant left, so no process of the uid (kill(-1) walks every process of the host)
        return 0
    while True:
        os.setresuid(uid, uid, 0)
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finally:
            os.setresuid(0, 0, 0)
        while True:
            try:
                got, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return killed
            if got == 0:
                break
            killed += 1
        if _real_monotonic() > deadline:
            raise OSError("processes of the last session did not die within 5 s")
        time.sleep(0.0005)


def _nest_wipe(folder: str) -> None:
    """Remove everything inside ``folder`` (as root: modes do not stop it; symlinks are not
    followed)."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            _nest_wipe(entry.path)
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)
