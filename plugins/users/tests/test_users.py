"""The users who talk: the deterministic simulated user, the LLM user against a scripted
OpenAI-compatible server (good, invented, leaked and failed replies)."""

from __future__ import annotations

import asyncio
from typing import Any

from envkernel_kit.scripted import ScriptedServer, StepContext, completion, error
from envkernel_kit.users import user_for, user_turn
from envkernel_schemas import Outcome, Task
from envkernel_users import DONE, ENOUGH, LLMUser, LLMUserSettings, SimulatedUser

HIDDEN = ["Only the ones with a total over 100.", "And only the pending ones."]
TASK = Task(
    id="t1",
    env_id="toyshop",
    request="I'm Ann Lee. Please cancel some of my orders.",
    calls=[],
    hidden=HIDDEN,
    outcome=Outcome(mutates=True),
    persona={"name": "Ann Lee", "role": "an accountant", "tone": "neutral", "motive": "books"},
)


def _convo(*turns: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "s"}, {"role": "user", "content": TASK.request}] + [
        {"role": r, "content": c} for r, c in turns
    ]


def test_the_simulated_user_answers_from_the_hidden_facts() -> None:
    u = SimulatedUser()
    # a question about the status gets the fact about the status, though it is the second one
    assert (
        u.reply(TASK, _convo(("assistant", "Do you mean only the pending orders?")), None)
        == HIDDEN[1]
    )
    # a question about nothing in particular gets the next fact
    assert u.reply(TASK, _convo(("assistant", "Which ones?")), None) == HIDDEN[0]
    # acting without asking: the user says what it held back
    assert u.reply(TASK, _convo(("assistant", "I cancelled all your orders.")), None) == HIDDEN[0]
    both = _convo(
        ("assistant", "Which ones?"),
        ("user", HIDDEN[0]),
        ("assistant", "Any others?"),
        ("user", HIDDEN[1]),
    )
    assert (
        u.reply(TASK, both + [{"role": "assistant", "content": "Anything else?"}], None) == ENOUGH
    )
    assert (
        u.reply(TASK, both + [{"role": "assistant", "content": "Done: I cancelled order 3."}], None)
        is None
    )
    assert u.reply(TASK, _convo(("assistant", "Sorry, what is your name?")), None) == "I'm Ann Lee."
    assert u.reply(TASK, _convo(), None) is None  # the agent has not spoken: nothing to answer


def test_the_llm_user_speaks_through_the_model_and_falls_back_when_it_invents_or_fails() -> None:
    replies = [
        completion("Only the ones with a total over 100, please."),
        completion("Only the ones with a total over 900."),
        completion(f"Thanks! {DONE}"),
        error(500),
        completion("Only the ones with a total over 100."),
    ]
    with ScriptedServer(replies) as server:
        u = LLMUser(LLMUserSettings(base_url=server.base_url, model="user-model", max_retries=0))
        ctx = StepContext("openai")
        asked = _convo(("assistant", "Which of your orders do you mean?"))

        async def go() -> list[str | None]:
            out = [await u.reply(TASK, asked, ctx) for _ in range(4)]
            out.append(
                await u.reply(TASK, _convo(), ctx)
            )  # before the agent said anything: a held-back fact is a leak
            await u.aclose()
            return out

        got = asyncio.run(go())
        first = server.requests[0]
    assert got[0] == "Only the ones with a total over 100, please."  # the model's words
    assert (
        got[1] == HIDDEN[0]
    )  # 900 is a number the task never said: the simulated user speaks instead
    assert got[2] is None  # DONE ends the conversation
    assert got[3] == HIDDEN[0]  # the server failed: the simulated user speaks
    assert got[4] is None  # a leak is refused, and the simulated user has nothing to answer yet
    assert u.stats == {"model": 1, "fallback": 2, "leaked": 1, "invented": 1}
    # the model plays the user: the held-back facts in its system prompt, the agent's words as its
    # input
    assert first["model"] == "user-model" and all(
        h in first["messages"][0]["content"] for h in HIDDEN
    )
    assert first["messages"][1] == {"role": "assistant", "content": TASK.request}
    assert first["messages"][-1] == {"role": "user", "content": "Which of your orders do you mean?"}


def test_no_user_component_means_one_turn() -> None:
    ctx = StepContext("openai")
    assert user_for(ctx) is None
    assert asyncio.run(user_turn(None, TASK, _convo(("assistant", "Which?")), ctx)) is None


def test_register_users_registers_both_as_user_components() -> None:
    from envkernel.roles import missing_methods
    from envkernel_users import register_users

    got: dict[str, Any] = {}
    register_users(lambda name, factory: got.setdefault(name, factory))
    assert got == {"simulated": SimulatedUser, "llm-user": LLMUser}
    assert all(missing_methods("user", f) == [] for f in got.values())
