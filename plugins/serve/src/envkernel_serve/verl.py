"""A verl ``BaseTool`` over ``envkernel serve``, keyed by trajectory instance.

verl's agent loop (``verl/experimental/agent_loop/tool_agent_loop.py``) calls, for every tool call,
``instance_id, _ = await tool.create(create_kwargs=...)``, then ``await tool.execute(instance_id,
args, agent_data=agent_data)`` (-> ``(ToolResponse, reward, metrics)``), then ``await
tool.release(instance_id)``. Tools built that way are stateless: each call would get a fresh
environment. A stateful environment needs every call of one trajectory to reach the same sandbox,
so :class:`EnvkernelTool` keys the server session by the **trajectory**: ``agent_data.request_id``
when the agent loop passes it, else ``create_kwargs["instance_id"]``, else the ``instance_id``
itself. The session is reset to the row's task (``create_kwargs["task_id"]``) when it opens.
``release`` forgets the call's instance; :meth:`EnvkernelTool.end` (or :func:`end_trajectory`)
closes the trajectory's session and returns its reward (also available from ``calc_reward``).

Configure it in verl's tool config file (one entry per tool, or let :func:`tool_config` write it)::

    tools:
      - class_name: envkernel_serve.verl.EnvkernelTool
        config: {url: "http://127.0.0.1:8000", type: native}
        tool_schema: {type: function,
                      function: {name: get_product, description: ..., parameters: {...}}}

and put ``{"TOOL": {"create_kwargs": {"task_id": ...}}}`` in each row's ``extra_info.tools_kwargs``.

verl is not a dependency (installing it pulls torch): when it is installed, the tool's responses
and schema are verl's own ``ToolResponse`` and ``OpenAIFunctionToolSchema``; otherwise small
stand-ins with the same fields. The interface follows ``verl/tools/base_tool.py`` (volcengine/verl,
Apache-2.0), whose ``BaseTool`` declares::

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema)
    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema
    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]
    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs
    ) -> tuple[ToolResponse, float, dict]
    async def calc_reward(self, instance_id: str, **kwargs) -> float
    async def release(self, instance_id: str, **kwargs) -> None

(older verl releases return only the instance id from ``create`` and a ``str`` or dict response
from ``execute``; the agent loop unpacks ``instance_id, _ = await tool.create(...)``, which this
class answers). tests/test_trainers.py loads these tools with verl 0.9.1's own
``initialize_tools_from_config`` and plays episodes with :mod:`envkernel_serve.verl_agent` (verl's
``ToolAgentLoop`` with the episode made explicit: the session opened at the row's task before the
first generation, the final answer submitted, the server's reward as the trajectory's
``reward_score``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from .client import AsyncSession, ServeError

__all__ = [
    "EnvkernelTool",
    "ToolResponse",
    "dataset_rows",
    "end_trajectory",
    "finish_trajectory",
    "open_trajectory",
    "tool_config",
]

try:  # verl's own types when verl is installed
    from verl.tools.base_tool import BaseTool as _Base  # type: ignore[import-not-found]
    from verl.tools.schemas import OpenAIFunctionToolSchema as _Schema  # type: ignore[import-not-found]
    from verl.tools.schemas import ToolResponse  # type: ignore[import-not-found]
except ImportError:
    _Base = object
    _Schema = None

    @dataclass
    class ToolResponse:  # type: ignore[no-redef]
        """verl's ``ToolResponse`` (text, image, video), for when verl is not installed."""

        text: str | None = None
        image: list[Any] | None = None
        video: list[Any] | None = None


@dataclass
class _Function:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )


@dataclass
class _ToolSchema:
    """verl's ``OpenAIFunctionToolSchema`` shape (``type``,
    ``function.name/description/parameters``)."""

    function: _Function
    type: str = "function"

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """The schema as OpenAI's tool JSON."""
        f = self.function
        return {
            "type": self.type,
            "function": {"name": f.name, "description": f.description, "parameters": f.parameters},
        }


def _schema(raw: Any) -> Any:
    if raw is None or not isinstance(raw, dict):
        return raw
    if _Schema is not None:
        return _Schema.model_validate(raw)
    f = raw.get("function") or {}
    return _ToolSchema(
        _Function(
            str(f.get("name", "")), str(f.get("description", "")), dict(f.get("parameters") or {})
        ),
        str(raw.get("type", "function")),
    )


@dataclass
class _Trajectory:
    session: AsyncSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    calls: int = 0


_trajectories: dict[tuple[str, str], _Trajectory] = {}
_opening: dict[tuple[str, str], asyncio.Lock] = {}


async def _trajectory(url: str, key: str, create_kwargs: dict[str, Any]) -> _Trajectory:
    lock = _opening.setdefault((url, key), asyncio.Lock())
    async with lock:
        traj = _trajectories.get((url, key))
        if traj is None:
            session = await AsyncSession.open(url)
            options = {
                k: create_kwargs[k]
                for k in ("task_id", "task_index", "seed")
                if create_kwargs.get(k) is not None
            }
            await session.reset(**options)
            traj = _trajectories[(url, key)] = _Trajectory(session)
        return traj


async def open_trajectory(url: str, key: str, create_kwargs: dict[str, Any]) -> None:
    """Open trajectory ``key``'s session now (reset to ``create_kwargs["task_id"]``), before its
    first tool call."""
    await _trajectory(url, key, create_kwargs)


async def end_trajectory(url: str, key: str) -> float | None:
    """Close the session of trajectory ``key`` on the server at ``url``; return its reward (None if
    it had none)."""
    _opening.pop((url, key), None)
    traj = _trajectories.pop((url, key), None)
    if traj is None:
        return None
    try:
        reward = (await traj.session.state()).get("reward")
    finally:
        await traj.session.close()
    return float(reward) if reward is not None else None


async def finish_trajectory(
    url: str, key: str, create_kwargs: dict[str, Any] | None = None, answer: str | None = None
) -> dict[str, Any]:
    """End trajectory ``key``: submit ``answer`` (when given), close its session; its final state
    (``reward``, ``step_count``, ``reasons``...).

    A trajectory that never called a tool is opened first (reset to ``create_kwargs``'s task), so
    it is scored too (the task's check on no calls)."""
    traj = await _trajectory(url, key, create_kwargs or {})
    _opening.pop((url, key), None)
    _trajectories.pop((url, key), None)
    try:
        async with traj.lock:
            if answer is not None:
                try:
                    await traj.session.submit(answer)
                except (
                    ServeError
                ):  # the episode had already ended (max_steps): its state has the reward
                    pass
            return await traj.session.state(reasons=True)  # the trainer's, not the model's
    finally:
        await traj.session.close()


class EnvkernelTool(_Base):  # type: ignore[misc,valid-type]
    """One tool of an ``envkernel serve`` environment, as a verl ``BaseTool`` (see the module
    docstring).

    ``config``: ``url`` (the server), optionally ``tool`` (the tool's name, when ``tool_schema`` is
    not given: it is then read from the server)."""

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        self.config = dict(config or {})
        self.url = str(self.config.get("url") or "")
        if not self.url:
            raise ValueError(
                "EnvkernelTool needs config.url: the address of a running `envkernel serve`"
            )
        self.tool_schema = _schema(tool_schema) if tool_schema is not None else None
        if self.tool_schema is None:
            name = self.config.get("tool")
            if not name:
                raise ValueError(
                    "EnvkernelTool needs a tool_schema, or config.tool naming one of the "
                    "server's tools"
                )
            self.tool_schema = _schema(_server_schemas(self.url).get(str(name)))
            if self.tool_schema is None:
                raise ValueError(f"the server at {self.url} has no tool {name!r}")
        self.name = self.tool_schema.function.name
        self._instances: dict[str, dict[str, Any]] = {}  # instance id -> its create_kwargs

    def get_openai_tool_schema(self) -> Any:
        """The tool's schema in OpenAI format."""
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        """Make an instance id; its trajectory's session opens (reset to
        ``create_kwargs["task_id"]``) at the first call."""
        iid = instance_id or str(uuid.uuid4())
        self._instances[iid] = dict(kwargs.get("create_kwargs") or {})
        return iid, ToolResponse()

    def _key(self, instance_id: str, kwargs: dict[str, Any]) -> str:
        request_id = getattr(kwargs.get("agent_data"), "request_id", None)
        create_kwargs = self._instances.get(instance_id) or {}
        return str(
            request_id
            or create_kwargs.get("instance_id")
            or create_kwargs.get("trajectory_id")
            or instance_id
        )

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run the tool in the trajectory's sandbox: ``(ToolResponse(text=JSON), 0.0, metrics)``."""
        traj = await _trajectory(
            self.url, self._key(instance_id, kwargs), self._instances.get(instance_id) or {}
        )
        if isinstance(parameters, str):
            try:
                parameters = json.loads(parameters)
            except ValueError:
                return (
                    ToolResponse(text=f"error: the arguments of {self.name} are not JSON"),
                    0.0,
                    {"ok": False},
                )
        async with traj.lock:
            try:
                data = await traj.session.call(self.name, **(parameters or {}))
            except ServeError as exc:
                return ToolResponse(text=f"error: {exc}"), 0.0, {"ok": False}
            traj.calls += 1
        obs = data["observation"]
        if obs.get("error"):
            return ToolResponse(text=f"error: {obs['error'].get('message')}"), 0.0, {"ok": False}
        return (
            ToolResponse(text=json.dumps(obs.get("result"), ensure_ascii=False, default=str)),
            0.0,
            {"ok": bool(obs.get("ok"))},
        )

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The task's check on the trajectory so far (computed by the server)."""
        traj = _trajectories.get((self.url, self._key(instance_id, kwargs)))
        if traj is None:
            return 0.0
        reward = (await traj.session.state()).get("reward")
        return float(reward) if reward is not None else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the call's instance; the trajectory's session stays until :meth:`end`."""
        self._instances.pop(instance_id, None)

    async def end(self, trajectory: str) -> float | None:
        """Close trajectory ``trajectory``'s session (``agent_data.request_id``); its reward."""
        return await end_trajectory(self.url, trajectory)


def _server_schemas(url: str, env: str | None = None) -> dict[str, dict[str, Any]]:
    """OpenAI tool schemas of every environment the server serves (or of ``env``), by tool name."""
    from .client import Session, server_metadata

    served: dict[str, list[dict[str, Any]]] = {}
    envs = server_metadata(url).get("envs") or []
    if envs and all("tool_specs" in e for e in envs):
        served = {str(e["id"]): list(e["tool_specs"]) for e in envs}
    else:  # a server without tool_specs in /metadata: its default environment's tools
        with Session(url) as s:
            served = {str(envs[0]["id"]) if envs else "": s.tools()}
    if env is not None:
        if env not in served:
            raise ValueError(
                f"the server at {url} serves no environment {env!r}; it serves {', '.join(served)}"
            )
        served = {env: served[env]}
    out: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for env_id, tools in served.items():
        for t in tools:
            schema = {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema") or {"type": "object", "properties": {}},
                },
            }
            name = str(t["name"])
            if name in out and out[name] != schema:
                raise ValueError(
                    f"tool {name!r} differs between environments {owner[name]!r} and "
                    f"{env_id!r}; verl's tool "
                    "config holds one schema per name: use tool_config(url, env=...) per "
                    "environment"
                )
            out.setdefault(name, schema)
            owner.setdefault(name, env_id)
    return out


def tool_config(url: str, env: str | None = None) -> dict[str, Any]:
    """verl's tool config (``{"tools": [...]}``, write it as YAML or JSON) with one
    :class:`EnvkernelTool` per tool of every environment the server serves (or of ``env`` only);
    each row's ``extra_info.tool_selection`` (:func:`dataset_rows`) offers it its own environment's
    tools."""
    return {
        "tools": [
            {
                "class_name": "envkernel_serve.verl.EnvkernelTool",
                "config": {"url": url, "type": "native"},
                "tool_schema": schema,
            }
            for schema in _server_schemas(url, env).values()
        ]
    }


def dataset_rows(
    run_dir: str, tasks_file: str | None = None, agent_name: str = "tool_agent"
) -> list[dict[str, Any]]:
    """verl dataset rows for a run's tasks: ``prompt``, ``agent_name`` (verl's ``tool_agent``, or
    ``envkernel_agent``: :mod:`envkernel_serve.verl_agent`), ``extra_info.tool_selection`` (the
    tools of the task's environment, or the task's subset: verl's agent loop offers the row only
    these of the tool config's tools), and ``extra_info.tools_kwargs`` giving every tool of the
    task's environment ``create_kwargs: {"task_id": ...}`` (write them to parquet)."""
    from .catalog import load_catalog

    cat = load_catalog(run_dir, tasks_file)
    rows = []
    for t in cat.tasks:
        names = [tool.name for tool in cat.envs[t.env_id].tools]
        offered = [n for n in names if n in set(t.tools)] if t.tools else names
        rows.append(
            {
                "data_source": f"envkernel/{t.env_id}",
                "agent_name": agent_name,
                "prompt": [{"role": "user", "content": t.request}],
                "reward_model": {"style": "rule", "ground_truth": t.id},
                "extra_info": {
                    "task_id": t.id,
                    "env_id": t.env_id,
                    "tool_selection": offered,
                    "need_tools_kwargs": True,
                    "tools_kwargs": {name: {"create_kwargs": {"task_id": t.id}} for name in names},
                },
            }
        )
    return rows
