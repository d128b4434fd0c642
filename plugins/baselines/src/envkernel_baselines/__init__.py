"""envkernel-baselines: the two policies the task gate runs.

- ``reference`` replays the task's reference chain call by call, then answers in words: the
  task's reference answer (``outcome.answer``, which carries every fact and nothing else), or,
  for a task that has none, the last call's output. It scores 1 on a sound task.
  When the task holds something back (``Task.hidden``) and the run has a ``user`` component, it
  first asks (:data:`CLARIFY`) and the user answers, one turn per held-back fact.
- ``nothing`` makes no call and declines. It scores 0 on a sound task.
- ``mutant`` is a near miss of the reference (:mod:`envkernel_baselines.mutants`): a gate
  rollout of role ``mutant`` with ``mutant = k`` plays mutant kind ``k`` (the last call dropped,
  one argument changed, an answer with one item missing, an answer stuffed with every row of an
  earlier lookup, the distractor chosen instead of the target). A sound task's check scores every
  one below 1.

- ``sometimes`` plays the reference on a known share of attempts (``share``, by a hash of the
  task id and the attempt index) and declines on the others: a policy of known skill, for
  ``--calibrate``.

All write the conversation in OpenAI chat format, so their trajectories double as SFT data.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.messages import (
    answer_from,
    call_and_record,
    compact,
    result_content,
)  # compact, result_content: re-exported
from envkernel_kit.policy import policy_note
from envkernel_kit.users import user_for, user_turn
from envkernel_schemas import RolloutRequested, Termination, ToolResult, Trajectory, mutant_of

from .mutants import MUTANT_KINDS, mutate, reference_answer

__all__ = [
    "BaselineSettings",
    "MUTANT_KINDS",
    "Mutant",
    "NOTHING_ANSWER",
    "SYSTEM_PROMPT",
    "Nothing",
    "Reference",
    "Settings",
    "Sometimes",
    "SometimesSettings",
    "compact",
    "solves",
    "register_policies",
    "result_content",
]

SYSTEM_PROMPT = (
    "You are a helpful assistant with access to tools. Use them to fulfil the user's request: "
    "look up what you need, make the changes asked for, and finish with a short answer."
)
"""Default system prompt of the baseline conversations."""

NOTHING_ANSWER = "I can't help with that."
"""The do-nothing policy's answer."""
CLARIFY = "Before I go ahead: which ones do you mean, exactly?"
"""The reference's question when the task holds a condition back and the run has a user to ask."""
ASK_WHO = "Before I go ahead: who am I speaking with?"
"""The reference's question when the user held back who they are."""


ASK_WHICH = "Before I go ahead: which one do you mean?"
"""The reference's question when the user held back which row they mean."""


def ask_for(fact: str) -> str:
    """The reference's question for one held-back item: which rows (a condition), which row (a
    quoted name), else who is speaking."""
    if fact.startswith("Only the "):
        return CLARIFY
    return ASK_WHICH if '"' in fact else ASK_WHO


class BaselineSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the baseline policies."""

    system_prompt: str = SYSTEM_PROMPT
    """System message that opens the conversation."""


Settings = BaselineSettings
"""Alias: the settings of this plugin's component(s)."""


def _opening(system_prompt: str, request: RolloutRequested) -> list[dict[str, Any]]:
    note = policy_note(request.task)  # the domain policy and who is asking, when there is one
    return [
        {"role": "system", "content": f"{system_prompt}\n\n{note}" if note else system_prompt},
        {"role": "user", "content": request.task.request},
    ]


class Reference:
    """The ``reference`` policy: replays the task's reference chain."""

    Settings = BaselineSettings

    def __init__(self, settings: BaselineSettings | None = None) -> None:
        self.settings = settings or BaselineSettings()

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Call each reference tool in order, then give the task's reference answer."""
        messages = _opening(self.settings.system_prompt, request)
        user = user_for(ctx) if request.task.hidden else None
        for fact in (
            request.task.hidden if user is not None else []
        ):  # ask for what the user held back, one turn each
            messages.append({"role": "assistant", "content": ask_for(fact)})
            said = await user_turn(user, request.task, messages, ctx)
            if said is None:
                messages.pop()
                break
            messages.append({"role": "user", "content": said})
        last: ToolResult | None = None
        for i, call in enumerate(request.task.calls):
            last = await call_and_record(env, messages, f"call_{i}", call.name, call.arguments)
        # the task's answer, else a read-only task's facts in words (never the tools' raw JSON)
        answer = (
            reference_answer(request.task)
            if (last is None or last.ok)
            and (request.task.outcome.answer or not request.task.outcome.mutates)
            else answer_from(last)
        )
        messages.append({"role": "assistant", "content": answer})
        return Trajectory(
            task_id=request.task.id,
            policy=request.policy or "reference",
            index=request.index,
            messages=messages,
            final_answer=answer,
            termination="answer",
        )


class Nothing:
    """The ``nothing`` policy: makes no call and declines."""

    Settings = BaselineSettings

    def __init__(self, settings: BaselineSettings | None = None) -> None:
        self.settings = settings or BaselineSettings()

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Decline without touching the environment."""
        messages = _opening(self.settings.system_prompt, request)
        messages.append({"role": "assistant", "content": NOTHING_ANSWER})
        return Trajectory(
            task_id=request.task.id,
            policy=request.policy or "nothing",
            index=request.index,
            messages=messages,
            final_answer=NOTHING_ANSWER,
            termination="answer",
        )


class Mutant:
    """The ``mutant`` policy: a near miss of the reference, its kind chosen by the rollout's
    index."""

    Settings = BaselineSettings

    def __init__(self, settings: BaselineSettings | None = None) -> None:
        self.settings = settings or BaselineSettings()

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Play mutant ``MUTANT_KINDS[request.mutant % 5]`` (the kind number the gate asks for;
        ``index - 2`` on a request from before it did): replay its calls, give its answer, and end
        with ``mutant:<kind>``; or, when it does not apply to the task, make no call and end with
        ``not_applicable:<kind>``."""
        task = request.task
        number = mutant_of(request)
        if number < 0:  # not asked as a mutant (a request without the gate's role): by index
            number = max(0, request.index - 2)
        kind = MUTANT_KINDS[number % len(MUTANT_KINDS)]
        messages = _opening(self.settings.system_prompt, request)
        tools = getattr(env, "tools", None)
        writes = {t.name for t in tools if getattr(t, "mutates", False)} if tools else None
        m = mutate(task, kind, writes)
        if m is None:
            return Trajectory(
                task_id=task.id,
                policy=request.policy or "mutant",
                index=request.index,
                messages=messages,
                termination=Termination.NOT_APPLICABLE.of(kind),
            )
        for i, call in enumerate(m.calls):
            await call_and_record(env, messages, f"call_{i}", call.name, call.arguments)
        messages.append({"role": "assistant", "content": m.answer})
        return Trajectory(
            task_id=task.id,
            policy=request.policy or "mutant",
            index=request.index,
            messages=messages,
            final_answer=m.answer,
            termination=Termination.MUTANT.of(kind),
        )


class SometimesSettings(BaselineSettings, kw_only=True):
    """Settings of the ``sometimes`` policy."""

    share: float = 0.5
    """Chance that one attempt solves its task (decided by a hash of the task id and the attempt
    index)."""


def solves(task_id: str, index: int, share: float) -> bool:
    """Whether the ``sometimes`` policy's attempt ``index`` at ``task_id`` solves it
    (deterministic)."""
    h = int.from_bytes(
        hashlib.blake2b(f"{task_id}/{index}".encode(), digest_size=8).digest(), "big"
    )
    return h / 2**64 < share


class Sometimes:
    """The ``sometimes`` policy: plays the reference on a known share of attempts (:func:`solves`)
    and declines on the others, so ``--calibrate`` has solve rates it can be checked against."""

    Settings = SometimesSettings

    def __init__(self, settings: SometimesSettings | None = None) -> None:
        self.settings = settings or SometimesSettings()
        self._reference, self._nothing = Reference(self.settings), Nothing(self.settings)

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """The reference's rollout when this attempt solves the task, else the do-nothing one."""
        win = solves(request.task.id, request.index, self.settings.share)
        traj = await (self._reference if win else self._nothing).rollout(request, env, ctx)
        return msgspec.structs.replace(traj, policy=request.policy or "sometimes")


@hookimpl
def register_policies(register: Any) -> None:
    """Register the ``reference``, ``nothing``, ``mutant`` and ``sometimes`` policies."""
    register("reference", Reference)
    register("nothing", Nothing)
    register("mutant", Mutant)
    register("sometimes", Sometimes)
