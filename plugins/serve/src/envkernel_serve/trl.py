"""A TRL ``environment_factory`` class over ``envkernel serve``.

TRL's ``GRPOTrainer(environment_factory=...)`` calls the factory once per concurrent rollout, calls
``reset(**row)`` with the dataset row's columns before each generation, offers every public method
of the instance (other than ``reset`` and ``get_reward``) as a tool (its schema read from the
signature and the Google-style docstring by ``transformers.utils.get_json_schema``), and, when the
class has ``get_reward()``, uses it as a reward column. :func:`environment_factory` builds such a
class for the tools of a running server:

    from envkernel_serve.trl import environment_factory, dataset_rows
    Env = environment_factory("http://127.0.0.1:8000")
    trainer = GRPOTrainer(model=..., train_dataset=Dataset.from_list(dataset_rows("envkernel-out/RUN")),
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

from .client import ServeError, Session

__all__ = ["EnvkernelTRLEnv", "dataset_rows", "environment_factory"]

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
    """A method that TRL does not take for a tool: read on the class it is this object, not a function."""

    def __init__(self, func: Any, doc: str) -> None:
        self.func, self.__doc__ = func, doc

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self.func.__get__(obj, owner)


class EnvkernelTRLEnv:
    """Base of the classes :func:`environment_factory` makes: one server session per instance."""

    url: str = ""
    answer_tool: bool = True

    def __init__(self) -> None:
        self._session: Session | None = None
        self._submitted: float | None = None
        self._done = False

    def _s(self) -> Session:
        if self._session is None:
            self._session = Session(self.url)
        return self._session

    def reset(self, **kwargs: Any) -> str | None:
        """Load the row's task (``task_id`` or ``task_index`` column) in this instance's sandbox."""
        options = {
            k: kwargs[k] for k in ("task_id", "task_index", "seed") if kwargs.get(k) is not None
        }
        data = self._s().reset(**options)
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
    close = _NotATool(_close, "Close the session (its sandbox goes back to the server's pool).")

    def __del__(self) -> None:
        try:
            self._close()
        except Exception:
            pass


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


def environment_factory(
    url: str, *, answer_tool: bool = True, timeout: float = 60.0
) -> type[EnvkernelTRLEnv]:
    """A class for TRL's ``environment_factory``: one method per tool of the server at ``url`` (see the module docstring)."""
    with Session(url, timeout=timeout) as probe:
        tools = probe.tools()
    namespace: dict[str, Any] = {
        "url": url,
        "answer_tool": answer_tool,
        "__doc__": f"The tools of the envkernel server at {url}.",
    }
    for tool in tools:
        ident, method = _tool_method(tool)
        if ident in ("reset", "get_reward", "close", "submit_answer") or ident.startswith("_"):
            raise ValueError(
                f"tool {tool['name']!r} would clash with a method of the environment class; rename it"
            )
        namespace[ident] = method
    if answer_tool:
        namespace["submit_answer"] = (
            _submit_answer  # its __name__ is the tool's name TRL shows the model
        )
    return type("EnvkernelEnvironment", (EnvkernelTRLEnv,), namespace)


def dataset_rows(run_dir: str | Path, tasks_file: str | Path | None = None) -> list[dict[str, Any]]:
    """Rows for a TRL dataset from a run's tasks: ``prompt`` (a user message with the request), ``task_id``, ``env_id``."""
    from .catalog import load_catalog

    cat = load_catalog(run_dir, tasks_file)
    return [
        {"prompt": [{"role": "user", "content": t.request}], "task_id": t.id, "env_id": t.env_id}
        for t in cat.tasks
    ]
