"""The verifier's schema checks, with ``jsonschema``: tool results and seed rows against the spec.

Each tool's ``returns`` is the JSON Schema of its successful answer (the synthesizer builds it
from the spec's response schema). :class:`ResultSchemas` validates every successful answer the
verifier sees, in the probe and in the invariant checks, with the validator the schema's
``$schema`` names (Draft 2020-12 by default) and formats checked. :func:`seed_problems` checks
a model environment's seed rows against the answer schema of the get tool of their resource,
so that no agent is ever shown a row its own spec refuses.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from envkernel_runtime.model import ResourceModel, model_of
from envkernel_schemas import EnvSpec, ToolSpec

__all__ = ["ResultSchemas", "seed_problems"]

_FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def _message(err: jsonschema.ValidationError) -> str:
    where = "".join(f"[{p!r}]" for p in err.absolute_path)
    return f"the answer{where}: {err.message[:300]}"


class ResultSchemas:
    """Compiled ``returns`` validators of one environment's tools, by tool name."""

    def __init__(self, tools: list[ToolSpec]) -> None:
        self.validators: dict[str, Any] = {}
        self.broken: dict[str, str] = {}
        for tool in tools:
            if not tool.returns:
                continue
            cls = jsonschema.validators.validator_for(
                tool.returns, default=jsonschema.Draft202012Validator
            )
            try:
                cls.check_schema(tool.returns)
            except jsonschema.SchemaError as exc:
                self.broken[tool.name] = (
                    f"its declared answer schema is not valid JSON Schema: {exc.message[:200]}"
                )
                continue
            self.validators[tool.name] = cls(tool.returns, format_checker=_FORMATS)

    def problem(self, tool: str, value: Any) -> str:
        """Why ``value``, a successful answer of ``tool``, breaks its declared schema, or ""."""
        if tool in self.broken:
            return self.broken[tool]
        v = self.validators.get(tool)
        if v is None:
            return ""
        err = jsonschema.exceptions.best_match(v.iter_errors(value))
        return (
            f"its answer does not match its declared schema: {_message(err)}"
            if err is not None
            else ""
        )


def seed_problems(env: EnvSpec, schemas: ResultSchemas) -> dict[str, str]:
    """Get tool -> why a seed row of its resource breaks the tool's answer schema (model
    environments)."""
    model: ResourceModel | None = model_of(env)
    if model is None:
        return {}
    out: dict[str, str] = {}
    for name, op in model.operations.items():
        if op.kind != "get" or name not in schemas.validators:
            continue
        res = model.resources.get(op.resource)
        if res is None:
            continue
        hidden = {c for c, f in res.fields.items() if f.hidden}
        for row in model.seed.get(op.resource, []):
            shown = {k: v for k, v in row.items() if k not in hidden}
            problem = schemas.problem(name, shown)
            if problem:
                out[name] = (
                    f"seed row {row.get(res.key)!r} of {op.resource!r} breaks the spec: "
                    f"{problem.split(': ', 1)[-1]}"
                )
                break
    return out
