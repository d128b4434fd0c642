"""The PinchBench task format, both ways.

A PinchBench task is one Markdown file: YAML front matter (``id``, ``name``, ``category``,
``grading_type`` = ``automated`` | ``llm_judge`` | ``hybrid``, ``timeout_seconds``,
``workspace_files`` as ``{path, content}`` or ``{source, dest}`` entries, ``source`` relative to the
skill's ``assets/`` folder), then ``## Prompt``, ``## Expected Behavior``, ``## Grading Criteria``,
``## Automated Checks`` (a ``python`` block defining ``grade(transcript, workspace_path) -> dict``)
and, for judged tasks, ``## LLM Judge Rubric``. See https://github.com/pinchbench/skill.

:func:`parse_task` reads one (nothing in it is executed here: ``grade()`` only ever runs inside a
sandbox). :func:`export_task` writes an envkernel workspace task in the same format, with one
addition PinchBench ignores: a ``## Reference Solution`` section holding the reference chain of
tool calls as JSON, which :func:`parse_task` reads back (so an exported task passes the gate again).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envkernel_kit.workspace import check_meta, strip_meta
from envkernel_schemas import EnvSpec, Task, ToolCall, WorkspaceBehaviour

__all__ = ["PinchTask", "PinchBenchError", "export_name", "export_task", "parse_task", "task_files"]

_FRONT = re.compile(r"^---\s*\n(.*?)\n---\s*\n(.*)$", re.DOTALL)
_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_JSON = re.compile(r"```json\s*\n(.*?)```", re.DOTALL)


class PinchBenchError(ValueError):
    """A task file that is not in the PinchBench format (the message names the file and the
    problem)."""


@dataclass
class PinchTask:
    """One parsed PinchBench task."""

    id: str
    name: str
    category: str
    grading_type: str
    timeout_seconds: int
    prompt: str
    files: dict[str, str] = field(default_factory=dict)
    blobs: dict[str, str] = field(default_factory=dict)
    check: str = ""
    rubric: str = ""
    expected: str = ""
    criteria: list[str] = field(default_factory=list)
    reference: list[ToolCall] = field(default_factory=list)
    path: str = ""
    weights: dict[str, float] = field(default_factory=dict)
    """``grading_weights`` of a hybrid (``automated``, ``llm_judge``); empty when not given."""
    sessions: list[dict[str, Any]] = field(default_factory=list)
    """``sessions`` of a multi-session task: ``{id, prompt, new_session?}`` in order."""
    notes: str = ""
    """The ``## Additional Notes`` section."""
    answer: str = ""
    """The reference's final answer (from the Reference Solution; PinchBench ships none): empty or a
    real answer."""
    workspace_specs: list[dict[str, Any]] = field(default_factory=list)
    """``workspace_files`` as written in the file (``{path, content}`` or ``{source, dest}``)."""
    sections: dict[str, str] = field(default_factory=dict)
    """The body's sections as written (title -> text), but the Reference Solution's, in order."""

    def meta(self) -> dict[str, Any]:
        """What the envkernel Task carries of this file (see
        ``envkernel_kit.workspace.embed_meta``): enough to score a hybrid with its weights and to
        export the task back unchanged."""
        return {
            "id": self.id, "name": self.name, "category": self.category,
            "grading_type": self.grading_type, "timeout_seconds": self.timeout_seconds,
            "grading_weights": self.weights, "multi_session": bool(self.sessions),
            "sessions": self.sessions, "expected": self.expected, "criteria": self.criteria,
            "rubric": self.rubric, "notes": self.notes, "workspace_files": self.workspace_specs,
            "file": Path(self.path).name, "prompt": self.prompt, "sections": self.sections,
        }  # fmt: skip

    def request(self) -> str:
        """The agent's request: the prompt, or for a multi-session task each session's prompt in
        order (the placeholder ``## Prompt`` of such a file is not a request)."""
        if not self.sessions:
            return self.prompt
        return "\n\n".join(
            f"Session {i} "
            f"({s.get('id') or i}{', a new session' if s.get('new_session') else ''}):\n"
            f"{str(s.get('prompt') or '').strip()}"
            for i, s in enumerate(self.sessions, start=1)
        )


def task_files(path: Path) -> list[Path]:
    """The task files of ``path``: the file itself, or ``task_*.md`` in a folder (``tasks/`` inside
    it too)."""
    if path.is_file():
        return [path]
    found = sorted(path.glob("task_*.md")) or sorted((path / "tasks").glob("task_*.md"))
    if not found:
        raise PinchBenchError(
            f"{path}: no task_*.md file here (nor in {path / 'tasks'}); give a PinchBench "
            "tasks folder or one task file"
        )
    return found


def _sections(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current = None
    for line in body.splitlines(keepends=True):
        m = re.match(r"^##\s+(.+?)\s*$", line)
        if m:
            current = m.group(1).strip()
            out[current] = ""
        elif current is not None:
            out[current] += line
    return out


def parse_task(path: Path) -> PinchTask:
    """Parse one task file (front matter, sections, the ``grade()`` source, workspace files)."""
    meta, sections = _read(path)
    prompt = sections.get("Prompt", "").strip()
    if not prompt:
        raise PinchBenchError(
            f"{path}: no '## Prompt' section, so there is nothing to ask the agent"
        )
    grading, check = _grading(path, meta, sections)
    task = PinchTask(
        id=str(meta["id"]),
        name=str(meta.get("name") or meta["id"]),
        category=str(meta.get("category") or ""),
        grading_type=grading,
        timeout_seconds=int(meta.get("timeout_seconds") or 120),
        prompt=prompt,
        check=check,
        rubric=sections.get("LLM Judge Rubric", "").strip(),
        expected=sections.get("Expected Behavior", "").strip(),
        criteria=_criteria(sections.get("Grading Criteria", "")),
        path=str(path),
        weights=_weights(path, meta),
        sessions=_session_list(path, meta),
        notes=sections.get("Additional Notes", "").strip(),
        workspace_specs=[dict(x) for x in meta.get("workspace_files") or [] if isinstance(x, dict)],
        sections={k: v for k, v in sections.items() if k != "Reference Solution"},
    )
    _load_workspace(path, meta.get("workspace_files") or [], task)
    _load_reference(path, sections.get("Reference Solution", ""), task)
    return task


def _read(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The front matter (with an ``id``) and the sections of the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PinchBenchError(f"{path}: cannot read it: {exc}") from None
    m = _FRONT.match(text)
    if not m:
        raise PinchBenchError(
            f"{path}: no YAML front matter (a task file starts with '---', the metadata, "
            "then '---')"
        )
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise PinchBenchError(f"{path}: the front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict) or not meta.get("id"):
        raise PinchBenchError(f"{path}: the front matter has no 'id'")
    return meta, _sections(m.group(2))


def _grading(path: Path, meta: dict[str, Any], sections: dict[str, str]) -> tuple[str, str]:
    """The grading type and the ``grade()`` source (needed unless the type is ``llm_judge``)."""
    grading = str(meta.get("grading_type") or "automated")
    if grading not in ("automated", "llm_judge", "hybrid"):
        raise PinchBenchError(
            f"{path}: grading_type {grading!r} is not automated, llm_judge or hybrid"
        )
    code = _CODE.search(sections.get("Automated Checks", ""))
    check = code.group(1) if code else ""
    if grading != "llm_judge" and "def grade" not in check:
        raise PinchBenchError(
            f"{path}: grading_type {grading} needs '## Automated Checks' with a python block "
            "defining grade()"
        )
    return grading, check


_CRITERION = re.compile(r"^-\s+\[[ x]\]\s+(.+)$")


def _criteria(text: str) -> list[str]:
    """The ``- [ ] ...`` items of the Grading Criteria section."""
    return [m.group(1) for c in text.splitlines() if (m := _CRITERION.match(c.strip()))]


def _session_list(path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """``sessions`` of a multi-session task, each with a prompt (empty for other tasks)."""
    sessions = meta.get("sessions") or []
    if not (meta.get("multi_session") or sessions):
        return []
    if not isinstance(sessions, list) or not sessions:
        raise PinchBenchError(f"{path}: multi_session is set but 'sessions' is not a list")
    for i, sess in enumerate(sessions):
        if not isinstance(sess, dict) or not str(sess.get("prompt") or "").strip():
            raise PinchBenchError(f"{path}: sessions[{i}] has no prompt")
    return [dict(x) for x in sessions]


def _weights(path: Path, meta: dict[str, Any]) -> dict[str, float]:
    """``grading_weights`` as numbers (empty when not given)."""
    weights = meta.get("grading_weights") or {}
    if not isinstance(weights, dict) or not all(
        isinstance(v, (int, float)) for v in weights.values()
    ):
        raise PinchBenchError(f"{path}: grading_weights must map automated/llm_judge to numbers")
    return {str(k): float(v) for k, v in weights.items()}


def _load_workspace(path: Path, specs: Any, task: PinchTask) -> None:
    """Fill ``task.files`` (text) and ``task.blobs`` (base64) from ``workspace_files``: inline
    ``{path, content}`` entries, and ``{source, dest}`` ones read from the skill's ``assets/``."""
    assets = [path.parent / "assets", path.parent.parent / "assets"]
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise PinchBenchError(
                f"{path}: workspace_files[{i}] must be {{path, content}} or {{source, dest}}"
            )
        if "path" in spec:
            task.files[_safe(path, str(spec["path"]))] = str(spec.get("content") or "")
            continue
        src, dest = spec.get("source"), spec.get("dest") or spec.get("source")
        where = next((a / str(src) for a in assets if (a / str(src)).is_file()), None)
        if not src or where is None:
            raise PinchBenchError(
                f"{path}: workspace_files[{i}]: asset {src!r} not found in "
                f"{' or '.join(map(str, assets))}"
            )
        data = where.read_bytes()
        try:
            task.files[_safe(path, str(dest))] = data.decode("utf-8")
        except UnicodeDecodeError:
            task.blobs[_safe(path, str(dest))] = base64.b64encode(data).decode("ascii")


def _load_reference(path: Path, section: str, task: PinchTask) -> None:
    """Fill ``task.reference`` and ``task.answer`` from the Reference Solution section (or a
    ``<stem>.reference.json`` beside the file): a JSON list of calls or ``{calls, answer}``."""
    ref = _JSON.search(section)
    sidecar = path.with_name(path.stem + ".reference.json")
    raw = ref.group(1) if ref else sidecar.read_text(encoding="utf-8") if sidecar.is_file() else ""
    if not raw:
        return
    try:
        data = json.loads(raw)
        calls = data["calls"] if isinstance(data, dict) else data
        task.answer = str(data.get("answer") or "") if isinstance(data, dict) else ""
        task.reference = [
            ToolCall(name=c["name"], arguments=dict(c.get("arguments") or {})) for c in calls
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PinchBenchError(
            f"{path}: the reference solution is not a JSON list of {{name, arguments}} "
            f"(or {{calls, answer}}): {exc}"
        ) from None


def _safe(path: Path, rel: str) -> str:
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts:
        raise PinchBenchError(
            f"{path}: workspace file {rel!r} must be a relative path inside the workspace"
        )
    return "/".join(parts)


def export_name(task: Task) -> str:
    """The file name of ``task`` exported: an imported task keeps its file's name, others are
    ``task_<task id>.md``."""
    meta = check_meta(task.outcome.check)
    return str(meta.get("file") or f"task_{task.id}.md")


def export_task(
    task: Task,
    env: EnvSpec,
    *,
    category: str = "",
    timeout_seconds: int = 300,
    assets: dict[str, bytes] | None = None,
) -> str:
    """``task`` (a workspace task with a check) as a PinchBench task file. A task imported from
    PinchBench is written back as it came (id, grading type and weights, sessions, criteria,
    rubric, notes, ``workspace_files`` with their assets, which go into ``assets`` by name)."""
    meta = check_meta(task.outcome.check)
    if meta:
        return _export_imported(task, env, meta, assets)
    b = env.behaviour
    if not isinstance(b, WorkspaceBehaviour) or not task.outcome.check:
        raise PinchBenchError(
            f"task {task.id} is not a workspace task with a check script; only those can be "
            "exported"
        )
    if b.source:
        raise PinchBenchError(
            f"task {task.id} uses an app (SQLite tools) of environment {env.id}; PinchBench "
            "has no place for one"
        )
    meta = {
        "id": f"task_{task.id}",
        "name": env.name,
        "category": category or env.domain or "workspace",
        "grading_type": "automated",
        "timeout_seconds": timeout_seconds,
        "workspace_files": [{"path": p, "content": c} for p, c in sorted(b.files.items())],
    }
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    notes = []
    if b.setup:
        notes.append(
            "Before the agent starts, the harness ran in the workspace: "
            + "; ".join(f"`{c}`" for c in b.setup)
            + "."
        )
    if b.blobs:
        notes.append(f"Binary files not carried by this format: {', '.join(sorted(b.blobs))}.")
    reference = json.dumps(
        [{"name": c.name, "arguments": c.arguments} for c in task.calls],
        indent=2,
        ensure_ascii=False,
    )
    return (
        f"---\n{front}---\n\n## Prompt\n\n{task.request}\n\n## Expected "
        f"Behavior\n\n{task.outcome.answer or 'See the automated checks.'}\n"
        + ("\n" + "\n".join(notes) + "\n" if notes else "")
        + f"\nExported by envkernel from environment `{env.id}`; the tools were "
        f"{', '.join(t.name for t in env.tools)}.\n"
        + "\n## Grading Criteria\n\n- [ ] every criterion of grade() scores 1\n\n## Automated "
        f"Checks\n\n```python\n{task.outcome.check.rstrip()}\n```\n"
        + "\n## Reference Solution\n\nThe reference chain of tool calls (envkernel; "
        f"PinchBench ignores this section).\n\n```json\n{reference}\n```\n"
    )


class _Dumper(yaml.SafeDumper):
    """YAML as PinchBench's files write it: lists indented under their key, multi-line strings as
    ``|`` blocks (so a re-exported file differs from its source as little as the data allows)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> Any:
    if "\n" in value and all(line == line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def _export_imported(
    task: Task, env: EnvSpec, meta: dict[str, Any], assets: dict[str, bytes] | None
) -> str:
    b = env.behaviour
    if not isinstance(b, WorkspaceBehaviour):
        raise PinchBenchError(f"task {task.id} is not a workspace task")
    front = _front(meta)
    front["workspace_files"] = _specs(meta, b, assets)
    text = (
        "---\n"
        + yaml.dump(front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
        + "---\n"
    )
    raw = meta.get("sections") or {}
    body = _body(task, meta, raw)
    ref: dict[str, Any] = {
        "calls": [{"name": c.name, "arguments": c.arguments} for c in task.calls]
    }
    if task.outcome.answer:
        ref["answer"] = task.outcome.answer
    body.append((
        "Reference Solution",
        f"The reference of envkernel environment `{env.id}` (PinchBench ignores this section).\n\n"
        f"```json\n{json.dumps(ref, indent=2, ensure_ascii=False)}\n```",
    ))  # fmt: skip
    out = text + "\n" if raw else text
    for h, c in body:
        as_written = raw and h in raw
        out += f"## {h}\n{c}" if as_written else f"\n## {h}\n\n{c.strip()}\n"
    return out


def _front(meta: dict[str, Any]) -> dict[str, Any]:
    """The front matter of an imported task, but its ``workspace_files``, as the file had it."""
    front: dict[str, Any] = {
        "id": meta["id"],
        "name": meta.get("name") or meta["id"],
        "category": meta.get("category") or "",
        "grading_type": meta.get("grading_type") or "automated",
        "timeout_seconds": int(meta.get("timeout_seconds") or 120),
    }
    if meta.get("grading_weights"):
        front["grading_weights"] = meta["grading_weights"]
    if meta.get("sessions"):
        front["multi_session"] = True
        front["sessions"] = meta["sessions"]
    return front


def _specs(
    meta: dict[str, Any], b: WorkspaceBehaviour, assets: dict[str, bytes] | None
) -> list[dict[str, Any]]:
    """``workspace_files`` as the file wrote them, with the environment's contents; the data of
    ``{source, dest}`` entries goes into ``assets`` by source name."""
    specs = []
    for spec in meta.get("workspace_files") or []:
        if "path" in spec:
            content = b.files.get(spec["path"], spec.get("content", ""))
            specs.append({"path": spec["path"], "content": content})
            continue
        dest = str(spec.get("dest") or spec.get("source"))
        data = (
            b.files[dest].encode() if dest in b.files else base64.b64decode(b.blobs.get(dest, ""))
        )
        if assets is not None:
            assets[str(spec["source"])] = data
        specs.append({"source": spec["source"], "dest": spec.get("dest") or spec["source"]})
    return specs


def _body(task: Task, meta: dict[str, Any], raw: dict[str, str]) -> list[tuple[str, str]]:
    """The sections of an imported task: the file's own as written (its check is the task's, which
    is the file's), or, for metadata without them, rebuilt from the fields."""
    check = strip_meta(task.outcome.check).rstrip()
    code = f"```python\n{check}\n```"
    if raw:
        body = list(raw.items())
        if check and "Automated Checks" not in raw:
            body.append(("Automated Checks", code))
        return body
    body = [
        ("Prompt", str(meta.get("prompt") or task.request)),
        ("Expected Behavior", meta.get("expected") or ""),
        ("Grading Criteria", "\n".join(f"- [ ] {c}" for c in meta.get("criteria") or [])),
    ]
    extra = [
        ("Automated Checks", code if check else ""),
        ("LLM Judge Rubric", meta.get("rubric") or ""),
        ("Additional Notes", meta.get("notes") or ""),
    ]
    return body + [(h, c) for h, c in extra if c]


def judge_only(task: PinchTask) -> bool:
    """True when the task is graded only by an LLM judge (no automated grade())."""
    return task.grading_type == "llm_judge" or not task.check


def as_dict(task: PinchTask) -> dict[str, Any]:
    """The parsed task as plain data (for logs and tests)."""
    return {
        "id": task.id,
        "grading_type": task.grading_type,
        "files": sorted(task.files),
        "reference": len(task.reference),
    }
