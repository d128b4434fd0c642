"""The podman sandbox runner against real Podman: open, call, snapshot/restore, warm pool, crash
replacement, lifetimes and no orphans (containers listed by label with the podman CLI).

Needs root, Podman and the image (scripts/install-podman.sh). Without them the tests are skipped,
unless ENVKERNEL_REQUIRE_PODMAN=1, when they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from envkernel_podman import (
    DEFAULT_IMAGE,
    LABEL,
    LABEL_RUNNER,
    PodmanRunner,
    SandboxError,
    Settings,
)
from envkernel_podman.service import asset_path, containers_conf, podman_env, process_start
from envkernel_sample import shop_env


def _not_ready() -> str | None:
    if os.geteuid() != 0:
        return "the podman runner tests need root"
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/install-podman.sh)"
    exists = subprocess.run(
        ["podman", "image", "exists", DEFAULT_IMAGE], env=podman_env(containers_conf()), check=False
    )
    if exists.returncode != 0:
        return f"image {DEFAULT_IMAGE} is missing (envkernel sandbox build-image)"
    return None


_REASON = _not_ready()
pytestmark = pytest.mark.skipif(
    _REASON is not None and not os.environ.get("ENVKERNEL_REQUIRE_PODMAN"), reason=_REASON or ""
)


def podman(*args: str) -> str:
    return subprocess.run(
        ["podman", *args],
        env=podman_env(containers_conf()),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def containers(label: str = LABEL) -> dict[str, str]:
    """name -> state of every container with ``label`` (``key`` or ``key=value``)."""
    rows = json.loads(podman("ps", "-a", "--filter", f"label={label}", "--format", "json") or "[]")
    return {row["Names"][0]: row["State"] for row in rows}


def inspect(name: str) -> dict:
    return json.loads(podman("inspect", name))[0]


def alive(pid: int) -> bool:
    return bool(process_start(pid))


async def wait_until(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.05)
    return pred()


def settings(**kw) -> Settings:
    kw.setdefault("pool_size", 1)
    kw.setdefault("call_timeout", 2.0)
    kw.setdefault("memory_mb", 256)
    return Settings(**kw)


# ---------------------------------------------------------------- open and call


async def test_open_and_call_shop_tools():
    runner = PodmanRunner(settings())
    try:
        assert await runner.wait_pool() == 1
        s = await runner.open(shop_env(), 0)
        assert s.from_pool
        found = await s.call("find_customer", {"email": "alice.martin@example.com"})
        assert found.ok and found.value[0]["id"] == "cus_0001"
        order = await s.call("get_order", {"order_id": "ord_0003"})
        assert order.ok and order.value["status"] == "pending"
        made = await s.call(
            "create_order", {"customer_id": "cus_0001", "product_id": "prd_0003", "quantity": 2}
        )
        assert (
            made.ok
            and made.value["id"] == "ord_0009"
            and made.value["created_at"].startswith("2026-01-15")
        )
        assert (await s.call("cancel_order", {"order_id": "ord_0003"})).value[
            "status"
        ] == "cancelled"
        bad = await s.call("cancel_order", {"order_id": "ord_0001"})
        assert not bad.ok and bad.error is not None
        unknown = await s.call("fly_to_moon", {})
        assert not unknown.ok and unknown.error.code == "unknown_tool"
        state = await s.state()
        assert {o["id"]: o["status"] for o in state["orders"]}["ord_0003"] == "cancelled"
        assert len(state["orders"]) == 9

        # what the container is: isolated, limited, labelled with its owner and expiry
        info = inspect(s.container)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["ReadonlyRootfs"] is True
        assert info["Config"]["User"] == "1000:1000"
        assert host["Memory"] == 256 * 1024 * 1024
        assert host["PidsLimit"] == 64
        assert host["CpuQuota"] == 100_000
        labels = info["Config"]["Labels"]
        assert labels["envkernel.owner.pid"] == str(os.getpid())
        assert labels[LABEL_RUNNER] == runner.token
        assert float(labels["envkernel.expires"]) > time.time() + runner.settings.lifetime
        assert info["Config"]["Cmd"][:3] == ["timeout", "-s", "KILL"]
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}


async def test_seed_is_loaded_per_open_and_sandboxes_are_independent():
    runner = PodmanRunner(settings(pool_size=2))
    try:
        await runner.wait_pool()
        a, b = await asyncio.gather(runner.open(shop_env(), 0), runner.open(shop_env(), 0))
        assert a.container != b.container
        await a.call("cancel_order", {"order_id": "ord_0003"})
        assert (await b.call("get_order", {"order_id": "ord_0003"})).value["status"] == "pending"
        assert (await a.call("get_order", {"order_id": "ord_0003"})).value["status"] == "cancelled"
    finally:
        await runner.aclose()


# ---------------------------------------------------------------- snapshot / restore


async def test_snapshot_and_restore_also_after_a_replacement():
    runner = PodmanRunner(settings())
    try:
        s = await runner.open(shop_env(), 0)
        await s.call("cancel_order", {"order_id": "ord_0003"})
        snap = await s.snapshot()
        before = await s.state()
        await s.call(
            "create_order", {"customer_id": "cus_0002", "product_id": "prd_0001", "quantity": 1}
        )
        await s.call("update_order_quantity", {"order_id": "ord_0006", "quantity": 3})
        assert await s.state() != before
        await s.restore(snap)
        assert await s.state() == before
        # the id counter went back too: the next order gets the same id as the first time
        again = await s.call(
            "create_order", {"customer_id": "cus_0002", "product_id": "prd_0001", "quantity": 1}
        )
        assert again.value["id"] == "ord_0009"

        # the container holding the snapshot dies: restore rebuilds it in the replacement
        old = s.container
        podman("kill", old)
        await s.restore(snap)
        assert s.replacements == 1 and s.container != old
        assert await s.state() == before
        with pytest.raises(SandboxError) as err:
            await s.restore("s99")
        assert err.value.code == "unknown_snapshot"
    finally:
        await runner.aclose()


async def test_a_patch_adds_rows_until_a_restore_also_after_a_replacement():
    """A task's planted rows (``patch``): in the state at once, kept when the container is replaced,
    gone after a restore to the seed; a row that does not fit changes nothing and says why."""
    runner = PodmanRunner(settings())
    try:
        s = await runner.open(shop_env(), 0)
        seed = await s.snapshot()
        before = await s.state()
        row = dict(before["orders"][0], id="ord_9001", status="shipped")
        assert await s.patch([{"table": "orders", "row": row}]) == 1
        assert row in (await s.state())["orders"]
        podman("kill", s.container)
        assert (
            row in (await s.state())["orders"] and s.replacements == 1
        )  # replayed in the replacement
        with pytest.raises(SandboxError) as err:
            await s.patch(
                [
                    {"table": "orders", "row": dict(row, id="ord_9002")},
                    {"table": "nope", "row": {"id": 1}},
                ]
            )
        assert err.value.code == "invalid_patch" and "no table 'nope'" in str(err.value)
        assert [
            r for r in (await s.state())["orders"] if r["id"] == "ord_9002"
        ] == []  # all or none
        await s.restore(seed)
        assert await s.state() == before
    finally:
        await runner.aclose()


# ---------------------------------------------------------------- warm pool


async def test_warm_pool_serves_opens_and_closed_sandboxes_come_back_clean():
    runner = PodmanRunner(settings(pool_size=2))
    try:
        assert await runner.wait_pool() == 2
        seen = []
        for i in range(5):
            t0 = time.perf_counter()
            s = await runner.open(shop_env(), 0)
            acquire = time.perf_counter() - t0
            assert s.from_pool, f"open {i} was not served from the pool"
            assert acquire < 2.0, acquire
            # every sandbox starts from the seed, whatever the container served before
            order = await s.call("get_order", {"order_id": "ord_0003"})
            assert order.value["status"] == "pending"
            assert (await s.call("cancel_order", {"order_id": "ord_0003"})).ok
            made = await s.call(
                "create_order", {"customer_id": "cus_0001", "product_id": "prd_0003", "quantity": 1}
            )
            assert made.value["id"] == "ord_0009"
            seen.append(s.container)
            await s.close()
            assert await wait_until(
                lambda n=i + 1: runner.stats["recycled"] == n and runner.pool_ready >= 2, 10
            )
        assert len(set(seen)) < len(seen), "no container was recycled"
        assert runner.stats["warm"] == 5 and runner.stats["cold"] == 0
        assert runner.stats["recycled"] == 5 and runner.stats["destroyed"] == 0
        live = containers(f"{LABEL_RUNNER}={runner.token}")
        assert len(live) <= runner.settings.pool_max and set(live.values()) == {"running"}
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}


async def test_without_recycling_closed_containers_are_destroyed():
    runner = PodmanRunner(settings(pool_size=1, recycle=False))
    try:
        await runner.wait_pool()
        names = set()
        for _ in range(3):
            s = await runner.open(shop_env(), 0)
            assert s.from_pool
            names.add(s.container)
            await s.close()
            assert s.container is None
            assert not names & set(containers(f"{LABEL_RUNNER}={runner.token}"))
            await runner.wait_pool()
        assert len(names) == 3 and runner.stats["destroyed"] == 3 and runner.stats["recycled"] == 0
    finally:
        await runner.aclose()


async def test_a_burst_of_opens_is_served_by_a_few_starts_and_recycled_containers():
    runner = PodmanRunner(settings(pool_size=0, max_starting=2))
    try:

        async def episode() -> str:
            s = await runner.open(shop_env(), 0)
            name = s.container
            assert (await s.call("get_order", {"order_id": "ord_0001"})).ok
            await s.close()
            return name

        names = []
        for _ in range(3):
            names += await asyncio.gather(*(episode() for _ in range(6)))
        assert len(names) == 18
        assert len(set(names)) < 18, "every episode had a container of its own"
        assert runner.stats["recycled"] >= 6
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}


async def test_no_pool_means_cold_starts():
    runner = PodmanRunner(settings(pool_size=0, recycle=False))
    try:
        s = await runner.open(shop_env(), 0)
        assert not s.from_pool and runner.stats["cold"] == 1
        assert (await s.call("get_customer", {"customer_id": "cus_0002"})).value["city"] == "Porto"
        await s.close()
        assert containers(f"{LABEL_RUNNER}={runner.token}") == {}
    finally:
        await runner.aclose()


# ---------------------------------------------------------------- crash and replacement


async def test_a_killed_container_is_replaced_with_the_same_state():
    runner = PodmanRunner(settings())
    try:
        s = await runner.open(shop_env(), 0)
        await s.call("cancel_order", {"order_id": "ord_0002"})
        made = await s.call(
            "create_order", {"customer_id": "cus_0004", "product_id": "prd_0006", "quantity": 2}
        )
        old = s.container
        podman("kill", old)
        await asyncio.sleep(0.3)  # the host sees the socket close
        got = await s.call("get_order", {"order_id": made.value["id"]})
        assert got.ok and got.value["quantity"] == 2
        assert (await s.call("get_order", {"order_id": "ord_0002"})).value["status"] == "cancelled"
        assert s.replacements == 1 and s.container != old and not s.diverged
        assert old not in containers(LABEL)
        # the id generator continued where it was: replay is deterministic
        nxt = await s.call(
            "create_order", {"customer_id": "cus_0004", "product_id": "prd_0006", "quantity": 1}
        )
        assert nxt.value["id"] == "ord_0010"
    finally:
        await runner.aclose()


# ---------------------------------------------------------------- lifetimes and orphans


async def test_close_and_aclose_leave_nothing():
    runner = PodmanRunner(settings(pool_size=2))
    await runner.wait_pool()
    sessions = [await runner.open(shop_env(), 0) for _ in range(3)]
    assert len(containers(f"{LABEL_RUNNER}={runner.token}")) >= 3
    await sessions[0].close()
    await sessions[0].close()  # idempotent
    service = runner._service
    assert service is not None and service.proc is not None
    service_pid = service.proc.pid
    folder = runner._folder
    await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}
    assert not os.path.exists(folder)
    assert not alive(service_pid), "the podman service the runner started is still running"
    with pytest.raises(SandboxError):
        await sessions[1].state()


async def test_a_session_stops_at_its_lifetime():
    runner = PodmanRunner(settings(pool_size=0, lifetime=1.0, recycle=False))
    try:
        s = await runner.open(shop_env(), 0)
        name = s.container
        assert await wait_until(lambda: s.closed, 5)
        assert await wait_until(lambda: name not in containers(LABEL), 5)
        with pytest.raises(SandboxError) as err:
            await s.call("get_order", {"order_id": "ord_0001"})
        assert err.value.code == "closed"
    finally:
        await runner.aclose()


OWNER = textwrap.dedent(
    """
    import asyncio, json, sys
    from envkernel import logs
    from envkernel_podman import PodmanRunner, Settings

    logs.configure("warning")
    from envkernel_sample import shop_env

    async def main():
        r = PodmanRunner(Settings(**json.loads(sys.argv[1])))
        a = await r.open(shop_env(), 0)
        b = await r.open(shop_env(), 0)
        await r.wait_pool()
        print(json.dumps({"token": r.token, "service": r._service.proc.pid, "folder": r._folder}), \
flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def start_owner(**kw) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, json.dumps(kw)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                return proc, json.loads(line)
        raise AssertionError(f"the owner process failed: {proc.stderr.read()}")
    except BaseException:
        proc.kill()
        proc.wait()
        raise


async def test_containers_of_a_killed_owner_are_reaped_at_the_kill():
    proc, info = start_owner(pool_size=1)
    label = f"{LABEL_RUNNER}={info['token']}"
    try:
        assert len(containers(label)) == 3  # two sandboxes and one warm container
        proc.send_signal(
            signal.SIGKILL
        )  # no aclose, no atexit, no finalizer: only the reaper is left
        proc.wait(10)
        assert await wait_until(lambda: containers(label) == {}, 30), containers(label)
        assert await wait_until(
            lambda: not alive(info["service"]) and not os.path.exists(info["folder"]), 10
        )
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_a_closed_runner_leaves_its_reaper_nothing_to_do():
    runner = PodmanRunner(settings(pool_size=0))
    s = await runner.open(shop_env(), 0)
    reaper_proc = runner._reaper
    assert reaper_proc is not None and reaper_proc.poll() is None
    await s.close()
    await runner.aclose()
    assert reaper_proc.poll() == 0  # told "done": it exited at once, without a podman command


async def test_containers_of_a_killed_owner_are_reaped_by_the_next_runner():
    proc, info = start_owner(
        pool_size=1, reap_at_exit=False
    )  # the fallback when the reaper is gone too
    label = f"{LABEL_RUNNER}={info['token']}"
    try:
        assert len(containers(label)) == 3  # two sandboxes and one warm container
        proc.send_signal(signal.SIGKILL)  # no aclose, no atexit, no finalizer
        proc.wait(10)
        assert set(containers(label).values()) == {"running"}
        runner = PodmanRunner(settings(pool_size=0))
        try:
            await runner.start()
            assert containers(label) == {}
            assert runner.stats["reaped"] == 3
            assert not alive(info["service"]), "the dead runner's podman service is still running"
            assert not os.path.exists(info["folder"])
        finally:
            await runner.aclose()
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_containers_of_a_killed_owner_stop_at_their_lifetime_with_no_runner():
    proc, info = start_owner(pool_size=0, lifetime=2.0, pool_idle=0.0, reap_at_exit=False)
    label = f"{LABEL_RUNNER}={info['token']}"
    try:
        assert len(containers(label)) == 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # hard lifetime: lifetime + pool_idle + margin (2 s at this size), enforced inside the
        # container
        assert await wait_until(lambda: "running" not in containers(label).values(), 15)
    finally:
        if proc.poll() is None:
            proc.kill()
        runner = PodmanRunner(settings(pool_size=0))
        await runner.start()  # reaps the exited containers and the dead runner's service
        await runner.aclose()
    assert containers(label) == {}
    assert not alive(info["service"])


async def test_the_runner_restarts_its_service_after_it_idled_out():
    runner = PodmanRunner(settings(pool_size=0, service_idle=1))
    try:
        s = await runner.open(shop_env(), 0)
        first = runner._service.proc.pid
        assert await wait_until(lambda: not alive(first), 10), (
            "the service did not exit after its idle time"
        )
        t = await runner.open(shop_env(), 0)  # needs the API again: it is started again
        assert runner._service.proc.pid != first
        assert (await t.call("get_order", {"order_id": "ord_0001"})).ok
        assert (await s.call("get_order", {"order_id": "ord_0001"})).ok  # sandboxes never needed it
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}


async def test_an_environment_that_fails_to_load_is_an_error_and_its_container_is_recycled():
    from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

    broken = EnvSpec(
        id="broken",
        name="broken",
        tools=[ToolSpec(name="t")],
        behaviour=CodeBehaviour(source="def t(env):\n  return (\n"),
    )
    runner = PodmanRunner(settings(pool_size=1))
    try:
        await runner.wait_pool()
        with pytest.raises(SandboxError) as err:
            await runner.open(broken, 0)
        assert err.value.code == "load_failed" and "env.py" in str(err.value)
        assert runner.sessions == []
        assert await wait_until(lambda: runner.stats["recycled"] == 1, 10)
        s = await runner.open(shop_env(), 0)
        assert (await s.call("get_order", {"order_id": "ord_0001"})).ok
    finally:
        await runner.aclose()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}


# ---------------------------------------------------------------- image and command


async def test_a_missing_image_names_the_command_that_builds_it():
    runner = PodmanRunner(settings(image="localhost/envkernel-no-such-image:0"))
    with pytest.raises(SandboxError) as err:
        await runner.open(shop_env(), 0)
    assert err.value.code == "no_image"
    assert "envkernel sandbox build-image" in str(err.value)
    await runner.aclose()


def test_build_image_command_is_registered_and_fast_when_built():
    from click.testing import CliRunner

    from envkernel.cli import cli

    result = CliRunner().invoke(cli, ["sandbox", "build-image"])
    assert result.exit_code == 0, result.output
    assert "already built" in result.output
    repo_conf = os.path.join(os.path.dirname(__file__), "..", "containers", "containers.conf")
    assert os.path.samefile(asset_path("containers.conf"), repo_conf)


# ---------------------------------------------------------------- over the bus


async def test_a_stage_calls_a_podman_sandbox_over_nats(bus):
    from envkernel.sandbox import SandboxService, open_sandbox

    runner = PodmanRunner(settings())
    service = SandboxService(bus, "podman", runner)
    await service.start()
    try:
        await runner.wait_pool()
        box = await open_sandbox(bus, "podman", shop_env(), seed=0)
        res = await box.call("cancel_order", {"order_id": "ord_0006"})
        assert res.ok and res.value["status"] == "cancelled"
        snap = await box.snapshot()
        await box.call("cancel_order", {"order_id": "ord_0007"})
        await box.restore(snap)
        state = await box.state()
        assert {o["id"]: o["status"] for o in state["orders"]}["ord_0007"] == "pending"
        assert box.id in service._live and len(runner.sessions) == 1
        await box.close()
        assert await wait_until(
            lambda: runner.stats["recycled"] == 1, 15
        )  # back in the pool, clean
        assert runner.sessions == []
    finally:
        await service.stop()
    assert containers(f"{LABEL_RUNNER}={runner.token}") == {}
