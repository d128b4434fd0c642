"""One tool call in a fresh sandbox, from start to close: what ``envkernel env call`` does.

The caller picks the runner (through the kernel's plugin registry) and builds it; this module opens
one sandbox of it, calls one tool, closes the sandbox and the runner (also when the process is
terminated), and turns whatever happened into one JSON-ready answer and an exit code. The
environment's code runs only inside the sandbox.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

import msgspec

EXIT_TOOL_OK = 0
"""The tool succeeded."""
EXIT_TOOL_ERROR = 1
"""The tool returned an error."""
EXIT_SANDBOX = 3
"""The sandbox could not be opened."""


def _sandbox_error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": "sandbox_error", "message": message}}


async def call_once(
    runner: Any,
    name: str,
    spec: Any,
    tool: str,
    arguments: dict[str, Any],
    seed: int,
    *,
    known: tuple[type[BaseException], ...] = (),
    verbose: bool = False,
) -> tuple[dict[str, Any], int]:
    """Open a sandbox of ``runner`` (component ``name``) holding ``spec`` at ``seed``, call ``tool``
    once and close it.

    Returns ``({"ok": true, "value": ...} | {"ok": false, "error": {...}}, exit code)``. An error of
    a type in ``known`` (the runner's own sandbox errors) is reported by its message alone. With
    ``verbose``, how long the call took and the sandbox's confinement go to stderr.
    """
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        try:  # a terminated `env call` still closes its sandbox
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        try:
            session = await runner.open(spec, seed)
        except Exception as exc:
            message = str(exc) if isinstance(exc, known) else f"{type(exc).__name__}: {exc}"
            return _sandbox_error(
                f"could not open a {name!r} sandbox for {spec.id!r}: {message}"
            ), EXIT_SANDBOX
        try:
            t0 = time.perf_counter()
            try:
                result = await session.call(tool, arguments)
            except Exception as exc:
                result = _sandbox_error(f"{type(exc).__name__}: {exc}")
            if verbose:
                info = {
                    "seconds": round(time.perf_counter() - t0, 6),
                    "confinement": getattr(session, "confinement", None),
                    "events": getattr(session, "events", None),
                }
                print(f"sandbox: {json.dumps(info, default=str)}", file=sys.stderr, flush=True)
        finally:
            await session.close()
    finally:
        aclose = getattr(runner, "aclose", None)
        if aclose is not None:
            await aclose()
        try:
            loop.remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError):
            pass
    out = msgspec.to_builtins(result)
    if not isinstance(out, dict) or "ok" not in out:
        out = _sandbox_error(f"the runner answered {out!r}, not a tool result")
    if out.get("ok"):
        return {"ok": True, "value": out.get("value")}, EXIT_TOOL_OK
    return {"ok": False, "error": out.get("error")}, EXIT_TOOL_ERROR
