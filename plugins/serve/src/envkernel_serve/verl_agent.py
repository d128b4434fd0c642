"""A verl agent loop that plays one ``envkernel serve`` episode per trajectory (needs verl
installed).

verl's ``ToolAgentLoop`` runs the generate / parse tool calls / call tools loop, with the trainer's
model server generating; its tools are stateless unless they key their state by trajectory, which
:class:`envkernel_serve.verl.EnvkernelTool` does. :class:`EnvkernelAgentLoop` is that loop with the
episode made explicit, registered with verl's ``register`` as ``envkernel_agent``:

* before the first generation it opens the trajectory's session (its own sandbox), reset to the
  row's task (``extra_info.task_id``, or the ``task_id`` of ``tools_kwargs``' ``create_kwargs``);
* the tools are the server's, as :class:`EnvkernelTool` (from the tool config when it has them,
  else read from the server at ``url``);
* when the loop ends, a final assistant message without tool calls is submitted as the answer
  (read-only tasks are scored on it), the session is closed, and the task's check, computed by the
  server, is the trajectory's ``reward_score`` (verl's reward manager uses a score the agent loop
  set instead of computing one); ``extra_fields["envkernel"]`` holds the episode's state
  (``task_id``, ``step_count``, ``reasons``).

Use it in verl's agent-loop config file
(``actor_rollout_ref.rollout.agent.agent_loop_config_path``)::

    - name: envkernel_agent
      _target_: envkernel_serve.verl_agent.EnvkernelAgentLoop
      url: http://127.0.0.1:8000

and ``agent_name: envkernel_agent`` in the rows (``envkernel_serve.verl.dataset_rows(...,
agent_name="envkernel_agent")``). The interface follows verl 0.9's
``verl/experimental/agent_loop/agent_loop.py`` and ``tool_agent_loop.py`` (Apache-2.0).
"""

from __future__ import annotations

import os
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop

from .verl import EnvkernelTool, end_trajectory, finish_trajectory, open_trajectory, tool_config

__all__ = ["EnvkernelAgentLoop"]


def _task_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    extra = kwargs.get("extra_info") or {}
    if extra.get("task_id"):
        return {"task_id": extra["task_id"]}
    for entry in (kwargs.get("tools_kwargs") or {}).values():
        create = (entry or {}).get("create_kwargs") or {}
        if create.get("task_id"):
            return {"task_id": create["task_id"]}
    return {}


@register("envkernel_agent")
class EnvkernelAgentLoop(ToolAgentLoop):
    """verl's ``ToolAgentLoop`` over one ``envkernel serve`` episode per trajectory (see the module
    docstring).

    ``url``: the server (default: the ``url`` of the configured :class:`EnvkernelTool`\\ s, else
    ``$ENVKERNEL_SERVE_URL``)."""

    def __init__(
        self, *args: Any, url: str | None = None, tools: Any = None, **kwargs: Any
    ) -> None:
        configured = [t for t in (tools.tools if tools else []) if isinstance(t, EnvkernelTool)]
        self.url = str(
            url
            or (configured[0].url if configured else "")
            or os.environ.get("ENVKERNEL_SERVE_URL", "")
        )
        if not self.url:
            raise ValueError(
                "EnvkernelAgentLoop needs the server: `url:` in its agent-loop config, an "
                "EnvkernelTool in the tool config, or ENVKERNEL_SERVE_URL"
            )
        if tools is None or not tools.tools:
            from verl.experimental.agent_loop.agent_loop import ToolListWrap

            tools = ToolListWrap(
                [
                    EnvkernelTool(e["config"], e["tool_schema"])
                    for e in tool_config(self.url)["tools"]
                ]
            )
        super().__init__(*args, tools=tools, **kwargs)
        self._episode: tuple[AgentData, dict[str, Any]] | None = None
        self._create: dict[str, Any] = {}

    async def _handle_pending_state(
        self, agent_data: AgentData, sampling_params: dict[str, Any]
    ) -> AgentState:
        """Open the trajectory's session at its task, then build the prompt as ``ToolAgentLoop``
        does."""
        create = self._create
        await open_trajectory(self.url, agent_data.request_id, create)
        self._episode = (agent_data, create)
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def run(
        self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any
    ) -> AgentLoopOutput:
        """Play the episode; the task's check (computed by the server) is the output's
        ``reward_score``."""
        self._create = _task_kwargs(kwargs)
        try:
            output = await super().run(sampling_params, priority=priority, **kwargs)
        except BaseException:
            if self._episode is not None:  # give the sandbox back; the error is verl's to report
                await end_trajectory(self.url, self._episode[0].request_id)
            raise
        if self._episode is None:  # the loop ended before its first generation
            return output
        agent_data, create = self._episode
        last = agent_data.messages[-1] if agent_data.messages else {}
        answer = (
            last.get("content")
            if last.get("role") == "assistant" and not agent_data.tool_calls
            else None
        )
        state = await finish_trajectory(self.url, agent_data.request_id, create, answer=answer)
        reward = state.get("reward")
        output.reward_score = float(reward) if reward is not None else 0.0
        output.extra_fields["envkernel"] = {
            k: state.get(k) for k in ("task_id", "step_count", "reasons", "episode_id")
        }
        return output
