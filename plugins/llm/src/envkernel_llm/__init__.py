"""envkernel-llm: the ``llm`` synthesizer — environments written by a model, tested in a sandbox and
repaired.

From a brief (``--source brief:'...'`` or ``brief:FILE.toml``) or from authentic documentation
(``--source doc:API.md``, ``.html``, a CLI manual, a ``.sql`` schema) it asks any
OpenAI-compatible model (through :class:`envkernel_kit.chat.ChatClient`, the ``openai`` client),
in one conversation:

1. the **state schema** and the tool interface (``seed.sql``, ``tools.json``), with the two
   nearest archetype templates (:mod:`envkernel_llm.templates`) as few-shot examples;
2. the **tool code** (``env.py``: plain functions over SQLite, the shape the sandbox executor
   loads for code environments);
3. **test scenarios** (``scenarios.json``, :mod:`envkernel_llm.scenarios`).

The candidate then runs in a sandbox (``ctx.sandbox``: the process or podman runner; the model's
code never runs in this process, it is only parsed). The failures (load errors, failed scenarios,
malformed or cut-off replies, calls the sandbox blocked) are summarised and sent back, and the
model revises its files, for at most ``max_rounds`` rounds. An environment whose scenarios pass
goes on to the verifier like any other; one that still fails is returned with
``provenance.rejected`` set, which the kernel records as ``env.rejected`` (reasons:
``malformed_reply``, ``truncated_reply``, ``load_failed``, ``scenarios_failed``,
``sandbox_violation``, ``model_error``).

Every environment records its provenance (:class:`envkernel_schemas.Provenance`): the brief or the
document (path and hash), the model, the prompts' hashes, the templates used, each round's
failures, tokens and seconds; and its overlap with named benchmarks' tool lists
(:mod:`envkernel_llm.overlap`: BFCL multi-turn backends, τ²-bench domains). Above
``overlap_threshold`` it is flagged (``overlap:<benchmark>``) in ``env.json`` and in the run's
``summary.json`` (``synthesis.<kind>.flagged``).
"""

from __future__ import annotations

import inspect
import json
import re
import time
from importlib import metadata
from typing import Any, ClassVar

import msgspec
import structlog

from envkernel.hookspecs import hookimpl
from envkernel_kit.chat import ChatClient, ChatSettings, UsesChat
from envkernel_schemas import CodeBehaviour, EnvRequested, EnvSpec, Provenance, VerifyReport

from . import prompts
from .overlap import overlap
from .reply import Candidate, Draft, ReplyProblem, parse_files
from .scenarios import blocked_kind, run_scenarios
from .sources import Source, SourceError, load_source
from .templates import nearest

__all__ = ["LLMSettings", "LLMSynthesizer", "Settings", "register_synthesizers"]

log = structlog.get_logger("envkernel.llm")


class LLMSettings(ChatSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``llm`` synthesizer (section ``[llm]``): the model server's
    (:class:`envkernel_kit.chat.ChatSettings`) and the synthesis's own.

    ``base_url``, ``api_key`` and ``model`` also come from ``ENVKERNEL_LLM_BASE_URL``,
    ``ENVKERNEL_LLM_API_KEY`` and ``ENVKERNEL_LLM_MODEL``, and when those are empty from
    ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL``.
    """

    __env__: ClassVar[dict[str, str]] = {
        "base_url": "ENVKERNEL_LLM_BASE_URL",
        "api_key": "ENVKERNEL_LLM_API_KEY",
        "model": "ENVKERNEL_LLM_MODEL",
    }
    section: ClassVar[str] = "llm"
    who: ClassVar[str] = "the llm synthesizer"

    request_timeout: float = 180.0
    """Seconds one HTTP attempt may take (a whole file is written in one reply)."""
    max_retries: int = 2
    """Retries of one model call on 408/409/429/5xx, timeouts and connection errors."""
    concurrency: int = 4
    """Model requests in flight per process at most."""
    max_rounds: int = 4
    """Write-test rounds at most (the first one plus up to ``max_rounds - 1`` repairs)."""
    examples: int = 2
    """Archetype templates shown as few-shot examples."""
    temperature: float = 0.2
    """Sampling temperature."""
    max_tokens: int | None = 4096
    """Completion tokens per reply at most; not sent when unset."""
    call_timeout: float = 5.0
    """Seconds one tool call of a scenario may take in the sandbox."""
    overlap_threshold: float = 0.5
    """Flag an environment when at least this share of its tools match one benchmark's tools."""
    max_source_chars: int = 16000
    """Characters of a document put in the prompt at most (the rest is cut, and the cut
    recorded)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        if not 0 < self.overlap_threshold <= 1:
            raise ValueError("overlap_threshold must be in (0, 1]")


Settings = LLMSettings
"""Alias: the settings of this plugin's component."""


def _version() -> str:
    try:
        return metadata.version("envkernel-llm")
    except metadata.PackageNotFoundError:
        return "0"


class _Conversation:
    """One environment's conversation with the model, with its token and prompt accounting."""

    def __init__(self, client: ChatClient, settings: LLMSettings, model: str) -> None:
        self.client, self.s, self.model = client, settings, model
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": prompts.SYSTEM}]
        self.tokens = 0
        self.calls = 0
        self.seconds = 0.0
        """Seconds spent waiting for the model."""
        self.request_hashes: list[str] = []

    async def ask(self, content: str) -> tuple[str, bool]:
        """Send one user message; (the reply's text, whether it was cut by the token limit).
        Raises :class:`ReplyProblem` (``model_error``) when the server gives no usable answer."""
        self.messages.append({"role": "user", "content": content})
        payload = self.s.body(
            self.model, self.messages, temperature=self.s.temperature, max_tokens=self.s.max_tokens
        )
        self.request_hashes.append(prompts.sha256(json.dumps(self.messages, sort_keys=True))[:16])
        self.calls += 1
        t0 = time.perf_counter()
        res = await self.client.complete(payload)
        self.seconds += time.perf_counter() - t0
        if not res.ok:
            raise ReplyProblem(
                "model_error", f"the model gave no answer ({res.condition}): {res.error}"
            )
        body = res.body or {}
        usage = body.get("usage") or {}
        self.tokens += int(usage.get("prompt_tokens") or 0) + int(
            usage.get("completion_tokens") or 0
        )
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ReplyProblem(
                "model_error", f"the server's answer has no choices[0].message: {str(body)[:200]}"
            ) from None
        if not isinstance(text, str):
            text = str(text)
        self.messages.append({"role": "assistant", "content": text})
        return text, choice.get("finish_reason") == "length"


def _mismatch(cand: Candidate) -> list[str]:
    out = []
    for tool in cand.tools:
        params = cand.findings.functions.get(tool.name)
        if params is None:
            out.append(
                f"tools.json declares {tool.name!r} but env.py defines no function "
                f"{tool.name}(env, ...)"
            )
            continue
        if not params or params[0] != "env":
            out.append(
                f"env.py's {tool.name} must take env as its first parameter: def "
                f"{tool.name}(env, ...)"
            )
        declared = set((tool.parameters or {}).get("properties", {}))
        missing = sorted(declared - set(params[1:]))
        if missing and "kwargs" not in params:
            out.append(
                f"env.py's {tool.name} lacks parameter(s) {', '.join(missing)} that "
                "tools.json declares"
            )
    return out


def _env_id(source: Source, index: int) -> str:
    return f"llm-{source.domain}-{index}"


class LLMSynthesizer(UsesChat):
    """Synthesizer ``llm``: writes an environment with a model, tests it in a sandbox, repairs
    it."""

    Settings = LLMSettings
    sources = ("brief", "doc")

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self.settings = settings or LLMSettings()
        self._client: ChatClient | None = None

    def _target(self) -> tuple[str, ChatClient]:
        """(model, chat client); a missing base URL or model is a ``ConfigError``."""
        model = self.settings.target()[1]
        return model, self.chat_client()

    async def synthesize(self, request: EnvRequested, ctx: Any) -> EnvSpec:
        """Write, test and repair one environment for ``request`` (see the module docstring)."""
        t0 = time.perf_counter()
        s = self.settings
        try:
            source = load_source(request.source_kind, request.source, max_chars=s.max_source_chars)
        except SourceError as exc:
            from envkernel.errors import ConfigError

            raise ConfigError(str(exc)) from None
        return await _Synthesis(self, request, ctx, source).run(t0)

    async def _first_draft(
        self, conv: _Conversation, draft: Draft, source: Source, examples: list[Any]
    ) -> None:
        intro = prompts.BRIEF_INTRO if source.kind == "brief" else prompts.DOC_INTRO
        shots = "\n\n".join(t.as_example() for t in examples)
        stages = [
            prompts.SCHEMA.format(source_intro=intro, source=source.text, examples=shots),
            prompts.CODE,
            prompts.SCENARIOS,
        ]
        problems: list[ReplyProblem] = []
        # a stage whose reply is unusable does not stop the next ones: the repair asks for what is
        # missing
        for stage in stages:
            text, cut = await conv.ask(stage)
            try:
                draft.update(parse_files(text, truncated=cut))
            except ReplyProblem as exc:
                problems.append(exc)
        if problems:
            missing = draft.missing()
            raise ReplyProblem(
                problems[0].kind,
                "; ".join(p.message for p in problems)
                + (f" (still missing: {', '.join(missing)})" if missing else ""),
            )

    def _spec(self, env_id: str, source: Source, cand: Candidate, model: str) -> EnvSpec:
        return EnvSpec(
            id=env_id,
            name=cand.name or source.domain.replace("-", " "),
            tools=cand.tools,
            behaviour=CodeBehaviour(source=cand.code),
            seed_sql=cand.seed_sql,
            domain=source.domain,
            description=cand.description or re.sub(r"\s+", " ", source.text)[:300],
            generated=cand.generated,
        )

    async def _run(self, ctx: Any, env: EnvSpec, cand: Candidate) -> tuple[Any, str]:
        """Run ``cand``'s scenarios in a fresh sandbox: (outcome, "") or (None, why it did not
        load)."""
        kw: dict[str, Any] = {}
        params = inspect.signature(ctx.sandbox).parameters
        if "fresh" in params:
            kw["fresh"] = True
        if "call_timeout" in params:
            kw["call_timeout"] = self.settings.call_timeout
        try:
            cm = ctx.sandbox(env, **kw)
            sb = await cm.__aenter__()
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if "load_failed" in text or "failed to load" in text or "seed_sql" in text:
                return None, text[-600:]
            raise
        try:
            return await run_scenarios(sb, cand.scenarios), ""
        finally:
            await cm.__aexit__(None, None, None)


class _Round:
    """What one round of writing and testing found."""

    def __init__(self) -> None:
        self.reason = ""
        self.failures: list[str] = []
        self.cand: Candidate | None = None
        self.outcome: Any = None


_REPLY_REASONS = {"truncated": "truncated_reply", "model_error": "model_error"}
"""A reply problem's kind -> the round's reason (else ``malformed_reply``)."""


def _reach_failures(cand: Candidate) -> list[str]:
    """What the candidate's env.py reaches for beyond env.db (the sandbox blocks it)."""
    return [
        f"env.py reaches for {what} ({', '.join(sorted(set(found)))}); "
        "environments may use env.db only, and the sandbox blocks the rest"
        for what, found in (
            ("the network", cand.findings.network),
            ("host files or processes", cand.findings.host),
        )
        if found
    ]


class _Synthesis:
    """One environment being written, tested and repaired by :class:`LLMSynthesizer`."""

    def __init__(
        self, synth: LLMSynthesizer, request: EnvRequested, ctx: Any, source: Source
    ) -> None:
        self.synth, self.request, self.ctx, self.source = synth, request, ctx, source
        self.s = synth.settings
        self.model, client = synth._target()
        self.examples = nearest(source.text, self.s.examples)
        self.conv = _Conversation(client, self.s, self.model)
        self.env_id = _env_id(source, request.index)
        self.draft = Draft()
        self.rounds: list[dict[str, Any]] = []
        self.blocked: list[str] = []
        self.checks = 0
        self.logger = log.bind(env=self.env_id, model=self.model)

    async def run(self, t0: float) -> EnvSpec:
        """The rounds, until one passes, the model fails or ``max_rounds`` are used; the
        environment (rejected, if the last round failed)."""
        last = _Round()
        for rnd in range(1, self.s.max_rounds + 1):
            r0, tokens0 = time.perf_counter(), self.conv.tokens
            last = await self._round(rnd)
            self._record(rnd, last, r0, tokens0)
            if not last.failures or last.reason == "model_error":
                break
        return self._env(last, round(time.perf_counter() - t0, 3))

    async def _round(self, rnd: int) -> _Round:
        """Write (round 1) or repair the files, then test them."""
        r = _Round()
        try:
            await self._write(rnd)
            r.cand = Candidate.from_draft(self.draft)
            await self._test(r, r.cand)
        except ReplyProblem as exc:
            r.reason = _REPLY_REASONS.get(exc.kind, "malformed_reply")
            r.failures = [exc.message]
        return r

    async def _write(self, rnd: int) -> None:
        if rnd == 1:
            await self.synth._first_draft(self.conv, self.draft, self.source, self.examples)
            return
        text, cut = await self.conv.ask(
            prompts.REPAIR.format(
                round=rnd,
                rounds=self.s.max_rounds,
                failures="\n".join(f"- {f}" for f in self.rounds[-1]["failures"]),
            )
        )
        self.draft.update(parse_files(text, truncated=cut))

    async def _test(self, r: _Round, cand: Candidate) -> None:
        """Check the candidate's files agree and stay in bounds, and run its scenarios in the
        sandbox."""
        r.failures = _mismatch(cand) + _reach_failures(cand)
        env = self.synth._spec(self.env_id, self.source, cand, self.model)
        r.outcome, load_error = await self.synth._run(self.ctx, env, cand)
        if load_error:
            kind = blocked_kind(load_error)
            if kind:
                self.blocked.append(f"{kind}: loading env.py: {load_error[:200]}")
            r.failures.insert(0, f"the sandbox could not load the environment: {load_error}")
            r.reason = "load_failed"
            return
        outcome = r.outcome
        self.checks += outcome.calls
        self.blocked.extend(outcome.blocked)
        r.failures += outcome.failures
        uncovered = sorted({t.name for t in cand.tools} - outcome.covered)
        if uncovered and outcome.ok and not r.failures:
            self.logger.info("scenarios do not call every tool", uncovered=uncovered)
        if r.failures:
            blocked = cand.findings.network or cand.findings.host or outcome and outcome.blocked
            r.reason = "sandbox_violation" if blocked else "scenarios_failed"

    def _record(self, rnd: int, r: _Round, r0: float, tokens0: int) -> None:
        outcome = r.outcome
        self.rounds.append(
            {
                "round": rnd,
                "passed": not r.failures,
                "reason": r.reason,
                "failures": r.failures[:12],
                "scenarios": outcome.scenarios if outcome else 0,
                "scenarios_passed": outcome.passed if outcome else 0,
                "tokens": self.conv.tokens - tokens0,
                "seconds": round(time.perf_counter() - r0, 3),
            }
        )
        self.logger.info(
            "llm synthesis round",
            round=rnd,
            of=self.s.max_rounds,
            passed=not r.failures,
            reason=r.reason,
            failures=len(r.failures),
            tokens=self.conv.tokens - tokens0,
        )

    def _details(self, every: list[Any]) -> dict[str, Any]:
        """The provenance's details: the source, the prompts and requests, the rounds."""
        source, conv = self.source, self.conv
        return {
            source.kind if source.kind == "brief" else "document": source.text,
            "source": {
                "kind": source.kind,
                "path": source.path,
                "sha256": source.sha256,
                "format": source.format,
                "cut_chars": source.cut,
            },
            "prompt_hashes": prompts.prompt_hashes(),
            "request_hashes": conv.request_hashes,
            "model_calls": conv.calls,
            "model_seconds": round(conv.seconds, 3),
            "templates": [t.name for t in self.examples],
            "max_rounds": self.s.max_rounds,
            "rounds": self.rounds,
            "overlap": {o.benchmark: {"share": o.share, "tools": o.tools} for o in every[:5]},
            "overlap_threshold": self.s.overlap_threshold,
            "sandbox_blocked": self.blocked[:20],
        }

    def _provenance(self, last: _Round, seconds: float) -> Provenance:
        """Where the environment came from, with flags for overlap with a benchmark and for
        blocked reaches."""
        tool_names = [t.name for t in last.cand.tools] if last.cand else []
        every, flagged = overlap(tool_names, threshold=self.s.overlap_threshold)
        flags = [f"overlap:{o.benchmark}" for o in flagged]
        kinds = sorted({b.split(":")[0] for b in self.blocked})
        flags += [f"sandbox_blocked:{k}" for k in kinds]
        prov = Provenance(
            source_kind=self.request.source_kind,
            source=self.source.path or self.source.text[:200],
            plugin="llm",
            plugin_version=_version(),
            seed=self.request.seed,
            model=self.model,
            rounds=len(self.rounds),
            tokens=self.conv.tokens,
            seconds=seconds,
            rejected=last.reason if last.failures else "",
            flags=flags,
            details=self._details(every),
        )
        self.logger.info(
            "llm environment",
            verdict="rejected" if last.failures else "written",
            rounds=len(self.rounds),
            tokens=self.conv.tokens,
            seconds=seconds,
            flags=flags,
        )
        return prov

    def _env(self, last: _Round, seconds: float) -> EnvSpec:
        """The environment of the last round (rejected with its failures, if it has any)."""
        prov = self._provenance(last, seconds)
        failures, source = last.failures, self.source
        if last.cand is None:
            return EnvSpec(
                id=self.env_id,
                name=source.domain,
                tools=[],
                behaviour=CodeBehaviour(source=self.draft.files.get("env.py", "")),
                seed_sql=self.draft.files.get("seed.sql", ""),
                domain=source.domain,
                provenance=prov,
                report=VerifyReport(verifier="llm", kept=False, failures=failures),
            )
        env = msgspec.structs.replace(
            self.synth._spec(self.env_id, source, last.cand, self.model), provenance=prov
        )
        if failures:
            env = msgspec.structs.replace(
                env,
                report=VerifyReport(
                    verifier="llm", kept=False, checks=self.checks, failures=failures
                ),
            )
        return env


@hookimpl
def register_synthesizers(register: Any) -> None:
    """Register the ``llm`` synthesizer."""
    register("llm", LLMSynthesizer)
