"""Building export rows from scored groups (pure, no I/O), and the RL parquet schema."""

from __future__ import annotations

import io
import json
from functools import cache
from typing import TYPE_CHECKING, Any

from envkernel_kit.messages import tool_defs
from envkernel_kit.policy import policy_note
from envkernel_schemas import EnvSpec, GroupScored, ScoredRollout, Task, to_builtins

if TYPE_CHECKING:  # pyarrow is imported when a table is built, not when the plugin loads
    import pyarrow as pa

SYSTEM_PROMPT = (
    "You are a helpful assistant with access to tools. Use them to fulfil the user's request: "
    "look up what you need, make the changes asked for, and finish with a short answer."
)
"""Default system message of RL prompts (the same as the baseline policies')."""


def dumps(value: Any) -> str:
    """Stable compact JSON (sorted keys) for values stored as strings."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def shown_tools(tools: list[dict[str, Any]], tools_format: str = "parameters_json") -> Any:
    """Tool definitions as written to a file: see ``SftSettings.tools_format``."""
    if tools_format == "json":
        return dumps(tools)
    if tools_format == "parameters_json":
        return [
            {
                **t,
                "function": {
                    **t.get("function", {}),
                    "parameters": dumps(t.get("function", {}).get("parameters", {})),
                },
            }
            for t in tools
        ]
    return tools


def fallback_tool_defs(task: Task) -> list[dict[str, Any]]:
    """Tool definitions when the environment is unavailable: the reference's tools, untyped."""
    names = list(dict.fromkeys(c.name for c in task.calls))
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for n in names
    ]


_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _call(tc: dict[str, Any]) -> dict[str, Any]:
    fn = tc.get("function") or {}
    args = fn.get("arguments", "")
    return {
        "id": str(tc.get("id", "")),
        "type": "function",
        "function": {
            "name": str(fn.get("name", "")),
            "arguments": args if isinstance(args, str) else dumps(args),
        },
    }


def chat_message(m: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI chat message with a stable shape: ``content`` is a string (non-string content
    becomes JSON), tool-call ``arguments`` are JSON strings, and only the chat keys are kept."""
    out: dict[str, Any] = {"role": str(m.get("role", ""))}
    content = m.get("content")
    out["content"] = (
        "" if content is None else content if isinstance(content, str) else dumps(content)
    )
    if m.get("tool_calls"):
        out["tool_calls"] = [_call(tc) for tc in m["tool_calls"] if isinstance(tc, dict)]
    if m.get("tool_call_id"):
        out["tool_call_id"] = str(m["tool_call_id"])
    if m.get("name") and out["role"] in ("tool", "function"):
        out["name"] = str(m["name"])
    return out


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`chat_message` over a conversation."""
    return [chat_message(m) for m in messages if isinstance(m, dict)]


def sft_row(
    group: GroupScored,
    rollout: ScoredRollout,
    tools: list[dict[str, Any]],
    *,
    metadata: bool = True,
) -> dict[str, Any]:
    """One SFT line: OpenAI chat ``messages`` with ``tools`` (and ``metadata`` for tracing)."""
    traj = rollout.trajectory
    row: dict[str, Any] = {"messages": chat_messages(traj.messages), "tools": tools}
    if metadata:
        row["metadata"] = {
            "id": f"{group.id}/{traj.index}",
            "task_id": group.task.id,
            "env_id": group.task.env_id,
            "policy": traj.policy,
            "index": traj.index,
            "score": rollout.reward.score,
            "split": group.task.split,
            "signature": group.task.signature,
            "iteration": group.iteration,
        }
    return row


def sft_key(row: dict[str, Any]) -> str | None:
    """Deduplication key of an SFT line (None without metadata: the line hash is used)."""
    meta = row.get("metadata")
    return str(meta["id"]) if isinstance(meta, dict) and "id" in meta else None


def rl_row(
    task: Task,
    tools: list[dict[str, Any]],
    *,
    system_prompt: str = SYSTEM_PROMPT,
    agent_name: str = "tool_agent",
    ability: str = "tool-use",
) -> dict[str, Any]:
    """One verl-style RL row for a task. Values whose shape varies (arguments, states, tools)
    are JSON strings so that every row has the same parquet schema. ``extra_info`` carries all
    the default reward reads: the states, the untouched tables' digests (``unchanged``) and the
    columns the server generates (``generated``), and the reference's last result (``outputs``,
    a list of at most one: the rows a read-only answer must have been looked up from)."""
    note = policy_note(task)  # the domain policy and who is asking, as the policies are shown it
    return {
        "data_source": f"envkernel/{task.env_id}",
        "prompt": [
            {"role": "system", "content": f"{system_prompt}\n\n{note}" if note else system_prompt},
            {"role": "user", "content": task.request},
        ],
        "agent_name": agent_name,
        "ability": ability,
        "reward_model": {
            "style": "rule",
            "ground_truth": {
                "calls": [{"name": c.name, "arguments": dumps(c.arguments)} for c in task.calls],
                "mutates": task.outcome.mutates,
                "answer_facts": list(task.outcome.answer_facts),
                "answer_rows": dumps(task.outcome.answer_rows),
                "answer_absent": list(task.outcome.answer_absent),
                "answer_ordered": task.outcome.answer_ordered,
                "masked_arguments": masked_arguments(task),
                "expects": task.outcome.expects,
            },
        },
        "extra_info": {
            "task_id": task.id,
            "env_id": task.env_id,
            "split": task.split,
            "difficulty": float(task.difficulty),
            "signature": task.signature,
            "initial_state": dumps(task.outcome.initial_state),
            "expected_state": dumps(task.outcome.expected_state),
            "planted": dumps(to_builtins(task.planted)),
            "tools": dumps(tools),
            "unchanged": dumps(task.outcome.unchanged),
            "generated": dumps(task.outcome.generated),
            "outputs": dumps(to_builtins(task.outputs[-1:])),
        },
    }


def masked_arguments(task: Task) -> list[str]:
    """Arguments of the reference calls that may vary, as ``"<call index>.<argument>"``: the
    trace reward treats ``null`` arguments as absent, so those may be omitted or left null.
    Every other argument must match (numbers to a relative tolerance of 1e-6, strings stripped)."""
    return [
        f"{i}.{k}" for i, c in enumerate(task.calls) for k, v in c.arguments.items() if v is None
    ]


def rl_key(row: dict[str, Any]) -> str | None:
    """Deduplication key of an RL row: its task id."""
    info = row.get("extra_info")
    return f"task:{info['task_id']}" if isinstance(info, dict) and "task_id" in info else None


@cache
def rl_schema() -> pa.Schema:
    """The fixed schema of ``rl.parquet`` (also ``RL_SCHEMA``; pyarrow is imported on first use)."""
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    call = pa.struct([("name", pa.string()), ("arguments", pa.string())])

    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(message)),
            ("agent_name", pa.string()),
            ("ability", pa.string()),
            (
                "reward_model",
                pa.struct(
                    [
                        ("style", pa.string()),
                        (
                            "ground_truth",
                            pa.struct(
                                [
                                    ("calls", pa.list_(call)),
                                    ("mutates", pa.bool_()),
                                    ("answer_facts", pa.list_(pa.string())),
                                    ("answer_rows", pa.string()),
                                    ("answer_absent", pa.list_(pa.string())),
                                    ("answer_ordered", pa.bool_()),
                                    ("masked_arguments", pa.list_(pa.string())),
                                    ("expects", pa.string()),
                                ]
                            ),
                        ),
                    ]
                ),
            ),
            (
                "extra_info",
                pa.struct(
                    [
                        ("task_id", pa.string()),
                        ("env_id", pa.string()),
                        ("split", pa.string()),
                        ("difficulty", pa.float64()),
                        ("signature", pa.string()),
                        ("initial_state", pa.string()),
                        ("expected_state", pa.string()),
                        ("planted", pa.string()),
                        ("tools", pa.string()),
                        ("unchanged", pa.string()),
                        ("generated", pa.string()),
                        ("outputs", pa.string()),
                    ]
                ),
            ),
        ]
    )


def __getattr__(name: str) -> Any:
    """``RL_SCHEMA``: :func:`rl_schema`, built when first asked for."""
    if name == "RL_SCHEMA":
        return rl_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rl_table(rows: list[dict[str, Any]]) -> pa.Table:
    """RL rows as a pyarrow table with ``RL_SCHEMA`` (keys the schema lacks are ignored, missing
    ones null).

    Built by pyarrow's JSON reader: its conversions of Python objects (``Table.from_pylist``,
    ``pa.array``, even ``Schema.empty_table``) import pandas when it is installed (1 to 3 s, for 0
    rows too). The table is the same, and no pandas is imported.
    """
    import pyarrow as pa
    import pyarrow.json as pj

    schema = rl_schema()
    if not rows:
        return pa.Table.from_batches([], schema=schema)
    data = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows).encode()
    return pj.read_json(
        io.BytesIO(data),
        read_options=pj.ReadOptions(block_size=max(len(data), 1 << 20), use_threads=False),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def env_tools(env: EnvSpec | None, task: Task) -> list[dict[str, Any]]:
    """The tools offered for a task: the environment's (or the task's subset), else a fallback."""
    if env is None:
        return fallback_tool_defs(task)
    return tool_defs(env.tools, task.tools)
