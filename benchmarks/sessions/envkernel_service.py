"""envkernel's side of bench_sessions.py, in a process of its own (as OpenEnv's server is):
the ``process`` sandbox runner served on the bus by the kernel's ``SandboxService``.

    python envkernel_service.py NATS_URL [SPARES [CELLS [RECYCLE]]]

Prints ``ready`` once it answers open requests, then serves until its stdin closes. It also answers
``bench.echo`` with a step-sized reply straight from its nats-py callback: the benchmark's raw NATS
request/reply baseline, measured through the same client library, server and processes as a step
over the bus, but with no sandbox behind it.
"""

from __future__ import annotations

import asyncio
import resource
import sys

from envkernel.sandbox import SandboxService
from envkernel_bus import Bus
from envkernel_process import ProcessRunner, Settings
from nats.aio.msg import Msg

ECHO_SUBJECT = "bench.echo"


async def main(url: str, spares: int, cells: int = 0, recycle: int = 0) -> None:
    """Serve the runner until stdin closes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    runner = ProcessRunner(Settings(spares=spares, cells=cells, recycle=recycle))
    bus = await Bus.connect(url, name="bench-sessions-service")
    service = SandboxService(bus, "process", runner)
    await service.start()
    # a counter step's answer as the executor writes it (its size)
    reply = b'{"ok":true,"value":{"count":1}}\n'

    async def echo(msg: Msg) -> None:
        await msg.respond(reply)

    await bus.nc.subscribe(ECHO_SUBJECT, cb=echo)
    await bus.nc.flush()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await service.stop()
    await bus.close()


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    asyncio.run(main(sys.argv[1], *(int(x) for x in sys.argv[2:5])))
