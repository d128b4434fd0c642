"""The hostile suite for a workspace's shell (``exec``), in both runners: network, host files, a
fork bomb, filling the disk, a background process left after a call, and escaping through
symlinks. Each is blocked or cleaned up; the attacked sandbox answers afterwards, and so does a
benign sandbox opened beside it.

The process runner needs root with namespaces, cgroups and Landlock for the full set (CI has
them); the podman runner needs Podman and the image v2 (scripts/install-podman.sh). Without
Podman the podman half is skipped unless ENVKERNEL_REQUIRE_PODMAN=1.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile

import pytest
import pytest_asyncio

from envkernel_kit.workspace import workspace_env
from envkernel_process import ProcessRunner, Settings, host_support

ENV = workspace_env("hostile-shell", "hostile shell", files={"notes.txt": "benign\n"})
BENIGN = workspace_env("benign-shell", "benign shell", files={"a.txt": "still here\n"})
FULL = (
    host_support().root
    and bool(host_support().unshare)
    and host_support().landlock > 0
    and bool(host_support().cgroups)
)


def _podman_reason() -> str | None:
    if os.geteuid() != 0 or shutil.which("podman") is None:
        return "the podman runner needs root and podman (scripts/install-podman.sh)"
    from envkernel_podman.image import IMAGE_VERSION, image_version

    if image_version("localhost/envkernel-sandbox:latest") < IMAGE_VERSION:
        return (
            f"the sandbox image is missing or older than v{IMAGE_VERSION} (envkernel sandbox "
            "build-image)"
        )
    return None


def _runner(kind: str):
    if kind == "process":
        if not FULL:
            pytest.fail(
                "the process-runner half needs root with namespaces, cgroups and Landlock "
                "(as in CI)"
            )
        return ProcessRunner(
            Settings(call_timeout=6, workspace_mb=16, file_size_mb=8, max_processes=32)
        )
    reason = _podman_reason()
    if reason and not os.environ.get("ENVKERNEL_REQUIRE_PODMAN"):
        pytest.skip(reason)
    from envkernel_podman import PodmanRunner
    from envkernel_podman import Settings as PodmanSettings

    return PodmanRunner(
        PodmanSettings(pool_size=0, call_timeout=6, tmpfs_mb=16, pids_limit=48, file_size_mb=8)
    )


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=["process", "podman"])
async def pair(request):
    runner = _runner(request.param)
    attacked = await runner.open(ENV, 0)
    benign = await runner.open(BENIGN, 0)
    yield request.param, attacked, benign
    await runner.aclose()


async def sh(sb, command: str, timeout: float = 4.0) -> dict:
    res = await sb.call("exec", {"command": command, "timeout": timeout})
    assert res.ok, res
    return res.value


async def both_answer(attacked, benign) -> None:
    assert (await sh(attacked, "cat notes.txt"))["stdout"] == "benign\n"
    assert (await benign.call("read", {"path": "a.txt"})).value["content"] == "still here\n"


@pytest.mark.asyncio(loop_scope="module")
async def test_network_is_unreachable(pair):
    _kind, attacked, benign = pair
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        out = await sh(
            attacked,
            f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; "
            "python3 -c 'import socket; "
            f'socket.create_connection(("127.0.0.1", {port}), '
            "timeout=2)' 2>&1 | tail -1; "
            "getent hosts example.com || echo no-dns",
        )
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing reached the host
        assert "no-dns" in out["stdout"] and "Error" in out["stdout"]
    finally:
        server.close()
    await both_answer(attacked, benign)


@pytest.mark.asyncio(loop_scope="module")
async def test_host_files_and_symlink_escapes_are_refused(pair):
    kind, attacked, benign = pair
    with tempfile.NamedTemporaryFile("w", dir="/tmp", suffix=".secret", delete=False) as f:
        f.write("host secret\n")
    os.chmod(f.name, 0o644)
    try:
        out = await sh(
            attacked,
            f"cat {f.name}; cat /etc/shadow; ln -sf {f.name} leak; ln -sfn / root; cat leak; "
            f"ls root/root; cat root{f.name}; echo done",
        )
        assert "host secret" not in out["stdout"] and out["stdout"].endswith("done\n")
        for path in ("leak", "root/etc/hostname", "root/tmp"):
            got = await attacked.call("read", {"path": path})
            assert not got.ok and got.error.code == "outside_workspace"
        target = f"/tmp/envk-escape-{os.getpid()}-{kind}"
        assert (
            await attacked.call("write", {"path": f"root{target}", "content": "x"})
        ).error.code == "outside_workspace"
        await sh(attacked, f"echo x > root{target}; echo x > leak")
        assert not os.path.exists(target)
        assert open(f.name).read() == "host secret\n"
    finally:
        os.unlink(f.name)
    await both_answer(attacked, benign)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_fork_bomb_is_contained(pair):
    _kind, attacked, benign = pair
    out = await sh(attacked, "bomb() { bomb | bomb & }; bomb; sleep 1; echo after", timeout=2.5)
    assert out["exit_code"] != 0 or "after" in out["stdout"]
    await both_answer(attacked, benign)


@pytest.mark.asyncio(loop_scope="module")
async def test_filling_the_disk_fails_inside_the_sandbox(pair):
    _kind, attacked, benign = pair
    # one huge file stops at the file-size limit (8 MiB); many files stop when the 16 MiB workspace
    # is full
    out = await sh(
        attacked,
        "head -c 64M /dev/zero > one; stat -c %s one; rm -f one; "
        "for i in 1 2 3 4; do head -c 7M /dev/zero > f$i 2>/dev/null || echo FULL$i; done; "
        "du -sk . | cut -f1; rm -f f*",
    )
    lines = out["stdout"].split()
    assert int(lines[0]) <= 8 * 1024 * 1024
    assert any(w.startswith("FULL") for w in lines), out
    assert int(lines[-1]) <= 17 * 1024
    await both_answer(attacked, benign)


@pytest.mark.asyncio(loop_scope="module")
async def test_background_processes_do_not_outlive_the_call(pair):
    kind, attacked, benign = pair
    await sh(
        attacked, "sleep 417 & nohup sleep 418 >/dev/null 2>&1 & setsid sleep 419 & echo started"
    )
    await asyncio.sleep(0.3)
    left = await sh(attacked, "ps -eo args 2>/dev/null | grep -c '^sleep 41[789]' || true")
    assert left["stdout"].strip() in ("0", "")
    if kind == "process":
        host = subprocess.run(["pgrep", "-f", "^sleep 41[789]"], capture_output=True, text=True)
        assert host.stdout.strip() == "", f"left running on the host: {host.stdout}"
    await both_answer(attacked, benign)


@pytest.mark.asyncio(loop_scope="module")
async def test_the_shell_has_its_tools_and_the_diff_sees_its_work(pair):
    _kind, attacked, benign = pair
    out = await sh(
        benign,
        "git init -q && git add -A && git commit -qm init && git log --format=%s && "
        "sqlite3 db.sqlite 'create table t(x); insert into t values (42); "
        "select x from t' && python3 -c 'import json; print(json.dumps([1]))' && echo done > "
        "done.txt",
    )
    assert out["stdout"].splitlines() == ["init", "42", "[1]"], out
    rows = {r["path"]: r for r in (await benign.state())["workspace"]}
    assert rows["done.txt"]["change"] == "added" and rows["done.txt"]["text"] == "done\n"
    assert rows["db.sqlite"]["data"] and any(p.startswith(".git/") for p in rows)
