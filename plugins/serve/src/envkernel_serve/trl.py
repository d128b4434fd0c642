"""A TRL ``environment_factory`` class over ``envkernel serve``.

TRL's ``GRPOTrainer(environment_factory=...)`` calls the factory once per concurrent rollout, calls
``reset(**row)`` with the dataset row's columns before each generation, offers every public method
of the instance (other than ``reset`` and ``get_reward``) as a tool (its schema read from the
signature and the Google-style docstring by ``transformers.utils.get_json_schema``), and, when the
class has ``get_reward()``, uses it as a reward column. :func:`environment_factory` builds such a
class for the tools of a running server:

    from envkernel_serve.trl import environment_factory, dataset_rows
    Env = environment_factory("http://127.0.0.1:8000")
    rows = dataset_rows("envkernel-out/RUN")
    trainer = GRPOTrainer(model=..., train_dataset=Dataset.from_list(rows),
                          environment_factory=Env, args=GRPOConfig(...))

* ``reset(task_id=..., **columns)`` loads the task's initial state in this instance's own sandbox
  (one server session per instance; TRL reuses instances across batches, and a reset restores).
  It returns the task's request when the row has no ``prompt`` column, else None.
* one method per tool, with the tool's parameters as keyword arguments; it returns the tool's
  result as JSON text, and raises ``ValueError`` with the tool's error (TRL shows the model the
  error and counts a tool failure);
* ``submit_answer(answer)`` ends the episode with the final answer (read-only tasks are scored on
  it); ``get_reward()`` is the task's check, computed by the server.

TRL offers the model every public *function* of the class; ``close`` (ending the session) is
therefore not one on the class (it is still ``instance.close()``), so the model is never offered it.

TRL is not a dependency of this package (it pulls torch). tests/test_trainers.py runs a real
``GRPOTrainer`` step (TRL 1.16, CPU torch, in the separate ``.venv-trainers``) with this class
against a live server and checks that the trainer's reward is the server's; see docs/serve.md.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from pathlib import Path
from typing import Any

from .client import ServeError, Session, server_metadata

__all__ = ["EnvkernelTRLEnv", "dataset_rows", "environment_factories", "environment_factory"]

_PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _py_type(schema: dict[str, Any]) -> Any:
    t = schema.get("type")
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        t = kinds[0] if kinds else "string"
    return _PY_TYPES.get(str(t), str)


def _ident(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit() or keyword.iskeyword(s):
        s = f"_{s}" if s and not keyword.iskeyword(s) else f"{s}_"
    return s


def _one_line(text: str) -> str:
    return " ".join((text or "").split())


class _NotATool:
    """A method that TRL does not take for a tool: read on the class it is this object, not a
    function."""

    def __init__(self, func: Any, doc: str) -> None:
        self.func, self.__doc__ = func, doc

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self.func.__get__(obj, owner)


class EnvkernelTRLEnv:
    """Base of the classes :func:`environment_factory` makes: one server session per instance."""

    url: str = ""
    answer_tool: bool = True
    env_ids: tuple[str, ...] = ()
    """The environments whose rows this class plays (their tools are its methods); empty: any."""

    def __init__(self) -> None:
        self._session: Session | None = None
        self._submitted: float | None = None
        self._done = False

    def _s(self) -> Session:
        if self._session is None:
            self._session = Session(self.url)
        return self._session

    def _row_env(self, row: dict[str, Any]) -> str | None:
        """The environment a row names (its ``environment`` or ``env_id`` column), checked against
        :attr:`env_ids`."""
        named = {str(row[k]) for k in ("environment", "env_id") if row.get(k) is not None}
        if len(named) > 1:
            raise ValueError(
                f"the row names two environments ({', '.join(sorted(named))}) in its "
                "environment and env_id columns"
            )
        env = named.pop() if named else None
        if env is not None and self.env_ids and env not in self.env_ids:
            raise ValueError(
                f"{type(self).__name__} plays the environment(s) {', '.join(self.env_ids)}, "
                f"and this row is of environment {env!r}: give TRL "
                "environment_factories(url) (a dict, one class per environment, chosen by "
                "the row's `environment` column), or environment_factory(url) for every "
                "environment the server serves"
            )
        if env is None and len(self.env_ids) == 1:
            env = self.env_ids[0]
        return env

    def reset(self, **kwargs: Any) -> str | None:
        """Load the row's task (``task_id`` or ``task_index`` column) in this instance's sandbox.

        The row's ``environment`` (or ``env_id``) column, when it has one, must be one this class
        plays (:attr:`env_ids`); a ``ValueError`` says so otherwise, or when the task is of another
        one."""
        options: dict[str, Any] = {
            k: kwargs[k] for k in ("task_id", "task_index", "seed") if kwargs.get(k) is not None
        }
        env = self._row_env(kwargs)
        if env is not None:
            options["env_id"] = env
        try:
            data = self._s().reset(**options)
        except ServeError as exc:
            raise ValueError(str(exc)) from None
        self._submitted, self._done = None, False
        return None if "prompt" in kwargs else str(data["observation"].get("request") or "")

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        if self._done:
            raise ValueError("the task is finished (the answer was submitted); no more tool calls")
        try:
            data = self._s().call(tool, **{k: v for k, v in arguments.items() if v is not None})
        except ServeError as exc:
            raise ValueError(str(exc)) from None
        obs = data["observation"]
        if data.get("done"):
            self._done = True
        if obs.get("error"):
            raise ValueError(obs["error"].get("message", "the call failed"))
        if not obs.get("ok"):
            err = (obs.get("result") or {}).get("error") or {}
            raise ValueError(f"{err.get('code', 'error')}: {err.get('message', 'the tool failed')}")
        return json.dumps(obs.get("result"), ensure_ascii=False, default=str)

    def get_reward(self) -> float:
        """The task's check (trace + outcome) on this rollout, computed by the server."""
        if self._submitted is not None:
            return self._submitted
        reward = self._s().state().get("reward")
        return float(reward) if reward is not None else 0.0

    def _close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # ``close`` is not a plain function on the class: TRL offers every public function of the class
    # (but ``reset`` and ``get_reward``) to the model as a tool, and closing the session is not one.
    # An instance never closed needs no ``__del__``: its Session closes itself when collected or at
    # interpreter exit (``weakref.finalize``, see envkernel_serve.client).
    close = _NotATool(_close, "Close the session (its sandbox goes back to the server's pool).")


def _submit_answer(self, answer: str) -> str:  # type: ignore[no-untyped-def]
    """Finish the task and give the user your final answer.

    Args:
        answer: Your final reply to the user, with every fact they asked for.
    """
    if self._done and self._submitted is not None:
        raise ValueError("the answer was already submitted")
    data = self._s().submit(answer)
    self._done = True
    self._submitted = float(data["reward"]) if data.get("reward") is not None else 0.0
    return "submitted"


_submit_answer.__name__ = _submit_answer.__qualname__ = "submit_answer"


def _tool_method(tool: dict[str, Any]) -> tuple[str, Any]:
    name = str(tool["name"])
    schema = tool.get("input_schema") or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    idents = {p: _ident(p) for p in props}
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    ordered = [p for p in props if p in required] + [p for p in props if p not in required]
    for p in ordered:
        tp = _py_type(props[p] or {})
        if p in required:
            params.append(
                inspect.Parameter(idents[p], inspect.Parameter.KEYWORD_ONLY, annotation=tp)
            )
            annotations[idents[p]] = tp
        else:
            params.append(
                inspect.Parameter(
                    idents[p], inspect.Parameter.KEYWORD_ONLY, default=None, annotation=tp | None
                )
            )
            annotations[idents[p]] = tp | None
    annotations["return"] = str
    back = {v: k for k, v in idents.items()}

    def method(self: EnvkernelTRLEnv, **kwargs: Any) -> str:
        return self._call(name, {back.get(k, k): v for k, v in kwargs.items()})

    method.__name__ = method.__qualname__ = _ident(name)
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    lines = [_one_line(tool.get("description") or name.replace("_", " ")), ""]
    if ordered:
        lines.append("Args:")
        for p in ordered:
            desc = _one_line((props[p] or {}).get("description") or p.replace("_", " "))
            lines.append(f"    {idents[p]}: {desc}")
    lines += ["", "Returns:", "    The tool's result as JSON text."]
    method.__doc__ = "\n".join(lines)
    return method.__name__, method


_RESERVED = ("reset", "get_reward", "close", "submit_answer", "env_ids", "url", "answer_tool")


def _served(url: str, timeout: float) -> dict[str, list[dict[str, Any]]]:
    """The tools of each environment the server at ``url`` serves (``/metadata``'s
    ``tool_specs``)."""
    meta = server_metadata(url, timeout=timeout)
    envs = meta.get("envs") or []
    if envs and all("tool_specs" in e for e in envs):
        return {str(e["id"]): list(e["tool_specs"]) for e in envs}
    # a server without tool_specs in its /metadata: the tools of a session's default environment
    with Session(url, timeout=timeout) as probe:
        tools = probe.tools()
    first = str(envs[0]["id"]) if envs else ""
    return {first: tools}


def _make_class(
    name: str,
    url: str,
    env_ids: tuple[str, ...],
    tools: list[dict[str, Any]],
    answer_tool: bool,
) -> type[EnvkernelTRLEnv]:
    namespace: dict[str, Any] = {
        "url": url,
        "answer_tool": answer_tool,
        "env_ids": env_ids,
        "__doc__": f"The tools of {', '.join(env_ids) or 'the environment'} on the envkernel "
        f"server at {url}.",
    }
    for tool in tools:
        ident, method = _tool_method(tool)
        if ident in _RESERVED or ident.startswith("_"):
            raise ValueError(
                f"tool {tool['name']!r} would clash with a method of the environment class; "
                "rename it"
            )
        namespace[ident] = method
    if answer_tool:
        namespace["submit_answer"] = (
            _submit_answer  # its __name__ is the tool's name TRL shows the model
        )
    return type(name, (EnvkernelTRLEnv,), namespace)


def environment_factories(
    url: str, *, answer_tool: bool = True, timeout: float = 60.0
) -> dict[str, type[EnvkernelTRLEnv]]:
    """One class per environment the server at ``url`` serves, by environment id: TRL's dict
    ``environment_factory`` (each row's ``environment`` column, which :func:`dataset_rows` writes,
    picks its class, and only that environment's tools are offered for it)."""
    served = _served(url, timeout)
    return {
        env_id: _make_class(
            f"EnvkernelEnvironment_{_ident(env_id)}", url, (env_id,), tools, answer_tool
        )
        for env_id, tools in served.items()
    }


def environment_factory(
    url: str, *, env: str | None = None, answer_tool: bool = True, timeout: float = 60.0
) -> type[EnvkernelTRLEnv]:
    """A class for TRL's ``environment_factory``: one method per tool of the server at ``url`` (see
    the module docstring).

    ``env`` names the one environment it plays (its tools, its rows). Without it, a server of one
    environment gives that one's class, and a server of several (a run folder) one class with every
    environment's tools: each row is reset to its task in its own environment (a row naming an
    environment that is not served is a ``ValueError``). :func:`environment_factories` (one class
    per environment) offers each row only its environment's tools."""
    served = _served(url, timeout)
    if env is not None:
        if env not in served:
            raise ValueError(
                f"the server at {url} serves no environment {env!r}; it serves {', '.join(served)}"
            )
        return _make_class("EnvkernelEnvironment", url, (env,), served[env], answer_tool)
    merged: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for env_id, tools in served.items():
        for tool in tools:
            name = str(tool["name"])
            if name in merged and merged[name] != tool:
                raise ValueError(
                    f"tool {name!r} differs between environments {owner[name]!r} and "
                    f"{env_id!r}, so one class "
                    "cannot offer both: use environment_factories(url) (one class per "
                    "environment) or environment_factory(url, env=...)"
                )
            merged.setdefault(name, tool)
            owner.setdefault(name, env_id)
    return _make_class(
        "EnvkernelEnvironment", url, tuple(served), list(merged.values()), answer_tool
    )


def dataset_rows(run_dir: str | Path, tasks_file: str | Path | None = None) -> list[dict[str, Any]]:
    """Rows for a TRL dataset from a run's tasks: ``prompt`` (a system message with the task's
    domain policy and user, when it has one, then a user message with the request), ``task_id``,
    ``env_id``, and ``environment`` (the same id: the column TRL's dict ``environment_factory``
    routes by)."""
    from envkernel_kit.policy import policy_note

    from .catalog import load_catalog

    def prompt(t: Any) -> list[dict[str, str]]:
        note = policy_note(t)
        system = [{"role": "system", "content": note}] if note else []
        return [*system, {"role": "user", "content": t.request}]

    cat = load_catalog(run_dir, tasks_file)
    return [
        {
            "prompt": prompt(t),
            "task_id": t.id,
            "env_id": t.env_id,
            "environment": t.env_id,
        }
        for t in cat.tasks
    ]
