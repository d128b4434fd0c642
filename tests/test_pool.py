"""The one sandbox pool (``envkernel.pool.Pool``) over real ``process`` sandboxes: the ``restore``
policy lends a used sandbox again in its seed state, ``per_env`` makes further leases wait, the
``fresh`` policy never lends one twice and keeps one opened ahead, and a broken use is closed."""

from __future__ import annotations

import asyncio
import textwrap

from envkernel.pool import Pool, PoolPolicy
from envkernel_process import ProcessRunner, Settings
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

COUNTER = EnvSpec(
    id="pool-counter",
    name="counter",
    tools=[ToolSpec(name="bump", mutates=True)],
    behaviour=CodeBehaviour(
        source=textwrap.dedent("""
            SEEN = []
            def bump(env):
                SEEN.append(1)
                env.db.execute("INSERT INTO t (x) VALUES (1)")
                return [len(SEEN), env.db.execute("SELECT COUNT(*) AS n FROM t").fetchone()["n"]]
        """)
    ),
    seed_sql="CREATE TABLE t (x INTEGER);",
)


async def test_restore_policy_lends_a_used_sandbox_in_its_seed_state() -> None:
    runner = ProcessRunner(Settings())
    pool = Pool(PoolPolicy(reuse="restore", per_env=1))

    def opener() -> object:
        return runner.open(COUNTER, 0)

    try:
        first = await pool.acquire("k", opener)
        assert (await first.sandbox.call("bump", {})).value == [1, 1]
        waiting = asyncio.ensure_future(pool.acquire("k", opener))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # per_env = 1: the second lease waits for the first
        await pool.release(first)
        second = await asyncio.wait_for(waiting, 30)
        assert second.sandbox is first.sandbox
        # the database and env.py's global are both back to the seed state
        assert (await second.sandbox.call("bump", {})).value == [1, 1]
        second.broken = True
        await pool.release(second)  # a broken use is closed, not kept
        assert pool.stats() == {"opened": 1, "reused": 1, "idle": 0, "out": 0}
    finally:
        await pool.close()
        await runner.aclose()


async def test_fresh_policy_never_lends_a_sandbox_twice() -> None:
    runner = ProcessRunner(Settings())
    pool = Pool(PoolPolicy(reuse="fresh"))

    def opener() -> object:
        return runner.open(COUNTER, 0)

    try:
        await pool.warm("k", opener, 1)
        first = await pool.acquire("k", opener)
        await first.sandbox.call("bump", {})
        await pool.release(first)
        for _ in range(100):  # the one kept ready is opened in the background
            if pool.idle:
                break
            await asyncio.sleep(0.05)
        second = await pool.acquire("k", opener)
        assert second.sandbox is not first.sandbox
        assert (await second.sandbox.call("bump", {})).value == [1, 1]
        await pool.release(second)
        assert pool.reused == 0 and pool.opened >= 2
    finally:
        await pool.close()
        await runner.aclose()
