"""envkernel-probe: a verifier that executes every tool of an environment in a sandbox.

For each tool it builds a few argument sets from the seed state and the tool's JSON Schema (see
:mod:`envkernel_probe.argsgen`), calls the tool with them one at a time (restoring the seed
snapshot after each call, so mutations do not interfere), and keeps the tool as soon as one call
succeeds. A tool none of whose calls succeed is dropped, with the last error as the reason. The
environment is kept when the share of kept tools reaches ``min_tool_share``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import msgspec
from envkernel.hookspecs import hookimpl
from envkernel_schemas import EnvSpec, ToolResult, ToolSpec, VerifyReport

from .argsgen import ArgumentBuilder, schema_type
from .naming import State

__all__ = ["ProbeSettings", "Probe", "Settings", "ToolProbe", "probe_tool", "register_verifiers"]


class ProbeSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``probe`` verifier."""

    min_tool_share: float = 0.8
    """Keep the environment when at least this share of its tools pass."""
    candidates: int = 6
    """Argument sets tried per tool before it is dropped."""
    check_readonly: bool = True
    """Report (without dropping) read-only tools whose successful call changed the state."""


Settings = ProbeSettings
"""Alias: the settings of this plugin's component(s)."""


@dataclass
class ToolProbe:
    """What probing one tool found."""

    tool: str
    """The tool."""
    kept: bool = False
    """True when one argument set succeeded."""
    checks: int = 0
    """Calls made."""
    reason: str = ""
    """Why it was dropped."""
    arguments: dict[str, Any] | None = None
    """The argument set that succeeded."""
    notes: list[str] = field(default_factory=list)
    """Problems seen on a kept tool (reported, not fatal)."""


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _returns_note(tool: ToolSpec, value: Any) -> str:
    t = schema_type(tool.returns or {})
    if not t or t not in _JSON_TYPES:
        return ""
    ok = isinstance(value, _JSON_TYPES[t]) and not (t in ("integer", "number") and isinstance(value, bool))
    if value is None and "null" in (tool.returns.get("type") or []):
        ok = True
    return "" if ok else f"{tool.name}: returned {type(value).__name__}, declared {t}"


def _describe_error(result: ToolResult) -> str:
    if result.error is None:
        return "failed without an error"
    return f"{result.error.code}: {result.error.message}"


async def probe_tool(
    sb: Any,
    tool: ToolSpec,
    builder: ArgumentBuilder,
    rng: Any,
    *,
    n: int,
    seed_handle: str,
    seed_state: State,
    check_readonly: bool = True,
) -> ToolProbe:
    """Call ``tool`` with up to ``n`` generated argument sets until one succeeds.

    The sandbox is restored to ``seed_handle`` after every call.
    """
    res = ToolProbe(tool=tool.name)
    candidates = builder.candidates(tool, rng, n)
    if not candidates:
        res.reason = "could not build arguments from its schema"
        return res
    last = ""
    for args in candidates:
        res.checks += 1
        try:
            result = await sb.call(tool.name, args)
        except Exception as exc:  # the sandbox itself failed: this tool cannot be trusted
            await sb.restore(seed_handle)
            res.reason = f"sandbox error calling it: {type(exc).__name__}: {exc}"
            return res
        if result.ok:
            res.kept = True
            res.arguments = args
            note = _returns_note(tool, result.value)
            if note:
                res.notes.append(note)
            if check_readonly and not tool.mutates:
                after = await sb.state()
                if after != seed_state:
                    res.notes.append(f"{tool.name}: declared read-only but changed the state with {args}")
            await sb.restore(seed_handle)
            return res
        last = _describe_error(result)
        await sb.restore(seed_handle)
    res.reason = f"{last} (after {res.checks} argument sets, last {candidates[-1]})"
    return res


class Probe:
    """The ``probe`` verifier: executes every tool once with generated arguments."""

    Settings = ProbeSettings

    def __init__(self, settings: ProbeSettings | None = None) -> None:
        self.settings = settings or ProbeSettings()

    async def verify(self, env: EnvSpec, ctx: Any) -> VerifyReport:
        """Probe every tool of ``env`` in one sandbox and report what works."""
        t0 = time.perf_counter()
        s = self.settings
        probes: list[ToolProbe] = []
        async with ctx.sandbox(env) as sb:
            seed_handle = await sb.snapshot()
            seed_state = await sb.state()
            builder = ArgumentBuilder(seed_state)
            for tool in env.tools:
                rng = ctx.rng("probe", env.id, tool.name)
                probes.append(
                    await probe_tool(
                        sb,
                        tool,
                        builder,
                        rng,
                        n=s.candidates,
                        seed_handle=seed_handle,
                        seed_state=seed_state,
                        check_readonly=s.check_readonly,
                    )
                )
        return build_report(ctx.component, probes, s.min_tool_share, time.perf_counter() - t0)


def build_report(verifier: str, probes: list[ToolProbe], min_tool_share: float, seconds: float) -> VerifyReport:
    """Turn per-tool probes into a VerifyReport."""
    kept = [p.tool for p in probes if p.kept]
    dropped = {p.tool: p.reason for p in probes if not p.kept}
    failures = [f"{t}: {r}" for t, r in dropped.items()]
    for p in probes:
        failures.extend(p.notes)
    share = len(kept) / len(probes) if probes else 0.0
    if not probes:
        failures.append("the environment has no tools")
    elif share < min_tool_share:
        failures.append(f"only {len(kept)}/{len(probes)} tools passed ({share:.0%} < {min_tool_share:.0%})")
    return VerifyReport(
        verifier=verifier,
        kept=bool(probes) and bool(kept) and share >= min_tool_share,
        tools_kept=kept,
        tools_dropped=dropped,
        checks=sum(p.checks for p in probes),
        failures=failures,
        seconds=round(seconds, 6),
    )


@hookimpl
def register_verifiers(register: Any) -> None:
    """Register the ``probe`` verifier."""
    register("probe", Probe)
