"""The podman runner's reaper: removes a runner's containers, service and folder when the runner
process dies, a ``kill -9`` included, at the time it dies rather than at the next runner's start.

It is a small process of its own (``python -m envkernel_podman.reaper``), started by the runner with
a pipe as its standard input that only the runner holds. When the runner closes cleanly it writes
``done`` first, and the reaper exits without touching anything; when the pipe reaches end of file
without it, the runner died, and the reaper removes every container labelled with the runner's token
(``podman rm -f``), stops the podman service the runner started, and removes its folder. The next
runner's start-up sweep stays as the fallback (a reaper killed too, a reboot).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from typing import IO

from .service import podman_binary, podman_env, stop_orphan_service


def start(folder: str, label: str, conf: str) -> subprocess.Popen[bytes]:
    """Start the reaper of one runner: ``label`` (``key=value``) names its containers, ``folder`` is
    its socket folder and ``conf`` the containers.conf its podman commands use."""
    return subprocess.Popen(
        [sys.executable, "-m", "envkernel_podman.reaper", json.dumps([folder, label, conf])],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def release(proc: subprocess.Popen[bytes] | None) -> None:
    """Tell a reaper the runner closed cleanly (nothing to remove), and let it go."""
    if proc is None or proc.stdin is None:
        return
    try:
        proc.stdin.write(b"done\n")
        proc.stdin.close()
    except (BrokenPipeError, ValueError, OSError):
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


def _wait_for_the_runner(stdin: IO[bytes]) -> bool:
    """Block until the pipe closes; True when the runner said ``done`` (a clean close)."""
    said = b""
    while chunk := stdin.read(64):
        said = (said + chunk)[-16:]
    return said.strip().endswith(b"done")


def reap(folder: str, label: str, conf: str) -> list[str]:
    """Remove the containers labelled ``label``, the service started in ``folder`` and the folder.
    Returns the names of the containers removed."""
    env = podman_env(conf)
    podman = podman_binary()
    listed = subprocess.run(
        [podman, "ps", "-aq", "--filter", f"label={label}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = listed.stdout.split()
    if names:
        subprocess.run(
            [podman, "rm", "-f", "-t", "0", *names], env=env, capture_output=True, timeout=120
        )
    stop_orphan_service(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return names


def main() -> None:
    """The reaper's entry point: ``python -m envkernel_podman.reaper '[FOLDER, LABEL, CONF]'``."""
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # a Ctrl-C of the run's terminal: the run cleans up itself
    folder, label, conf = json.loads(sys.argv[1])
    if not _wait_for_the_runner(sys.stdin.buffer):
        reap(folder, label, conf)


if __name__ == "__main__":
    main()
