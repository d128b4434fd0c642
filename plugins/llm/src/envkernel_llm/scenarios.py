"""Running a candidate's test scenarios in a sandbox, and summarising what failed for the model.

A scenario (written by the model, in ``scenarios.json``)::

    {"name": "borrow, then return",
     "steps": [{"call": "borrow_book", "arguments": {...}, "expect": "ok",
                "returns": {"status": "open"}},
               {"call": "return_book", "arguments": {"loan_id": "${1.id}"}, "expect": "ok"},
               {"call": "borrow_book", "arguments": {...}, "expect": "error",
                "error_code": "conflict"}],
     "state": [{"table": "loans", "count": 3},
               {"table": "books", "where": {"id": "bk_0002"}, "has": {"available": 1}},
               {"table": "loans", "where": {"id": "loan_0009"}, "absent": true}]}

``"${K.path}"`` in arguments is the value at ``path`` in step K's result (1-based; ``${1.id}``,
``${2.0.id}``). ``returns`` is matched as a subset: every key it names must be there with that
value; a list matches when each item it lists matches some item of the answer. Each scenario
starts from the seed (restored from a snapshot). Every call runs in the sandbox, never here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BLOCKED", "Outcome", "run_scenarios", "subset_problem"]

_REF = re.compile(r"^\$\{(\d+)((?:\.[A-Za-z0-9_]+)*)\}$")

BLOCKED = (
    (
        "network",
        re.compile(
            r"Network is unreachable|Name or service not known|Temporary failure in name "
            r"resolution|Address family not supported|getaddrinfo|Connection refused|No "
            r"route to host|Operation not "
            r"permitted.*(socket|connect)|socket|URLError|urlopen|HTTPConnection|ConnectionError|connect\(",
            re.I,
        ),
    ),
    (
        "files",
        re.compile(
            r"Permission denied|Read-only file system|Operation not permitted|No such file "
            r"or directory: '/",
            re.I,
        ),
    ),
)
"""How a sandbox's refusal shows in an error message, by what was reached for."""


@dataclass
class Outcome:
    """What running the scenarios found."""

    scenarios: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    """One line per failed check, for the model and for the report."""
    blocked: list[str] = field(default_factory=list)
    """Calls the sandbox refused (network, host files), as ``kind: tool: message``."""
    calls: int = 0
    covered: set[str] = field(default_factory=set)
    """Tools some scenario called."""

    @property
    def ok(self) -> bool:
        """Every scenario passed."""
        return self.scenarios > 0 and self.passed == self.scenarios and not self.failures


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _near(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    if isinstance(a, str) and isinstance(b, str):
        return a == b or a.casefold() == b.casefold()
    return a == b


def subset_problem(expected: Any, actual: Any, where: str = "the answer") -> str:
    """Why ``actual`` does not contain ``expected`` (see the module docstring), or ""."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return (
                f"{where} is {_short(actual, 80)}, expected an object with {_short(expected, 80)}"
            )
        for key, want in expected.items():
            if key not in actual:
                return (
                    f"{where} has no field {key!r} (it has "
                    f"{', '.join(map(str, list(actual)[:12]))})"
                )
            problem = subset_problem(want, actual[key], f"{where}.{key}")
            if problem:
                return problem
        return ""
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where} is {_short(actual, 80)}, expected a list"
        for want in expected:
            if not any(not subset_problem(want, got) for got in actual):
                return (
                    f"{where} has no item matching {_short(want, 100)} (it has {len(actual)} "
                    f"items: {_short(actual, 120)})"
                )
        return ""
    return (
        ""
        if _near(expected, actual)
        else f"{where} is {_short(actual, 80)}, expected {_short(expected, 80)}"
    )


def _resolve(value: Any, results: list[Any]) -> Any:
    if isinstance(value, str):
        m = _REF.match(value)
        if m:
            k = int(m.group(1))
            if not 1 <= k <= len(results):
                raise LookupError(
                    f"{value} refers to step {k}, but only {len(results)} step(s) ran before"
                )
            got = results[k - 1]
            for part in [p for p in m.group(2).split(".") if p]:
                if isinstance(got, list) and part.isdigit() and int(part) < len(got):
                    got = got[int(part)]
                elif isinstance(got, dict) and part in got:
                    got = got[part]
                else:
                    raise LookupError(f"{value}: step {k}'s result has no {part!r}")
            return got
        return value
    if isinstance(value, dict):
        return {k: _resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, results) for v in value]
    return value


def _rows(
    state: dict[str, list[dict[str, Any]]], check: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    table = check.get("table")
    if table not in state:
        raise LookupError(f"there is no table {table!r} (tables: {', '.join(sorted(state))})")
    rows = state[table]
    where = check.get("where") or {}
    if not isinstance(where, dict):
        raise LookupError("'where' must be an object of column values")
    return table, [r for r in rows if all(_near(v, r.get(k)) for k, v in where.items())]


def _check_state(state: dict[str, Any], check: Any) -> str:
    if not isinstance(check, dict):
        return f"a state check must be an object, got {_short(check, 60)}"
    try:
        table, rows = _rows(state, check)
    except LookupError as exc:
        return str(exc)
    where = f"{table}" + (f" where {_short(check.get('where'), 80)}" if check.get("where") else "")
    if "count" in check:
        if len(rows) != check["count"]:
            return f"{where} has {len(rows)} row(s), expected {check['count']}"
    if check.get("absent"):
        if rows:
            return f"{where} should have no row, found {_short(rows[0], 100)}"
    if "has" in check:
        if not rows:
            return f"{where}: no such row"
        problem = subset_problem(check["has"], rows[0], f"the row of {where}")
        if problem:
            return problem
    return ""


def blocked_kind(message: str) -> str:
    """``network`` or ``files`` when an error message shows the sandbox refusing; else ""."""
    for kind, pattern in BLOCKED:
        if pattern.search(message):
            return kind
    return ""


_BLOCKABLE = ("tool_crashed", "load_failed", "timeout")
"""Error codes of a call the sandbox may have stopped (a blocked reach)."""


def _error_step(out: Outcome, step: dict[str, Any], call: str, tool: str, res: Any) -> str:
    """A call that failed: fine if the step expects that error, else what went wrong (a
    blocked reach recorded)."""
    msg = f"{res.error.code}: {res.error.message}" if res.error else "failed"
    kind = blocked_kind(msg) if res.error and res.error.code in _BLOCKABLE else ""
    if kind:
        out.blocked.append(f"{kind}: {tool}: {msg[:200]}")
    if step.get("expect", "ok") != "error":
        return f"{call} failed with {msg[:300]}" + (
            f" — the sandbox blocks {kind} access; use env.db only" if kind else ""
        )
    want = step.get("error_code")
    if want and res.error and res.error.code != want:
        return (
            f"{call} failed with code {res.error.code!r}, expected {want!r} "
            f"({res.error.message[:160]})"
        )
    return ""


def _ok_step(step: dict[str, Any], call: str, res: Any) -> str:
    """A call that succeeded: what is wrong when the step expects an error or other values."""
    if step.get("expect", "ok") == "error":
        return f"{call} succeeded with {_short(res.value)}, expected an error" + (
            f" {step['error_code']!r}" if step.get("error_code") else ""
        )
    if "returns" in step:
        problem = subset_problem(step["returns"], res.value)
        if problem:
            return f"{call}: {problem}"
    return ""


async def _step(sb: Any, out: Outcome, k: int, step: Any, results: list[Any]) -> str:
    """Make step ``k`` of a scenario (its arguments may name earlier results); what went wrong,
    or ""."""
    if not isinstance(step, dict) or not isinstance(step.get("call"), str):
        return f'step {k} is not {{"call": TOOL, "arguments": {{...}}}}'
    tool = step["call"]
    try:
        args = _resolve(step.get("arguments") or {}, results)
    except LookupError as exc:
        return f"step {k} ({tool}): {exc}"
    if not isinstance(args, dict):
        return f"step {k} ({tool}): arguments must be an object"
    out.calls += 1
    out.covered.add(tool)
    res = await sb.call(tool, args)
    call = f"step {k} {tool}({_short(args, 120)})"
    if not res.ok:
        failed = _error_step(out, step, call, tool, res)
        results.append(None)
        return failed
    failed = _ok_step(step, call, res)
    results.append(res.value)
    return failed


async def _state_problem(sb: Any, scen: dict[str, Any]) -> str:
    """What the state after a scenario's steps gets wrong of its ``state`` checks, or ""."""
    if not scen.get("state"):
        return ""
    state = await sb.state()
    for check in scen["state"] if isinstance(scen["state"], list) else [scen["state"]]:
        problem = _check_state(state, check)
        if problem:
            return f"after the steps, {problem}"
    return ""


async def _scenario(sb: Any, out: Outcome, scen: dict[str, Any]) -> str:
    """Run one scenario's steps and its state checks; what went wrong, or ""."""
    results: list[Any] = []
    for k, step in enumerate(scen.get("steps") or [], 1):
        failed = await _step(sb, out, k, step, results)
        if failed:
            return failed
    return await _state_problem(sb, scen)


async def run_scenarios(
    sb: Any, scenarios: list[dict[str, Any]], *, max_failures: int = 12
) -> Outcome:
    """Run every scenario from the seed state in ``sb`` (a live sandbox holding the candidate)."""
    out = Outcome()
    seed = await sb.snapshot()
    for n, scen in enumerate(scenarios, 1):
        name = str(scen.get("name") or f"scenario {n}")
        out.scenarios += 1
        failed = await _scenario(sb, out, scen)
        if failed:
            if len(out.failures) < max_failures:
                out.failures.append(f"scenario {name!r}: {failed}")
        else:
            out.passed += 1
        await sb.restore(seed)
    return out
