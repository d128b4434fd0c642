"""Sync role methods run in a pool of their own, apart from the event loop's default executor.

A sync role method may block on the loop (``Context.wait``), and the loop's own work (a sandbox's
folders and cgroups) runs in the default executor. When both shared one pool, six workspace checks
waiting for sandboxes at once (the default pool's size on 2 cores) stalled a run for good: every
open then timed out after 15 s, retried, and timed out again.
"""

from __future__ import annotations

import asyncio
import threading

from envkernel_runtime.calls import ROLE_THREADS, call_role


async def test_blocked_sync_role_calls_leave_the_default_executor_to_the_loop() -> None:
    loop = asyncio.get_running_loop()
    names: set[str] = set()

    async def loop_work() -> int:  # what a sandbox open does: part of it in the default executor
        return await asyncio.to_thread(lambda: 1)

    def role() -> int:  # a sync scorer waiting for a sandbox, as TraceOutcome.score does
        names.add(threading.current_thread().name)
        return asyncio.run_coroutine_threadsafe(loop_work(), loop).result(10)

    n = 40  # more than the default executor's threads on any machine (at most 32)
    assert n <= ROLE_THREADS
    results = await asyncio.wait_for(asyncio.gather(*(call_role(role) for _ in range(n))), 30)
    assert results == [1] * n
    assert all(name.startswith("envkernel-role") for name in names)


async def test_a_sync_role_call_keeps_the_callers_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("bound")
    assert await call_role(var.get) == "bound"
