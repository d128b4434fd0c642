"""The gate's de-duplication key of a task (``envkernel.stages``): two tasks with the same key are
one task.

The key holds the environment, the chain's signature, its calls with their grounded arguments and
what is asked: the answer's facts, rows, absent values and whether order matters. It is
order-insensitive exactly where the answer check (``envkernel_kit.answers``) is: facts and absent
values are each looked for anywhere in the answer, a row's values anywhere after its label, and the
rows in any order unless ``answer_ordered``. So an "all X" answer listed in another order is the
same task, while an ordered one ("the three newest, newest first") listed in another order is not.
The calls stay in their order (a chain is a sequence) and each row's label stays first.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["task_key"]


def task_key(task: Any) -> bytes:
    """A 16-byte digest of the environment, chain signature, grounded arguments and what is asked
    (see the module docstring)."""
    o, calls = task.outcome, [[c.name, c.arguments] for c in task.calls]
    rows = [[r[0], *sorted(r[1:])] if r else [] for r in o.answer_rows]
    answer = [
        sorted(o.answer_facts),
        rows if o.answer_ordered else sorted(rows),
        sorted(o.answer_absent),
        o.answer_ordered,
    ]
    expects = getattr(o, "expects", "")
    if expects:  # a refusal or confirmation makes no call: what it declines tells two apart
        answer += [expects, [[c.name, c.arguments] for c in getattr(o, "declined", [])]]
    return hashlib.blake2b(
        json.dumps(
            [task.env_id, task.signature, calls, *answer], sort_keys=True, default=str
        ).encode(),
        digest_size=16,
    ).digest()
