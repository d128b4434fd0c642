"""envkernel-users: users who talk (the ``user`` role).

A task may hold some of what the user wants back (``Task.hidden``: ``Only the ones with more than
3 nights.``). A user component plays the person over several turns; a policy asks it for each
user turn (:mod:`envkernel_kit.users`), and the turns land in the trajectory's messages, so
rewards, traces and SFT rows carry the whole conversation.

- ``simulated``: deterministic. When the agent asks a question, it answers with the held-back
  fact the question is about (the most words in common), else the next one; when the agent acts
  or answers without asking while facts are still held back, it says the next one (``the user
  corrects``); a question about who is speaking is answered from ``Task.persona``; once all is
  said, a further question gets ``That's everything`` and a final answer ends the conversation.
- ``llm-user``: any OpenAI-compatible model through :class:`envkernel_kit.chat.ChatClient` plays the
  user from the task (the request, the held-back facts, the persona). A reply is checked: one that
  says a held-back fact before the agent asked or acted (a leak), or a number the task never
  said (an invented fact), is replaced by the simulated user's; ``###DONE###`` ends the
  conversation. A model that fails falls back to the
  simulated user, so a conversation never breaks on the user.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from envkernel.hookspecs import hookimpl
from envkernel_kit.chat import ChatSettings, UsesChat
from envkernel_kit.users import last_assistant, revealed
from envkernel_schemas import Task

__all__ = ["DONE", "LLMUser", "LLMUserSettings", "SimulatedUser", "register_users"]

DONE = "###DONE###"
"""What the LLM user says when its goal is met (the conversation ends)."""

ENOUGH = "That's everything I need; please go ahead."
"""The simulated user's answer to a question once it has said everything."""

_WORD = re.compile(r"[a-z0-9]+")
_NUM = re.compile(r"\d+(?:\.\d+)?")
_STOP = frozenset(
    "the a an of to and or is are be with for in on my me you i it that this which do does "
    "what only ones one".split()
)
_WHO = re.compile(r"\b(your name|who are you|who is asking|on whose behalf)\b", re.I)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _acted(messages: list[dict[str, Any]]) -> bool:
    """True when the agent called a tool or answered since the user last spoke."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return False
        if m.get("role") == "tool" or (
            m.get("role") == "assistant" and (m.get("tool_calls") or m.get("content"))
        ):
            return True
    return False


class SimulatedUser:
    """The ``simulated`` user: deterministic, answers from the task's hidden facts (see the module
    docstring)."""

    def reply(self, task: Task, messages: list[dict[str, Any]], ctx: Any) -> str | None:
        """The next user turn, or None when there is nothing more to say."""
        last = last_assistant(messages)
        said = revealed(task, messages)
        pending = [h for h in task.hidden if h not in said]
        asked = "?" in last
        if asked and _WHO.search(last) and task.persona.get("name"):
            return f"I'm {task.persona['name']}."
        if pending:
            if asked:
                ask = _words(last)
                return max(pending, key=lambda h: (len(_words(h) & ask), -pending.index(h)))
            return pending[0] if _acted(messages) else None
        return ENOUGH if asked else None


class LLMUserSettings(ChatSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``llm-user`` user: the model server's
    (:class:`envkernel_kit.chat.ChatSettings`; ``base_url``, ``api_key`` and ``model`` also from
    ``OPENAI_*``) and the user's sampling."""

    section: ClassVar[str] = "llm-user"
    who: ClassVar[str] = "the llm-user user"

    temperature: float = 0.7
    """Sampling temperature of the user's replies."""
    max_tokens: int = 200
    """Tokens per user turn at most."""


PROMPT = """You are role-playing a user who talks with an assistant that can use tools. Stay in \
character and be brief.
{who}Your goal (what you want done): {request}
What you hold back at first, and say only when the assistant asks about it or acts without it:
{hidden}
Rules: never invent other facts; answer a question in one or two sentences; when your goal is \
fully met,
reply with exactly {done}."""


class LLMUser(UsesChat):
    """The ``llm-user`` user: an OpenAI-compatible model plays the person behind the task."""

    Settings = LLMUserSettings

    def __init__(self, settings: LLMUserSettings | None = None) -> None:
        self.settings = settings or LLMUserSettings()
        self._client = None
        self.fallback = SimulatedUser()
        self.stats = {"model": 0, "fallback": 0, "leaked": 0, "invented": 0}
        """Turns the model spoke; turns the simulated user spoke instead (the model failed, or made
        a number up: ``invented``); replies refused for saying a held-back fact before the agent
        asked or acted (``leaked``)."""

    def prompt(self, task: Task) -> str:
        """The system prompt that sets the model up as this task's user."""
        p = task.persona
        who = (
            f"You are {p.get('name') or 'the user'}, {p.get('role')}; {p.get('motive')}.\n"
            if p.get("role")
            else ""
        )
        hidden = "\n".join(f"- {h}" for h in task.hidden) or "- (nothing)"
        return PROMPT.format(who=who, request=task.request, hidden=hidden, done=DONE)

    def _conversation(self, task: Task, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation from the user's side: the assistant's words are the model's input, the
        user's its own turns, after the user's system prompt."""
        convo = [{"role": "system", "content": self.prompt(task)}]
        for m in messages:
            content = m.get("content")
            if m.get("role") == "assistant" and isinstance(content, str) and content:
                convo.append({"role": "user", "content": content})
            elif m.get("role") == "user" and isinstance(content, str):
                convo.append({"role": "assistant", "content": content})
        if convo[-1]["role"] != "user":
            convo.append({"role": "user", "content": "(The assistant is waiting for you.)"})
        return convo

    @staticmethod
    def _refused(task: Task, messages: list[dict[str, Any]], text: str) -> str:
        """Why the model's turn is not said (the stat it counts in): ``invented`` when it states a
        number the task never said (a fact the user made up), ``leaked`` when it says a held-back
        fact before the agent asked or acted; empty when it may be said."""
        known = set(_NUM.findall(" ".join([task.request, *task.hidden, *task.persona.values()])))
        if set(_NUM.findall(text)) - known:
            return "invented"
        said = revealed(task, messages)
        early = [
            h
            for h in task.hidden
            if h not in said and _words(h) - _words(task.request) <= _words(text)
        ]
        if early and "?" not in last_assistant(messages) and not _acted(messages):
            return "leaked"
        return ""

    async def reply(self, task: Task, messages: list[dict[str, Any]], ctx: Any) -> str | None:
        """The model's next user turn (the simulated user's when the model fails or leaks), or None
        when done."""
        s = self.settings
        res = await self.chat_client().complete(
            s.body(
                s.resolved("model"),
                self._conversation(task, messages),
                temperature=s.temperature,
                max_tokens=s.max_tokens,
            )
        )
        text = _content(res.body) if res.ok else ""
        if not text:
            self.stats["fallback"] += 1
            ctx.log.warning(
                "the llm user did not answer; the simulated user speaks",
                task=task.id,
                error=res.error or "no content",
            )
            return self.fallback.reply(task, messages, ctx)
        if DONE in text:
            return None
        why = self._refused(task, messages, text)
        if why:
            self.stats[why] += 1
            if why == "invented":
                self.stats["fallback"] += 1
            return self.fallback.reply(task, messages, ctx)
        self.stats["model"] += 1
        return text


def _content(body: Any) -> str:
    """The text of a chat completion's first choice ("" when it has none)."""
    try:
        return str((body or {})["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError):
        return ""


@hookimpl
def register_users(register: Any) -> None:
    """Register the ``simulated`` and ``llm-user`` users (not ``llm``: that is the llm plugin's
    synthesizer)."""
    register("simulated", SimulatedUser)
    register("llm-user", LLMUser)
