"""envkernel-probe: the verifier. It executes an environment in a sandbox before any task is made.

1. **Every tool is callable.** For each tool it builds argument sets from the seed state and the
   tool's JSON Schema (:mod:`envkernel_kit.argsgen`) and calls them one at a time, restoring the
   seed snapshot after each call, until one succeeds. A tool none of whose calls succeed is
   dropped, with the last error as the reason.
2. **Outputs conform** to the tool's declared ``returns`` schema (types, required fields, enums,
   formats), checked with ``jsonschema`` (:mod:`envkernel_probe.conformance`) on every successful
   answer the verifier sees, in the probe and in the invariant checks; a tool whose answer does
   not is dropped with the reason. A model environment's seed rows are checked against the
   answer schema of their resource's get tool too: a get tool that would show a row its spec
   refuses is dropped.
3. **State invariants hold** (:mod:`envkernel_probe.invariants`): create-then-get returns what was
   created, list includes it, update-then-get reflects the update and touches no other row,
   delete-then-get is not found, lists page, filter and sort as declared, and a failed call leaves
   the state unchanged. The state dump is the judge; each failure is blamed on one tool, which is
   dropped with the reason.

The environment is kept while at least ``min_tool_share`` of its tools pass (default 0.8, i.e.
80 %); the tools that fail are dropped before sampling. The report (VerifyReport) lands in the
environment's ``env.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.argsgen import ArgumentBuilder, schema_type
from envkernel_kit.naming import State
from envkernel_kit.workspace import is_workspace, verify_workspace
from envkernel_runtime.model import model_of
from envkernel_schemas import EnvSpec, ToolResult, ToolSpec, VerifyReport

from .conformance import ResultSchemas, seed_problems
from .invariants import run_invariants

__all__ = [
    "ProbeSettings",
    "Probe",
    "Settings",
    "ToolProbe",
    "probe_tool",
    "register_verifiers",
    "unreachable",
]


class ProbeSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``probe`` verifier."""

    min_tool_share: float = 0.8
    """Keep the environment when at least this share of its tools pass (default 0.8 = 80 %)."""
    invariants: bool = True
    """Check state invariants (create/get/list/update/delete/actions/failed calls) against the
    state."""
    check_schema: bool = True
    """Drop tools whose successful answers do not match their declared ``returns`` schema."""
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


def _returns_problem(tool: ToolSpec, value: Any, schemas: ResultSchemas | None = None) -> str:
    """Why a successful answer does not fit the tool's ``returns`` schema, or "" (the engine's
    readable subset check first, then full JSON Schema with ``jsonschema``)."""
    from envkernel_runtime.engine import check

    if not tool.returns:
        return ""
    problem = check(tool.returns, value, "the answer")
    if problem:
        return f"its answer does not match its declared schema: {problem}"
    return (schemas or ResultSchemas([tool])).problem(tool.name, value)


def _returns_note(tool: ToolSpec, value: Any) -> str:
    t = schema_type(tool.returns or {})
    if not t or t not in _JSON_TYPES:
        return ""
    ok = isinstance(value, _JSON_TYPES[t]) and not (
        t in ("integer", "number") and isinstance(value, bool)
    )
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
    check_schema: bool = False,
    schemas: ResultSchemas | None = None,
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
            problem = _returns_problem(tool, result.value, schemas) if check_schema else ""
            if problem:
                await sb.restore(seed_handle)
                res.kept = False
                res.reason = f"{problem} (arguments {args})"
                return res
            note = _returns_note(tool, result.value)
            if note:
                res.notes.append(note)
            if check_readonly and not tool.mutates:
                after = await sb.state()
                if after != seed_state:
                    res.notes.append(
                        f"{tool.name}: declared read-only but changed the state with {args}"
                    )
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
        """Probe every tool of ``env`` in one sandbox and report what works (a workspace: each claw
        tool once)."""
        if is_workspace(env):
            return await verify_workspace(ctx, env, ctx.component)
        t0 = time.perf_counter()
        s = self.settings
        probes: list[ToolProbe] = []
        async with ctx.sandbox(env) as sb:
            seed_handle = await sb.snapshot()
            seed_state = await sb.state()
            builder = ArgumentBuilder(seed_state)
            schemas = ResultSchemas(env.tools) if s.check_schema else None
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
                        check_schema=s.check_schema,
                        schemas=schemas,
                    )
                )
            if s.invariants:
                blame = await run_invariants(
                    sb,
                    env,
                    seed_handle,
                    seed_state,
                    ctx.rng("probe", env.id, "invariants"),
                    schemas=schemas,
                )
                by_name = {p.tool: p for p in probes}
                for tool, reasons in blame.by_tool.items():
                    p = by_name.get(tool)
                    if p is None:
                        continue
                    p.checks += 0
                    if p.kept:
                        p.kept = False
                        p.reason = reasons[0] + (
                            f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
                        )
                    p.notes.extend(f"{tool}: {r}" for r in reasons[1:])
                if probes:
                    probes[0].checks += blame.checks
            if schemas is not None:
                by_name = {p.tool: p for p in probes}
                for tool, reason in seed_problems(env, schemas).items():
                    p = by_name.get(tool)
                    if p is not None and p.kept:
                        p.kept, p.reason = False, reason
            unreachable(env, probes)
        return build_report(ctx.component, probes, s.min_tool_share, time.perf_counter() - t0)


def unreachable(env: EnvSpec, probes: list[ToolProbe]) -> None:
    """Drop every tool of a model environment none of whose list tools was kept.

    Without a list tool an agent cannot learn a single id (only the few named in the tools'
    descriptions), and a sampler makes next to no tasks: each kept tool is dropped with that
    reason, so the environment is rejected and says why.
    """
    model = model_of(env)
    if model is None:
        return
    kept = [p for p in probes if p.kept and p.tool in model.operations]
    if kept and not any(model.operations[p.tool].kind == "list" for p in kept):
        for p in kept:
            p.kept, p.reason = (
                False,
                "no list tool of the environment was kept, so no id can be discovered",
            )


def build_report(
    verifier: str, probes: list[ToolProbe], min_tool_share: float, seconds: float
) -> VerifyReport:
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
        failures.append(
            f"only {len(kept)}/{len(probes)} tools passed ({share:.0%} < {min_tool_share:.0%})"
        )
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
