"""The sandbox image: check that it is there, and build it offline
(``envkernel sandbox build-image``)."""

from __future__ import annotations

import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .errors import SandboxError
from .service import asset_path, containers_conf, podman_binary, podman_env

DEFAULT_IMAGE = "localhost/envkernel-sandbox:latest"
BUILD_COMMAND = "envkernel sandbox build-image"


def missing_image_error(image: str) -> SandboxError:
    """The error a run gets when the image is not built: it names the command that builds it."""
    return SandboxError(
        f"the sandbox image {image!r} is not in Podman's storage. Build it once (offline, "
        f"~40 s) with `{BUILD_COMMAND}`"
        + (f" --image {image}" if image != DEFAULT_IMAGE else "")
        + " (as root), or run "
        "scripts/install-podman.sh, which also installs Podman",
        code="no_image",
    )


IMAGE_VERSION = 2
"""The image version this runner wants (label ``envkernel.image``): 2 adds git and sqlite3."""


def image_version(image: str, env: dict[str, str] | None = None) -> int:
    """The ``envkernel.image`` label of ``image`` in Podman's storage (0 when it is missing)."""
    proc = subprocess.run(
        [
            podman_binary(),
            "image",
            "inspect",
            "--format",
            '{{ index .Labels "envkernel.image" }}',
            image,
        ],
        env=env or podman_env(containers_conf("")),
        check=False,
        capture_output=True,
        text=True,
    )
    try:
        return int(proc.stdout.strip()) if proc.returncode == 0 else 0
    except ValueError:
        return 0


@dataclass
class BuildResult:
    image: str
    built: bool
    seconds: float


def build_image(
    image: str = DEFAULT_IMAGE,
    *,
    mirror: str = "",
    suite: str = "bookworm",
    force: bool = False,
    conf: str = "",
    quiet: bool = False,
    on_line: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build the image with the shipped ``build-image.sh`` (debootstrap + podman import); a no-op
    when it exists unless ``force``. With ``on_line``, the script's output goes to it line by line
    instead of to the terminal (a failure's error then quotes its last lines)."""
    podman_binary()
    env = podman_env(containers_conf(conf))
    if not force and image_version(image, env) >= IMAGE_VERSION:
        return BuildResult(image, False, 0.0)
    argv = ["bash", asset_path("build-image.sh"), "--image", image, "--suite", suite]
    if mirror:
        argv += ["--mirror", mirror]
    if force:
        argv.append("--force")
    t0 = time.monotonic()
    if on_line is None:
        code, tail = (
            subprocess.run(
                argv, env=env, check=False, stdout=subprocess.DEVNULL if quiet else None
            ).returncode,
            [],
        )
    else:
        code, tail = stream_lines(argv, env, on_line)
    if code != 0:
        where = "; its last lines:\n" + "\n".join(tail) if tail else "; see the output above"
        raise SandboxError(f"building the sandbox image {image!r} failed (exit code {code}){where}")
    return BuildResult(image, True, time.monotonic() - t0)


def stream_lines(
    argv: list[str], env: dict[str, str] | None, on_line: Callable[[str], None], keep: int = 40
) -> tuple[int, list[str]]:
    """Run ``argv`` with its stdout and stderr merged, handing each line to ``on_line``; return its
    exit code and its last ``keep`` lines."""
    tail: deque[str] = deque(maxlen=keep)
    with subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            tail.append(line)
            on_line(line)
    return proc.returncode, list(tail)
