"""Parts of the podman runner that need no Podman: settings, ownership, reaping folders, the
command hook, the shipped assets. (tests/test_podman_*.py run the real thing.)"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import click
import msgspec
import pytest

from envkernel_podman import SandboxError, Settings, register_commands, register_sandbox_runners
from envkernel_podman.image import BUILD_COMMAND, missing_image_error, stream_lines
from envkernel_podman.runner import PodmanRunner, _connection_error, reap_folders
from envkernel_podman.service import Owner, asset_path, boot_id, process_start

REPO = Path(__file__).resolve().parents[3]


def test_settings_are_strict_and_have_safe_defaults():
    s = msgspec.convert({"pool_size": 3, "memory_mb": 128}, Settings)
    assert s.pool_size == 3 and s.memory_mb == 128
    assert s.user == "1000:1000" and s.recycle and s.reap
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"pool_sise": 3}, Settings)


def test_the_runner_does_no_io_until_it_is_used():
    runner = PodmanRunner(Settings(run_dir="/nonexistent/envkernel-test"))
    assert runner.sessions == [] and runner.pool_ready == 0
    assert not os.path.exists("/nonexistent/envkernel-test")


def test_owner_identity_tells_dead_from_alive():
    me = Owner.me()
    assert me.alive() is True
    assert Owner.from_labels(me.labels()) == me
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    child.wait()
    assert Owner(me.host, me.boot, child.pid, start).alive() is False
    assert Owner(me.host, "another-boot", me.pid, me.start).alive() is False
    assert (
        Owner(me.host, me.boot, me.pid, "1").alive() is False
    )  # the pid now belongs to someone else
    assert Owner("some-other-host", me.boot, me.pid, me.start).alive() is None
    assert Owner.from_labels({"envkernel.owner.pid": "x"}) is None
    assert boot_id() and process_start(os.getpid())


def test_reap_folders_removes_only_dead_runners_folders(tmp_path):
    me = Owner.me()
    live = tmp_path / f"{me.key}-aaaa"
    dead = tmp_path / f"{os.getpid()}-1-bbbb"  # same pid, another start time: a dead owner
    other = tmp_path / "not-a-runner"
    for d in (live, dead, other):
        (d / "box").mkdir(parents=True)
    assert reap_folders(str(tmp_path)) == 1
    assert live.exists() and other.exists() and not dead.exists()
    assert reap_folders(str(tmp_path / "missing")) == 0


def test_connection_errors_are_told_from_api_answers():
    class APIError(Exception):
        response = None

    assert _connection_error(ConnectionRefusedError())
    wrapped = RuntimeError("GET failed")
    wrapped.__cause__ = FileNotFoundError()
    assert _connection_error(wrapped)
    assert _connection_error(APIError("(GET operation failed)"))
    answered = APIError("no such container")
    answered.response = object()
    assert not _connection_error(answered)
    assert not _connection_error(ValueError("bad"))


def test_a_missing_image_error_names_the_command():
    err = missing_image_error("localhost/x:1")
    assert isinstance(err, SandboxError) and err.code == "no_image"
    assert BUILD_COMMAND in str(err) and "--image localhost/x:1" in str(err)


def test_assets_are_shipped_and_containers_folder_points_at_them():
    for name in ("containers.conf", "build-image.sh", "supervisor.py"):
        assert os.path.isfile(asset_path(name))
    conf = Path(asset_path("containers.conf")).read_text()
    assert (
        'runtime = "runc"' in conf and '"nofile=1024:1024"' in conf and '"nproc=1024:1024"' in conf
    )
    for name in ("containers.conf", "build-image.sh"):
        linked = REPO / "containers" / name
        if linked.exists():
            assert os.path.samefile(linked, asset_path(name))
    with pytest.raises(SandboxError):
        asset_path("nope.txt")


def test_the_supervisor_empties_a_folder_even_with_locked_subfolders(tmp_path):
    spec = importlib.util.spec_from_file_location("envk_supervisor", asset_path("supervisor.py"))
    sup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sup)  # defines functions only; nothing runs on import
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "g").write_text("y")
    os.symlink("/etc/passwd", tmp_path / "link")
    os.chmod(tmp_path / "a" / "b", 0o500)
    os.chmod(tmp_path / "a", 0o500)
    assert sup._wipe(str(tmp_path)) is True
    assert list(tmp_path.iterdir()) == []
    assert os.path.exists("/etc/passwd")
    assert sup._wipe(str(tmp_path / "missing")) is True


def test_hooks_register_the_runner_and_the_sandbox_commands():
    got = {}
    register_sandbox_runners(lambda name, factory: got.setdefault(name, factory))
    assert got == {"podman": PodmanRunner}

    @click.group()
    def cli() -> None: ...

    register_commands(cli)
    assert {"build-image", "ps", "reap"} <= set(cli.commands["sandbox"].commands)

    @click.group()
    def cli2() -> None: ...

    @cli2.group("sandbox")
    def other() -> None: ...

    @other.command("mine")
    def mine() -> None: ...

    register_commands(cli2)  # another plugin made the group first: the commands join it
    assert {"mine", "build-image", "ps", "reap"} <= set(cli2.commands["sandbox"].commands)


def test_default_run_dir_gives_short_socket_paths():
    from envkernel_podman.service import default_run_dir

    path = os.path.join(default_run_dir(), f"{Owner.me().key}-abcdef12", "999-abcdef", "s.sock")
    assert len(path) < 100, path  # unix socket paths are limited to 108 bytes
    assert socket.gethostname()


def test_a_build_streams_its_output_line_by_line_and_keeps_the_tail() -> None:
    seen: list[str] = []
    code, tail = stream_lines(
        ["bash", "-c", "for i in $(seq 1 50); do echo step $i; done; echo oops >&2; exit 3"],
        None,
        seen.append,
        keep=5,
    )
    assert code == 3 and len(seen) == 51 and seen[0] == "step 1"
    assert tail == ["step 47", "step 48", "step 49", "step 50", "oops"]  # stderr merged, in order
