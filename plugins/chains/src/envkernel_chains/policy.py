"""Who is asking: a sampled task under its environment's domain policy (``EnvSpec.policy``).

Every task of an environment with a policy states its user (``Task.user``) and carries the policy
(``Task.policy``), which the agent is shown. Then, by a draw from the task's id (so the same task
always becomes the same):

- a task whose reference uses a tool only an administrator may use (``DomainPolicy.administrator``)
  is a customer's request to be **refused** on a share :data:`REFUSE_SHARE` of such tasks (no
  call, no change, an answer that declines and says an administrator can), and an administrator's
  request on the others;
- a task whose reference uses a tool that cannot be undone (``DomainPolicy.confirm``) needs a
  **confirmation** on a share :data:`CONFIRM_SHARE` of such tasks (no change yet, an answer that
  asks the user to confirm) unless its words already say so ("go ahead"); on the others the
  request confirms it (:data:`envkernel_kit.policy.CONFIRMED` at its end).

A refusal or confirmation task keeps the request's calls in ``Outcome.declined`` (the gate's near
misses make them), and what its user holds back (``Task.hidden``: who is speaking, which rows).
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from envkernel_kit.policy import CONFIRMED, confirmation_question, refusal_answer
from envkernel_schemas import DomainPolicy, EnvSpec, Outcome, Task

__all__ = ["CONFIRM_SHARE", "REFUSE_SHARE", "under_policy"]

REFUSE_SHARE = 0.5
"""Share of the tasks that use an administrator's tool which a customer asks for (to be refused)."""
CONFIRM_SHARE = 0.5
"""Share of the tasks that use a tool that cannot be undone whose request does not confirm it."""


_SURE = re.compile(r"\b(go ahead|i'm sure|i am sure)\b", re.IGNORECASE)
"""Words of a request that already confirm its change."""


def _draw(task_id: str, what: str) -> float:
    digest = hashlib.blake2b(f"policy/{what}/{task_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _instead(task: Task, expects: str, answer: str, user: str) -> Task:
    """The task with no call to make: the request's calls declined, nothing may change."""
    return msgspec.structs.replace(
        task,
        calls=[],
        outputs=[],
        user=user,
        outcome=Outcome(
            mutates=False,
            expects=expects,  # type: ignore[arg-type]
            declined=list(task.calls),
            answer=answer,
        ),
    )


def _first(task: Task, table: dict[str, str]) -> str:
    """What the first of the task's calls found in ``table`` does, in words ("" when none is)."""
    return next((table[c.name] for c in task.calls if c.name in table), "")


def under_policy(env: EnvSpec, task: Task) -> Task:
    """``task`` under ``env``'s domain policy (see the module docstring); as it is when the
    environment has no policy or the task is a workspace task."""
    policy: DomainPolicy | None = env.policy
    if policy is None or task.outcome.check:
        return task
    task = msgspec.structs.replace(task, policy=policy.text, user="customer")
    if admin := _first(task, policy.administrator):
        if _draw(task.id, "refuse") < REFUSE_SHARE:
            return _instead(task, "refusal", refusal_answer(admin), "customer")
        task = msgspec.structs.replace(task, user="administrator")
    confirm = _first(task, policy.confirm)
    if not confirm or _SURE.search(task.request):  # nothing to undo, or already confirmed
        return task
    if _draw(task.id, "confirm") < CONFIRM_SHARE:
        return _instead(task, "confirmation", confirmation_question(confirm), task.user)
    return msgspec.structs.replace(task, request=f"{task.request.rstrip()} {CONFIRMED}")
