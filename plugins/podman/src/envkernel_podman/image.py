"""The sandbox image: check that it is there, and build it offline (``envkernel sandbox build-image``)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from .errors import SandboxError
from .service import asset_path, containers_conf, podman_binary, podman_env

DEFAULT_IMAGE = "localhost/envkernel-sandbox:latest"
BUILD_COMMAND = "envkernel sandbox build-image"


def missing_image_error(image: str) -> SandboxError:
    """The error a run gets when the image is not built: it names the command that builds it."""
    return SandboxError(
        f"the sandbox image {image!r} is not in Podman's storage. Build it once (offline, ~40 s) with "
        f"`{BUILD_COMMAND}`" + (f" --image {image}" if image != DEFAULT_IMAGE else "") + " (as root), or run "
        "scripts/install-podman.sh, which also installs Podman",
        code="no_image",
    )


IMAGE_VERSION = 2
"""The image version this runner wants (label ``envkernel.image``): 2 adds git and sqlite3."""


def image_version(image: str, env: dict[str, str] | None = None) -> int:
    """The ``envkernel.image`` label of ``image`` in Podman's storage (0 when it is missing)."""
    proc = subprocess.run([podman_binary(), "image", "inspect", "--format", '{{ index .Labels "envkernel.image" }}', image],
                          env=env or podman_env(containers_conf("")), check=False, capture_output=True, text=True)
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
) -> BuildResult:
    """Build the image with the shipped ``build-image.sh`` (debootstrap + podman import); a no-op
    when it exists unless ``force``."""
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
    proc = subprocess.run(argv, env=env, check=False, stdout=subprocess.DEVNULL if quiet else None)
    if proc.returncode != 0:
        raise SandboxError(f"building the sandbox image {image!r} failed (exit code {proc.returncode}); see the output above")
    return BuildResult(image, True, time.monotonic() - t0)

