"""envkernel-judge: the ``judge`` reward model — an LLM judge with a rubric and a parsed verdict.

The judge model gets the rubric, the user's request, what a correct rollout achieves (the
reference chain and the answer facts, unless ``show_reference`` is off), the agent's transcript
(tool calls and results, cut to ``max_transcript_chars``) and its final answer, and must reply
with one JSON object::

    {"score": 0.0-1.0, "verdict": "complete" | "incomplete" | "agent_error", "reason": "..."}

(the verdicts of Agent World Model's judge, less ``server_error``, which envkernel records on
the trajectory instead). The reply is parsed leniently (code fences and prose around the object
are ignored) and validated strictly (a number in [0, 1], a known verdict). An unparsable reply is
asked again up to ``parse_attempts`` times in all.

Small local servers' habits are coped with: ``response_format`` refused (HTTP 400/422/500/501
on its first use) is remembered per server and left out from then on; an HTML-escaped reply is
decoded; a verdict sent as a tool call's arguments is read.

**A judge failure is never a silent 0.** When the judge cannot be reached or its reply cannot be
parsed, the Reward has ``error`` set, ``score`` 0, and a reason that says the judge failed and
why. HTTP calls go through :class:`envkernel_kit.chat.ChatClient`: one retry layer, explicit
timeouts, the API key kept out of every message.

Settings come from ``[judge]`` or ``ENVKERNEL_JUDGE_BASE_URL`` / ``ENVKERNEL_JUDGE_API_KEY`` /
``ENVKERNEL_JUDGE_MODEL``; any of the three left empty falls back to ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` / ``OPENAI_MODEL``, so one local server can play policy and judge.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, ClassVar

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.chat import ChatClient, ChatSettings, UsesChat
from envkernel_kit.grading import grade, needs_sandbox
from envkernel_kit.lenient import Refusals, looks_refused, unescape_value
from envkernel_kit.workspace import check_meta, script_reward
from envkernel_schemas import Reward, Task, Trajectory

__all__ = [
    "DEFAULT_RUBRIC",
    "VERDICTS",
    "Judge",
    "JudgeSettings",
    "Settings",
    "Verdict",
    "parse_verdict",
    "register_reward_models",
    "transcript",
]

VERDICTS = ("complete", "incomplete", "agent_error")
"""The verdicts a judge may give."""

DEFAULT_RUBRIC = """You grade an AI agent that used tools to carry out a user's request in a \
simulated environment.
Judge the outcome, not the style:
- complete (score 1.0): everything the user asked for was done (the right changes were made, or the
  answer states the facts asked for), and nothing the user did not ask for was changed.
- incomplete (score between 0.0 and 0.9): some of it was done; give partial credit in proportion to
  how much of the request is fulfilled. Doing nothing, refusing, or only asking questions scores 0.
- agent_error (score 0.0): the agent did something harmful or wrong: changed the wrong records, made
  changes the user did not ask for, or claimed success for work it did not do.
The reference solution shows one correct way; other ways that reach the same outcome are equally \
good.
Only trust what the tool results show, not what the agent claims."""
"""The default rubric (the system message's first part)."""

TASK_RUBRIC = """You grade an AI agent that used tools (files, a shell) in a workspace to \
carry out a user's request. Grade it by the task's own rubric below: score each of its criteria \
from what the transcript shows (only trust what the tool results show, not what the agent \
claims), and give as "score" the rubric's weighted total from 0.0 to 1.0 ("complete" when it is \
1.0, "agent_error" when the agent did harm or claimed work it did not do, else "incomplete").

# Rubric of the task"""
"""The system message's head for a task that brings its own rubric (PinchBench's ``## LLM Judge
Rubric``), followed by that rubric."""

JUDGED = ("hybrid", "llm_judge")
"""PinchBench grading types with a judge part."""

FORMAT = """Reply with one JSON object and nothing else:
{"score": <number from 0.0 to 1.0>, "verdict": "complete" | "incomplete" | "agent_error", \
"reason": "<one or two sentences>"}"""


class JudgeSettings(ChatSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``judge`` reward model (section ``[judge]``): the model server's
    (:class:`envkernel_kit.chat.ChatSettings`) and the judging's own."""

    __env__: ClassVar[dict[str, str]] = {
        "base_url": "ENVKERNEL_JUDGE_BASE_URL",
        "api_key": "ENVKERNEL_JUDGE_API_KEY",
        "model": "ENVKERNEL_JUDGE_MODEL",
    }
    section: ClassVar[str] = "judge"
    who: ClassVar[str] = "the judge"

    concurrency: int = 16
    """Judge calls in flight per process at most."""
    rubric: str = DEFAULT_RUBRIC
    """How to grade (the reply format is always appended)."""
    temperature: float = 0.0
    """Sampling temperature of the judge."""
    max_tokens: int | None = 512
    """Completion tokens of a verdict at most; not sent when unset."""
    json_mode: bool = True
    """Send ``response_format: {"type": "json_object"}`` (turn off for servers that reject it)."""
    show_reference: bool = True
    """Show the judge the reference chain and the answer facts."""
    max_transcript_chars: int = 24000
    """Longest transcript shown; the middle of a longer one is cut."""
    parse_attempts: int = 2
    """Times to ask for a verdict when the reply cannot be parsed (1: never ask again)."""
    timeout: float = 180.0
    """Deadline of one whole scoring, retries included."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.parse_attempts < 1:
            raise ValueError("parse_attempts must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")


Settings = JudgeSettings
"""Alias: the settings of this plugin's component."""


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed verdict."""

    score: float
    verdict: str
    reason: str = ""


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_verdict(text: str) -> Verdict:
    """Parse a judge's reply; raise ``ValueError`` saying what is wrong with it. HTML-escaped
    replies (``{&quot;score&quot;: 1, ...}``, as llama.cpp's server sends) are decoded first."""
    s = _FENCE.sub("", unescape_value((text or "").strip()))
    try:
        data = json.loads(s)
    except ValueError:
        start, end = s.find("{"), s.rfind("}")
        if start < 0 or end <= start:
            raise ValueError(f"no JSON object in the reply: {text[:200]!r}") from None
        try:
            data = json.loads(s[start : end + 1])
        except ValueError as exc:
            raise ValueError(
                f"the JSON object in the reply does not parse ({exc}): {text[:200]!r}"
            ) from None
    if not isinstance(data, dict):
        raise ValueError(f"the reply is JSON but not an object: {text[:200]!r}")
    raw_score = data.get("score")
    if isinstance(raw_score, str):
        try:
            raw_score = float(raw_score)
        except ValueError:
            pass
    if (
        isinstance(raw_score, bool)
        or not isinstance(raw_score, (int, float))
        or not math.isfinite(raw_score)
    ):
        raise ValueError(f"'score' must be a number from 0 to 1, got {data.get('score')!r}")
    if not 0.0 <= raw_score <= 1.0:
        raise ValueError(f"'score' must be from 0 to 1, got {raw_score}")
    verdict = str(data.get("verdict", "")).strip().lower().replace(" ", "_").replace("-", "_")
    if verdict not in VERDICTS:
        raise ValueError(
            f"'verdict' must be one of {', '.join(VERDICTS)}, got {data.get('verdict')!r}"
        )
    reason = data.get("reason", "")
    return Verdict(
        score=float(raw_score),
        verdict=verdict,
        reason=reason if isinstance(reason, str) else json.dumps(reason),
    )


def _cut(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters cut] …\n{text[-half:]}"


def transcript(trajectory: Trajectory, limit: int = 24000, per_message: int = 2000) -> str:
    """The rollout as text: each assistant tool call and each tool result on its own line."""
    lines = []
    for m in trajectory.messages:
        role = m.get("role")
        if role == "system":
            continue
        content = (
            m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        )
        if role == "assistant":
            if content:
                lines.append(f"[assistant] {_cut(content, per_message)}")
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                lines.append(
                    "[assistant calls] "
                    f"{fn.get('name')}({_cut(str(fn.get('arguments', '')), per_message)})  "
                    f"id={tc.get('id')}"
                )
        elif role == "tool":
            lines.append(
                f"[tool result id={m.get('tool_call_id')}] {_cut(content or '', per_message)}"
            )
        else:
            lines.append(f"[{role}] {_cut(content or '', per_message)}")
    if trajectory.termination != "answer":
        lines.append(
            "[rollout ended: "
            f"{trajectory.termination}{': ' + trajectory.error if trajectory.error else ''}]"
        )
    return _cut("\n".join(lines), limit)


class Judge(UsesChat):
    """The ``judge`` reward model (see the module docstring)."""

    Settings = JudgeSettings

    concurrency: ClassVar[int] = 256
    """Scorings in flight per process (read by the kernel's router)."""

    def __init__(self, settings: JudgeSettings | None = None) -> None:
        self.settings = settings or JudgeSettings()
        self._client: ChatClient | None = None
        self.refusals = Refusals()  # whether each server takes response_format

    @property
    def client(self) -> ChatClient:
        """The chat client (made on first use)."""
        return self.chat_client()

    def messages(
        self, task: Task, trajectory: Trajectory, rubric: str = ""
    ) -> list[dict[str, Any]]:
        """The judge's conversation for one rollout. With the task's own ``rubric`` (a PinchBench
        file's), the judge grades by that rubric and sees only the request, the agent's transcript
        and its final answer: nothing of the task's grader (its ``grade()`` code, its expected
        values) nor a reference."""
        s = self.settings
        parts = [f"## User request\n{task.request}"]
        if rubric:
            system = f"{TASK_RUBRIC}\n\n{rubric.strip()}"
        else:
            system = s.rubric.strip()
        if s.show_reference and not rubric:
            ref = "\n".join(
                f"{i + 1}. {c.name}({json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)})"
                for i, c in enumerate(task.calls)
            )
            parts.append(f"## Reference solution (tool calls)\n{ref or '(none)'}")
            if task.outcome.answer_facts:
                parts.append(
                    "## Facts a correct answer states\n"
                    + "\n".join(f"- {f}" for f in task.outcome.answer_facts)
                )
            parts.append(
                "## Kind of task\n"
                + (
                    "it changes the environment's state"
                    if task.outcome.mutates
                    else "read-only: it asks for information"
                )
            )
        parts.append(f"## Agent transcript\n{transcript(trajectory, s.max_transcript_chars)}")
        parts.append(f"## Agent's final answer\n{trajectory.final_answer or '(none)'}")
        return [
            {"role": "system", "content": f"{system}\n\n{FORMAT}"},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    def _failed(self, why: str, model: str) -> Reward:
        msg = f"judge failed: {why}"
        return Reward(
            score=0.0,
            model=model,
            tau=0.0,
            reasons=[f"{msg} (score 0 is not a verdict)"],
            error=msg,
        )

    async def score(self, task: Task, trajectory: Trajectory, ctx: Any) -> Reward:
        """Ask the judge; a failure is recorded on the Reward, never a silent 0. A task with a check
        script (a workspace task) is graded by its script instead, run in a sandbox, as every
        reward model grades it (:func:`envkernel_kit.grading.grade`): the judge is not asked."""
        name = ctx.component
        meta = check_meta(task.outcome.check)
        if meta.get("grading_type") in JUDGED:
            return await self.score_judged(ctx, task, trajectory, meta, name)
        reward = await grade(
            ctx, task, trajectory, in_process=lambda t, tr: self.ask(t, tr, name), model=name
        )
        if not needs_sandbox(task):
            return reward
        head = "judge: graded by the task's check script, not asked"
        return msgspec.structs.replace(reward, reasons=[head, *reward.reasons])

    async def score_judged(
        self, ctx: Any, task: Task, trajectory: Trajectory, meta: dict[str, Any], name: str
    ) -> Reward:
        """A PinchBench task with a judge part (``hybrid`` or ``llm_judge``): the judge grades the
        rollout by the file's rubric, and a hybrid's automated part (its ``grade()``, run in a
        sandbox) is combined with it by ``grading_weights``
        (:func:`envkernel_kit.workspace.script_reward`). A judge failure is the Reward's
        ``error``, never a silent 0."""
        verdict = await self.ask(task, trajectory, name, rubric=str(meta.get("rubric") or ""))
        if verdict.error:
            return verdict
        reward = await script_reward(ctx, task, trajectory, model=name, judge_score=verdict.score)
        if reward.error:
            return reward
        return msgspec.structs.replace(reward, reasons=[*verdict.reasons, *reward.reasons])

    async def ask(self, task: Task, trajectory: Trajectory, name: str, rubric: str = "") -> Reward:
        """Ask the judge model for a verdict on one rollout (reward model name ``name``), by the
        task's own ``rubric`` when given (see :meth:`messages`)."""
        s = self.settings
        deadline = time.monotonic() + s.timeout
        messages = self.messages(task, trajectory, rubric)
        last = ""
        for attempt in range(s.parse_attempts):
            res = await self._complete(messages, deadline)
            if not res.ok:
                return self._failed(f"{res.condition}: {res.error}", name)
            choice, content = _reply(res.body)
            if choice is None:
                last = "the judge's reply has no choices"
                continue
            try:
                v = parse_verdict(content)
            except ValueError as exc:
                last = self.client.scrub(str(exc))
                if choice.get("finish_reason") == "length":
                    last += " (the reply was cut at max_tokens)"
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": f"That reply could not be used: {last}\n{FORMAT}"},
                ]
                continue
            reasons = [f"judge: {v.verdict} ({v.score:.3g}): {v.reason}".rstrip(": ")]
            if attempt:
                reasons.append(f"judge: needed {attempt + 1} attempts to give a valid verdict")
            return Reward(score=v.score, model=name, outcome=v.score, tau=0.0, reasons=reasons)
        return self._failed(f"no valid verdict after {s.parse_attempts} attempt(s): {last}", name)

    async def _complete(self, messages: list[dict[str, Any]], deadline: float) -> Any:
        """One judge call. JSON mode is asked for unless the server is known to refuse it; on its
        first use a refusal (an HTTP status :func:`looks_refused` reads as one) is remembered per
        server and the call made again without it."""
        s, client = self.settings, self.client
        known = self.refusals.known(client.base_url, "response_format")
        json_mode = s.json_mode and known is not False
        body = s.body(
            s.target()[1],
            messages,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            **({"response_format": {"type": "json_object"}} if json_mode else {}),
        )
        probing = json_mode and known is None
        res = await client.complete(body, deadline=deadline, retries=0 if probing else None)
        if not probing:
            return res
        if res.ok:
            self.refusals.mark(client.base_url, "response_format", True)
            return res
        if res.condition == "http" and looks_refused(res.statuses[-1] if res.statuses else None):
            self.refusals.mark(client.base_url, "response_format", False)
            body.pop("response_format")  # this server refuses JSON mode: ask without it
        # (failed for another reason: the same call with the usual retries)
        return await client.complete(body, deadline=deadline)


def _reply(body: Any) -> tuple[dict[str, Any] | None, str]:
    """The first choice of a reply body and its text: the message's content or, when that is
    empty, the arguments of its first tool call (a verdict sent as a tool call)."""
    choices = (body or {}).get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        return None, ""
    msg = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = msg.get("content") if isinstance(msg.get("content"), str) else ""
    calls = msg.get("tool_calls")
    if not content.strip() and isinstance(calls, list) and calls and isinstance(calls[0], dict):
        content = str((calls[0].get("function") or {}).get("arguments") or "")
    return choice, content


@hookimpl
def register_reward_models(register: Any) -> None:
    """Register the ``judge`` reward model."""
    register("judge", Judge)
