"""The executor's command line and serving loops: stdin/stdout, a unix socket, a direct lane.

Standard library only. :func:`main` parses the command line (:func:`_parser`) and :func:`_run`
confines the process, then answers requests on stdin/stdout, on the socket of ``--socket``, or on
a zygote child's socket (with its direct lane, :func:`_serve_lanes`). ``--zygote`` and ``--nest``
are served by :mod:`envkernel_runtime.executor_zygote` and :mod:`envkernel_runtime.executor_nests`,
imported only when asked for (the Podman runner ships neither).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import types
from collections.abc import Callable

from envkernel_runtime import executor_protocol as _protocol
from envkernel_runtime.executor_confine import _confine
from envkernel_runtime.executor_protocol import (
    CONFINEMENT,
    DEFAULT_MAX_RESPONSE,
    Executor,
    _err,
    _Forks,
    _install_fork_guards,
    _install_patches,
)

# --------------------------------------------------------------------------- serving


def _serve_stdio(executor: Executor) -> int:
    # The protocol keeps private copies of fds 0 and 1; fd 1 then points at stderr and fd 0 at
    # /dev/null, so nothing environment code prints or reads can touch the protocol.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    _Forks.protocol_fds = [proto_in.fileno(), proto_out.fileno()]
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull)
    reader = _Lines(proto_in.read)
    while True:
        line = reader.readline()
        if line is None:
            return 0
        if not line.strip():
            continue
        proto_out.write(executor.handle_line(line))
        if executor.closing:
            return 0


class _Lines:
    """Unbuffered-source line reader (no 8 KiB readline limit, no partial reads lost)."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self.read = read
        self.buf = bytearray()

    def readline(self) -> bytes | None:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line
            chunk = self.read(1 << 20)
            if not chunk:
                if self.buf:
                    line, self.buf = bytes(self.buf), bytearray()
                    return line
                return None
            self.buf += chunk


def _serve_socket(executor: Executor, path: str) -> int:
    sys.stdout = sys.stderr
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # the path appears only once it is listening: a connect never meets a bound, deaf socket
    staging = f"{path}.{os.getpid()}"
    server.bind(staging)
    os.chmod(staging, 0o666)
    server.listen(1)
    os.rename(staging, path)

    def unlink() -> None:
        if os.path.exists(path):
            os.unlink(path)

    _CLEANUP.append(unlink)
    while True:
        conn, _ = server.accept()
        _Forks.protocol_fds = [server.fileno(), conn.fileno()]
        with conn:
            if _serve_connection(executor, conn):
                _cleanup()
                return 0


def _serve_lanes(executor: Executor, conn: socket.socket, lane: socket.socket) -> bool:
    """Serve the runner's socket and the *direct lane* (a second socket the runner may hand to a
    client on the same host, so a tool call skips the runner's process) together, one request at a
    time. The lane takes ``call``, ``restore``, ``dump`` (read-only) and ``ping`` only; a call or
    restore that succeeds over it counts in ``executor.direct_calls``, which the next snapshot
    reports (the runner's log lacks it). Ends (True when asked to close) when the runner's socket
    does; a lane that closes is dropped."""
    import select

    buffers = {conn: bytearray(), lane: bytearray()}
    while True:
        for sock in select.select(list(buffers), [], [])[0]:
            try:
                chunk = sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                if sock is conn:
                    return False
                del buffers[lane]
                _Forks.protocol_fds = [conn.fileno()]
                lane.close()
                continue
            buf = buffers[sock]
            buf += chunk
            while (i := buf.find(b"\n")) >= 0:
                line = bytes(buf[: i + 1])
                del buf[: i + 1]
                if not line.strip():
                    continue
                if sock is lane:
                    if not line.startswith(
                        (b'{"op":"call"', b'{"op":"ping"', b'{"op":"restore"', b'{"op":"dump"')
                    ):
                        out = executor._encode(
                            _err(
                                "bad_request",
                                "the direct lane takes 'call', 'restore', 'dump' and 'ping' only",
                            )
                        )
                    # a restore counts too: the runner's log does not know of it (a dump or a ping
                    # changes nothing)
                    else:
                        out = executor.handle_line(line)
                        executor.direct_calls += out.startswith(
                            b'{"ok":true'
                        ) and not line.startswith((b'{"op":"ping"', b'{"op":"dump"'))
                elif _NESTED[0] and line.startswith(b'{"op":"recycle"'):
                    _recycle_exit(conn)
                else:
                    out = executor.handle_line(line)
                try:
                    sock.sendall(out)
                except OSError:
                    if sock is conn:
                        return False
                if executor.closing:
                    return True


def _serve_connection(
    executor: Executor, conn: socket.socket, lane: socket.socket | None = None
) -> bool:
    """Answer requests on one connected socket until it ends; True when asked to close."""
    if lane is not None:
        return _serve_lanes(executor, conn, lane)
    reader = _Lines(conn.recv)
    while True:
        try:
            line = reader.readline()
        except OSError:
            return False
        if line is None:
            return False
        if not line.strip():
            continue
        if _NESTED[0] and line.startswith(b'{"op":"recycle"'):
            _recycle_exit(conn)
        try:
            conn.sendall(executor.handle_line(line))
        except OSError:
            return False
        if executor.closing:
            return True


_CLEANUP: list[Callable[[], None]] = []


def _cleanup() -> None:
    for fn in _CLEANUP:
        try:
            fn()
        except Exception:
            pass


def _on_term(signum: int, frame: types.FrameType | None) -> None:
    _cleanup()
    os._exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="envkernel sandbox executor (JSON lines)")
    parser.add_argument("--socket", help="listen on this unix socket instead of stdin/stdout")
    parser.add_argument("--rlimit-as", type=int, default=0, help="address-space limit in bytes")
    parser.add_argument("--rlimit-cpu", type=int, default=0, help="CPU-time limit in seconds")
    parser.add_argument("--rlimit-fsize", type=int, default=0, help="file-size limit in bytes")
    parser.add_argument(
        "--rlimit-nproc",
        type=int,
        default=0,
        help="process limit of the sandbox's uid (with --uid)",
    )
    parser.add_argument("--rlimit-nofile", type=int, default=0, help="open-file limit")
    parser.add_argument(
        "--max-response",
        type=int,
        default=DEFAULT_MAX_RESPONSE,
        help="largest response line in bytes",
    )
    parser.add_argument(
        "--workdir",
        default="",
        help="the sandbox's working folder: its current folder, part of its state (snapshots, "
        "failed calls)",
    )
    parser.add_argument(
        "--cgroup",
        action="append",
        default=[],
        help="a cgroup.procs file to join first (repeatable)",
    )
    parser.add_argument(
        "--tmpfs-size",
        type=int,
        default=0,
        help="mount a tmpfs of this many bytes on the working folder (root, private mount "
        "namespace)",
    )
    parser.add_argument("--uid", type=int, default=None, help="drop to this uid (root only)")
    parser.add_argument("--gid", type=int, default=None, help="drop to this gid (default: the uid)")
    parser.add_argument(
        "--parent-pid", type=int, default=0, help="die with this parent (the runner)"
    )
    parser.add_argument(
        "--landlock", action="store_true", help="confine files, TCP and signals with Landlock"
    )
    parser.add_argument(
        "--tool-path",
        action="append",
        default=[],
        help="with --landlock: a read-only, executable path for a workspace's shell (repeatable)",
    )
    parser.add_argument(
        "--deny-unix-sockets",
        action="store_true",
        help="seccomp: no unix-domain sockets, no io_uring",
    )
    parser.add_argument(
        "--unshare",
        action="store_true",
        help="enter an empty network namespace and a private mount namespace first (root)",
    )
    parser.add_argument(
        "--nest",
        action="store_true",
        help="(root, with --uid and --tmpfs-size) confine all but the uid, then fork one session "
        "after another, each dropping to --uid; between them kill what is left of the uid "
        "and empty the working folder",
    )
    parser.add_argument(
        "--zygote",
        metavar="FOLDER",
        default="",
        help="be a fork server working in FOLDER: fork one confined executor per request on the "
        "control socket (stdin)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.zygote:
        from envkernel_runtime.executor_zygote import _zygote

        return _zygote(args)
    return _run(args, None)


def _run(
    args: argparse.Namespace, conn: socket.socket | None, lane: socket.socket | None = None
) -> int:
    """Confine this process as ``args`` ask, then serve: on ``conn`` (a zygote's child), the
    socket of ``--socket``, or stdin/stdout."""
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    if hasattr(signal, "SIGXFSZ"):  # a too-large write fails with EFBIG instead of killing us
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(
            signal.SIGPIPE, signal.SIG_DFL if not (args.socket or conn) else signal.SIG_IGN
        )
    _Forks.main_pid = os.getpid()
    try:
        if args.nest and (args.uid is None or not args.tmpfs_size or conn is None):
            raise OSError("--nest needs --uid, --tmpfs-size and a zygote's socket")
        CONFINEMENT.update(_confine(args, drop_uid=not args.nest))
    except BaseException as exc:
        sys.stderr.write(
            f"envkernel executor: cannot confine the sandbox: {type(exc).__name__}: {exc}\n"
        )
        sys.stderr.flush()
        return 78
    if args.nest:  # loaded by the zygote, the only one to start a nest
        from envkernel_runtime.executor_nests import _nest

        assert conn is not None  # checked before the confinement
        return _nest(args, conn, lane)
    _install_fork_guards()
    _install_patches()
    _protocol._CURRENT = Executor(max_response=args.max_response)
    if conn is not None:
        _Forks.protocol_fds = [conn.fileno()] + ([lane.fileno()] if lane is not None else [])
        _serve_connection(_protocol._CURRENT, conn, lane)
        return 0
    if args.socket:
        return _serve_socket(_protocol._CURRENT, args.socket)
    return _serve_stdio(_protocol._CURRENT)


_NESTED = [False]  # True in a session forked from a nest: it takes ``recycle``
_RECYCLED = 75


def _recycle_exit(conn: socket.socket) -> None:
    """In a nest's session: the runner wants the sandbox back; answer and end this session."""
    try:
        conn.sendall(b'{"ok":true,"value":null}\n')
    finally:
        os._exit(_RECYCLED)
