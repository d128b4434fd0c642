#!/usr/bin/env python3
"""envkernel's in-container supervisor (podman runner). Standard library only.

Runs as the container's second process, under coreutils' ``timeout`` (PID 1, the hard lifetime):

    timeout -s KILL T python3 -S -P supervisor.py SOCKET -- python3 -S -P executor.py [options]

It listens on SOCKET. For every connection from the host it starts a fresh executor whose stdin
and stdout are that connection, and waits for it to exit (the host sent ``close``, hung up, or the
executor died). Before the next connection is served the container is made clean again: every
other process is killed (``kill(-1)`` reaches every process of the sandbox's uid but PID 1 and
this one), the writable places (/work, /tmp, /dev/shm, /dev/mqueue) are emptied and System V IPC
objects are removed. If it cannot verify that, it exits, and the container ends with it.

It is a child subreaper (orphans are reaped here, so zombies never eat the pids limit) and not
dumpable (processes of the same uid cannot ptrace it or read its memory).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import sys
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
IPC_RMID = 0
WRITABLE = ("/work", "/tmp", "/dev/shm", "/dev/mqueue")

_libc = ctypes.CDLL(None, use_errno=True)


def _say(text: str) -> None:
    try:
        os.write(2, f"envkernel supervisor: {text}\n".encode())
    except OSError:
        pass


def _prctl(option: int, value: int) -> None:
    _libc.prctl(
        ctypes.c_int(option),
        ctypes.c_ulong(value),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )


def _others() -> list[int]:
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_others() -> bool:
    deadline = time.monotonic() + 2.0
    while True:
        _reap()
        if not _others():
            return True
        if time.monotonic() > deadline:
            return False
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        time.sleep(0.001)


def _retry_writable(func, path, _exc) -> None:
    try:
        os.chmod(os.path.dirname(path) or "/", 0o700)
        os.chmod(path, 0o700)
    except OSError:
        pass
    try:
        func(path)
    except OSError:
        pass


def _wipe(root: str) -> bool:
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    for name in names:
        path = os.path.join(root, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path, onerror=_retry_writable)
            else:
                os.unlink(path)
        except OSError:
            pass
    try:
        return not os.listdir(root)
    except OSError:
        return False


def _wipe_ipc() -> bool:
    calls = {
        "shm": lambda i: _libc.shmctl(i, IPC_RMID, None),
        "sem": lambda i: _libc.semctl(i, 0, IPC_RMID),
        "msg": lambda i: _libc.msgctl(i, IPC_RMID, None),
    }
    clean = True
    for kind, remove in calls.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                ids = [int(line.split()[1]) for line in f.read().splitlines()[1:] if line.strip()]
        except (OSError, ValueError, IndexError):
            continue
        for ident in ids:
            if remove(ctypes.c_int(ident)) != 0:
                clean = False
    return clean


def clean() -> bool:
    """Kill every other process, empty the writable places, remove IPC objects; True if verified."""
    if not _kill_others():
        _say("processes survived kill(-1)")
        return False
    for root in WRITABLE:
        if not _wipe(root):
            _say(f"could not empty {root}")
            return False
    if not _wipe_ipc():
        _say("could not remove System V IPC objects")
        return False
    return True


def _on_term(signum, frame) -> None:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    os._exit(0)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        _say("usage: supervisor.py SOCKET -- EXECUTOR-COMMAND...")
        return 2
    path, command = argv[0], argv[2:]
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o666)
    server.listen(1)
    generation = 0
    while True:
        if generation and not clean():
            return 75
        conn, _ = server.accept()
        generation += 1
        pid = os.fork()
        if pid == 0:  # the executor: the connection is its stdin and stdout
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                fd = conn.fileno()
                os.dup2(fd, 0)
                os.dup2(fd, 1)
                server.close()
                conn.close()
                os.execvp(command[0], command)
            finally:
                os._exit(127)
        conn.close()
        while True:  # reap orphans while the executor runs; stop when it exits
            try:
                done, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if done == pid:
                if os.WIFSIGNALED(status):
                    _say(f"executor {generation} was killed by signal {os.WTERMSIG(status)}")
                elif os.WEXITSTATUS(status):
                    _say(f"executor {generation} exited with code {os.WEXITSTATUS(status)}")
                break


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
