"""Records: the data that events carry (environments, tasks, trajectories, rewards).

Every record is a frozen msgspec Struct. New fields get defaults and a field's type never
changes, so old events keep decoding (see msgspec's schema-evolution guide).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import msgspec

JSON = Any
"""Any JSON-compatible value."""

State = dict[str, list[dict[str, Any]]]
"""A dump of an environment's state: table name -> rows (each row a column -> value mapping)."""


class Record(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """Base of every record: frozen, keyword-only."""


class ToolSpec(Record, frozen=True, kw_only=True):
    """One tool of an environment, in OpenAI function form plus envkernel metadata."""

    name: str
    """Tool name, a valid identifier (OpenAI function name)."""
    description: str = ""
    """What the tool does, shown to the agent."""
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments object."""
    returns: dict[str, Any] = msgspec.field(default_factory=dict)
    """JSON Schema of a successful result (may be empty when unknown)."""
    mutates: bool = False
    """True when a successful call may change the state."""


class CodeBehaviour(Record, frozen=True, kw_only=True, tag="code", tag_field="kind"):
    """Behaviour as Python source (`env.py`): one plain function per tool over the state.

    Only ever executed by the sandboxed executor, never in the kernel's process.
    """

    source: str
    """Module source; defines ``def <tool>(env, **arguments)`` for each tool."""


class ModelBehaviour(Record, frozen=True, kw_only=True, tag="model", tag_field="kind"):
    """Behaviour as data: a resource model run by the engine that ships with the executor."""

    model: dict[str, Any]
    """The resource model (resources, operations); interpreted, never templated into code."""


class WorkspaceBehaviour(Record, frozen=True, kw_only=True, tag="workspace", tag_field="kind"):
    """Behaviour as a workspace: a folder tree the agent works on with claw-shaped tools (``read``,
    ``write``, ``edit``, ``apply_patch``, ``list``, ``glob``, ``grep``, ``exec``), plus optional
    SQLite-backed app tools. Run by ``workspace.py`` beside the executor (see docs/workspace.md)."""

    files: dict[str, str] = msgspec.field(default_factory=dict)
    """The initial tree: relative path -> text content (folders are made as needed)."""
    blobs: dict[str, str] = msgspec.field(default_factory=dict)
    """Binary files of the initial tree: relative path -> base64 content."""
    setup: list[str] = msgspec.field(default_factory=list)
    """Shell commands run in the workspace at load, in order, after the files are written (e.g.
    ``git init -q && git add -A && git commit -qm init``); git dates are frozen, so it is
    deterministic."""
    source: str = ""
    """Optional app code (the ``env.py`` contract) whose public functions become extra tools over
    ``env.db`` (tables from ``seed_sql``)."""


Behaviour = CodeBehaviour | ModelBehaviour | WorkspaceBehaviour
"""How an environment behaves: code, data, or a workspace."""


class Provenance(Record, frozen=True, kw_only=True):
    """Where an environment came from."""

    source_kind: str
    """The kind of source (``sample``, ``openapi``, ``brief``...)."""
    source: str = ""
    """The source itself: a path, a URL or a brief."""
    plugin: str = ""
    """The synthesizer component that made it."""
    plugin_version: str = ""
    """That plugin's distribution version."""
    seed: int = 0
    """The seed it was made with."""
    model: str = ""
    """The model that wrote it (LLM synthesizers; empty otherwise)."""
    rounds: int = 0
    """Write-test-repair rounds it took (1: right the first time; 0: not written by a model)."""
    tokens: int = 0
    """Model tokens spent on it (prompt plus completion, every round)."""
    seconds: float = 0.0
    """Wall time its synthesis took."""
    rejected: str = ""
    """Why its synthesizer gave up on it (e.g. ``scenarios_failed``); empty when it did not. The
    kernel turns such an environment into ``env.rejected`` with this reason, unverified."""
    flags: list[str] = msgspec.field(default_factory=list)
    """Findings a reviewer should see, e.g. ``overlap:tau2-bench:retail`` (decontamination)."""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    """Synthesizer-specific record: the brief or document, prompt hashes, per-round failures..."""


class VerifyReport(Record, frozen=True, kw_only=True):
    """What a verifier found when it executed an environment."""

    verifier: str
    """The verifier component."""
    kept: bool
    """Whether the environment is kept."""
    tools_kept: list[str] = msgspec.field(default_factory=list)
    """Tools that passed."""
    tools_dropped: dict[str, str] = msgspec.field(default_factory=dict)
    """Tools that failed, with the reason for each."""
    checks: int = 0
    """Number of checks run."""
    failures: list[str] = msgspec.field(default_factory=list)
    """Human-readable failures."""
    seconds: float = 0.0
    """Time spent verifying."""


class DomainPolicy(Record, frozen=True, kw_only=True):
    """An environment's domain policy: who may do what. The agent is shown ``text``; the sampler
    reads the two tables to make tasks that must be refused or confirmed first."""

    text: str
    """The policy in a few sentences, as the agent is shown it."""
    administrator: dict[str, str] = msgspec.field(default_factory=dict)
    """Tool name -> what it does in words (``"ship orders"``): only an administrator may use it;
    a customer's request to is refused."""
    confirm: dict[str, str] = msgspec.field(default_factory=dict)
    """Tool name -> what it does in words (``"cancel an order"``): it cannot be undone, so the
    agent asks the user to confirm first unless the request already does."""


class EnvSpec(Record, frozen=True, kw_only=True):
    """An executable, stateful tool environment (stored on disk as ``envs/<id>/``)."""

    id: str
    """Stable id, like ``shop-v1``."""
    name: str
    """Human name."""
    tools: list[ToolSpec]
    """The tools the agent may call."""
    behaviour: Behaviour
    """How the tools behave."""
    seed_sql: str = ""
    """SQL script that creates the deterministic initial state."""
    domain: str = ""
    """Domain, e.g. ``e-commerce``."""
    description: str = ""
    """What the environment models."""
    generated: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """Per table, columns the server generates (ids, timestamps), ignored by outcome checks."""
    operations: int = 0
    """Operations in the source (an OpenAPI spec's path + method pairs); 0 when the synthesizer does
    not count them."""
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    """Source operations the synthesizer made no tool of, counted by reason."""
    provenance: Provenance | None = None
    """Where it came from."""
    report: VerifyReport | None = None
    """The verification report, once verified."""
    policy: DomainPolicy | None = None
    """The domain policy (None: the environment has none; every request is to be done)."""

    def tool(self, name: str) -> ToolSpec | None:
        """Return the tool called ``name``, or None."""
        for t in self.tools:
            if t.name == name:
                return t
        return None


class ToolError(Record, frozen=True, kw_only=True):
    """A tool's error, as the agent sees it."""

    code: str
    """Short machine code: ``not_found``, ``conflict``, ``invalid``, ``timeout``, ``crashed``..."""
    message: str
    """What went wrong and, where possible, what to do."""


class ToolResult(Record, frozen=True, kw_only=True):
    """The result of one tool call."""

    ok: bool
    """True when the call succeeded."""
    value: Any = None
    """The returned value when ok."""
    error: ToolError | None = None
    """The error when not ok."""


class ToolCall(Record, frozen=True, kw_only=True):
    """A tool call: a name and its arguments."""

    name: str
    """The tool."""
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    """The arguments object."""
    id: str = ""
    """Call id (OpenAI ``tool_call_id``), when the caller had one."""


class CallRecord(Record, frozen=True, kw_only=True):
    """A call made during a rollout, with its result."""

    call: ToolCall
    """What was called."""
    result: ToolResult
    """What came back."""
    seconds: float = 0.0
    """Wall time of the call."""
    path: str = ""
    """How the call was answered (:data:`CALL_PATHS`): ``lane`` (the executor's direct lane on
    this host), ``bus`` (the sandbox service over NATS), ``known_trace`` (a result the known-trace
    cache held: no sandbox), ``runner`` (``envkernel serve``: its runner's session in the same
    process), ``refused`` (not a tool the task offers: never sent); "" in records written before
    paths were reported."""


CALL_PATHS = ("lane", "bus", "known_trace", "runner", "refused")
"""The ways a tool call is answered (``CallRecord.path``)."""


class Outcome(Record, frozen=True, kw_only=True):
    """What a correct rollout must achieve."""

    mutates: bool
    """True when the reference chain changes state."""
    expected_state: State = msgspec.field(default_factory=dict)
    """For a chain that changes state: final rows of every table it changed (generated columns
    removed)."""
    initial_state: State = msgspec.field(default_factory=dict)
    """The same tables at the start, for reference and diffs."""
    answer_facts: list[str] = msgspec.field(default_factory=list)
    """For a read-only chain: strings the final answer must contain."""
    answer_rows: list[list[str]] = msgspec.field(default_factory=list)
    """For a read-only chain: the expected rows, each ``[label, value, ...]``; every value must be
    said after its row's label and before the next row's, so ``active, archived`` does not answer
    "the status of each channel"."""
    answer_absent: list[str] = msgspec.field(default_factory=list)
    """For a read-only chain: values a precise answer does not contain (rows it was not asked
    for)."""
    answer_ordered: bool = False
    """For a read-only chain: the rows of ``answer_rows`` must be said in their order."""
    answer: str = ""
    """The reference answer in words (what the ``reference`` policy says at the end)."""
    unchanged: dict[str, str] = msgspec.field(default_factory=dict)
    """Every table of the initial state that the reference leaves unchanged (all of them for a
    read-only chain) -> the digest of its rows, generated columns removed
    (:func:`envkernel_schemas.rows.table_digest`): the final state must match each one, so a
    change the request did not ask for fails the task. Empty (a task made before it existed, or
    by hand): tables outside ``expected_state`` are not checked."""
    generated: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """The columns the server generates, per table of ``unchanged`` that has any (left out of its
    digest)."""
    expects: Literal["", "refusal", "confirmation"] = ""
    """What the right rollout does instead of the request's change, under the domain policy:
    ``refusal`` (the user may not: no change, an answer that declines and says an administrator
    can), ``confirmation`` (no change yet, an answer that asks the user to confirm); empty for
    every other task."""
    declined: list[ToolCall] = msgspec.field(default_factory=list)
    """For a refusal or confirmation task: the calls that would carry the request out, which the
    right rollout does not make (the gate's near misses make them)."""
    check: str = ""
    """For a workspace task: Python source defining ``grade(transcript, workspace_path) -> dict``
    (PinchBench's shape: a score in [0, 1] per criterion). It runs inside a sandbox over the final
    workspace, never in the kernel; the outcome is the mean of the scores."""


class PlantedRow(Record, frozen=True, kw_only=True):
    """A row put into a task's initial state before its episode starts: a near-duplicate of the
    row the request names, which a careless agent would pick (and fail the task's check)."""

    table: str
    """The table it goes into."""
    row: dict[str, Any]
    """The row (column -> value), as the state dump shows it."""
    key: str = "id"
    """The table's key column (``row[key]`` is the planted row's own id)."""
    twin: str = ""
    """The key of the row it is a near-duplicate of (the task's target)."""
    differs: list[str] = msgspec.field(default_factory=list)
    """The columns that tell it from its twin (besides its key), e.g. ``["status"]``."""


class Task(Record, frozen=True, kw_only=True):
    """A multi-step task over one environment, grounded by executing its reference chain."""

    id: str
    """Deterministic id."""
    env_id: str
    """The environment."""
    request: str
    """The user's words, with implicit intent (no tool names, no intermediate ids)."""
    calls: list[ToolCall]
    """The reference chain, executed for real."""
    outputs: list[Any] = msgspec.field(default_factory=list)
    """The reference chain's results, one per call."""
    outcome: Outcome
    """What a correct rollout achieves."""
    tools: list[str] = msgspec.field(default_factory=list)
    """Tools offered to the agent (empty: all of the environment's kept tools)."""
    difficulty: float = 0.0
    """Difficulty in [0, 1], from chain length and branching."""
    split: Literal["train", "heldout"] = "train"
    """Train or held-out, by chain signature."""
    signature: str = ""
    """Chain signature: the tool names in order."""
    sampler: str = ""
    """The sampler component that proposed it."""
    hidden: list[str] = msgspec.field(default_factory=list)
    """What the user holds back at first (a condition, a detail), one user turn each, in order: a
    ``user`` component reveals them when the agent asks or acts (``request`` plus these is the whole
    goal)."""
    persona: dict[str, str] = msgspec.field(default_factory=dict)
    """Who is asking (``name``, ``role``, ``tone``, ``motive``), when the request is spoken by a
    persona."""
    original_request: str = ""
    """The sampler's words when a refiner rewrote ``request`` (empty: not rewritten)."""
    solve_rate: float | None = None
    """Share of ``--calibrate`` attempts that solved it (None: not calibrated)."""
    reference_by: str = ""
    """Who made the reference chain: empty for the sampler, else the ``gate_solver`` policy whose
    solution it is."""
    user: str = ""
    """Who is asking, under the environment's domain policy: ``customer`` or ``administrator``
    (empty: the environment has no policy)."""
    policy: str = ""
    """The environment's domain policy (``DomainPolicy.text``), shown to the agent with ``user``."""
    planted: list[PlantedRow] = msgspec.field(default_factory=list)
    """Distractor rows inserted into the environment's seed state before every episode of this task
    (its initial state is the seed plus these); ``outputs`` and ``outcome`` were computed with
    them."""

    def seed_patch(self) -> list[dict[str, Any]]:
        """The planted rows as a sandbox ``patch`` takes them (``{"table": ..., "row": {...}}``
        each)."""
        return [{"table": p.table, "row": p.row} for p in self.planted]


class Usage(Record, frozen=True, kw_only=True):
    """Token usage of a rollout."""

    prompt_tokens: int = 0
    """Prompt tokens, summed over turns."""
    completion_tokens: int = 0
    """Completion tokens, summed over turns."""


class Termination(StrEnum):
    """The kinds of a trajectory's ``termination``: why a rollout ended. Some carry a detail after a
    colon (``mutant:drop_last``): build one with :meth:`of`, read one back with
    :func:`termination_of`."""

    ANSWER = "answer"
    """The agent gave its final answer."""
    MAX_TURNS = "max_turns"
    """The turn limit was reached."""
    DEADLINE = "deadline"
    """The rollout's deadline passed."""
    LENGTH = "length"
    """The model's reply was cut at its token limit."""
    ERROR = "error"
    """A recorded condition (``Trajectory.error``) ended it."""
    NO_CHOICES = "no_choices"
    """The model server answered without a choice."""
    MUTANT = "mutant"
    """A near-miss mutant of the reference played its kind (``mutant:<kind>``)."""
    NOT_APPLICABLE = "not_applicable"
    """A mutant kind does not apply to the task; no call was made (``not_applicable:<kind>``)."""

    def of(self, detail: str) -> str:
        """This kind with a detail: ``Termination.MUTANT.of("drop_last") == "mutant:drop_last"``."""
        return f"{self.value}:{detail}" if detail else self.value


def termination_of(termination: str) -> tuple[Termination | None, str]:
    """A ``termination`` read back: its kind (None for one this version does not know) and its
    detail, e.g. ``"mutant:drop_last"`` -> ``(Termination.MUTANT, "drop_last")``."""
    kind, _, detail = termination.partition(":")
    try:
        return Termination(kind), detail
    except ValueError:
        return None, detail


class Trajectory(Record, frozen=True, kw_only=True):
    """What an agent did on a task."""

    task_id: str
    """The task."""
    policy: str
    """The policy component."""
    index: int = 0
    """Index in the group."""
    messages: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """The conversation in OpenAI chat format (system, user, assistant with tool_calls, tool)."""
    calls: list[CallRecord] = msgspec.field(default_factory=list)
    """Tool calls in order, with results."""
    final_answer: str = ""
    """The agent's final reply."""
    final_state: State = msgspec.field(default_factory=dict)
    """State of the environment after the rollout (filled in by the kernel)."""
    termination: str = "answer"
    """Why it ended: a :class:`Termination` (``answer``, ``max_turns``, ``deadline``, ``length``,
    ``error``, ``no_choices``; ``mutant:<kind>``, ``not_applicable:<kind>``)."""
    format_errors: int = 0
    """Unparsable or invalid tool calls."""
    usage: Usage = msgspec.field(default_factory=Usage)
    """Token usage."""
    latencies: list[float] = msgspec.field(default_factory=list)
    """Model call latencies in seconds."""
    seconds: float = 0.0
    """Wall time of the rollout."""
    error: str = ""
    """A recorded condition (not a crash) that ended the rollout early."""


class Reward(Record, frozen=True, kw_only=True):
    """A scored rollout: the score and its parts."""

    score: float
    """Final score in [0, 1]."""
    model: str = ""
    """The reward-model component."""
    trace: float = 0.0
    """Trace match in [0, 1]."""
    outcome: float = 0.0
    """Outcome match in [0, 1]."""
    length_penalty: float = 0.0
    """Penalty for calls beyond the reference length."""
    format_penalty: float = 0.0
    """Penalty for unparsable calls."""
    tau: float = 0.5
    """Weight of the trace part."""
    reasons: list[str] = msgspec.field(default_factory=list)
    """Why points were lost."""
    error: str = ""
    """Set when scoring itself failed (never a silent 0)."""
    criteria: dict[str, float] = msgspec.field(default_factory=dict)
    """The score of each criterion, where the grader gives them (a workspace task's check:
    ``grade()``'s dict)."""


class ScoredRollout(Record, frozen=True, kw_only=True):
    """A trajectory and its reward."""

    trajectory: Trajectory
    """What the agent did."""
    reward: Reward
    """How it scored."""


class PolicyUpdate(Record, frozen=True, kw_only=True):
    """What a trainer returns at the end of an iteration: an update for one policy.

    The kernel stores it in the object store and announces it with ``policy.updated``; every
    rollout of the next iteration names it, and the worker serving the policy hands it to the
    policy's ``apply_update`` once, before the first of those rollouts.
    """

    policy: str = ""
    """The policy it is for ("" = the run's policy)."""
    data: bytes = b""
    """The update itself (weights, an adapter, a pointer to a checkpoint: the plugins' business)."""
    format: str = ""
    """What ``data`` holds, e.g. ``reinforce-weights/1`` or ``lora-path/1``; the policy checks
    it."""
    metrics: dict[str, float] = msgspec.field(default_factory=dict)
    """Training metrics of the step that made it (logged, and in the run summary)."""
