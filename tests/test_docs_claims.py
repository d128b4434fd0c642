"""Claims in README.md and docs/ checked against the code, without a server.

- every flag of an ``envkernel`` command line in the docs is an option of that command, and every
  option of every command (built-in and plugin commands, read from the real click tree) is named
  in the docs next to its command;
- the README's exit-code table is the one in ``envkernel.errors``;
- every event kind and record type in docs/events.md exists in ``envkernel_schemas``, with the
  same fields, and vice versa;
- the settings the docs' tables list for a component are fields of its ``Settings`` struct, and
  the ``ENVKERNEL_*`` variables they name are the ones the struct reads.

The notes under docs/notes/ are dated records of what was measured; they are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import msgspec
import pytest

from envkernel import errors
from envkernel.cli import Group, cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The reference pages (docs/notes/ is history, not checked)."""

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[A-Za-z])(?![\w-])")
COMMAND_LINE = re.compile(r"\benvkernel((?: [a-z][a-z-]*)+)")


def _commands() -> dict[tuple[str, ...], click.Command]:
    """Every command of the CLI by its path (``()`` is the group itself), plugin commands too."""
    assert isinstance(cli, Group)
    cli.load_plugin_commands()
    found: dict[tuple[str, ...], click.Command] = {}

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        found[path] = cmd
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))

    walk(cli, ())
    return found


COMMANDS = _commands()


def _options(cmd: click.Command, *, hidden: bool = True) -> set[str]:
    out: set[str] = set()
    for p in cmd.params:
        if isinstance(p, click.Option) and (hidden or not p.hidden):
            out.update(p.opts + p.secondary_opts)
    out.add("--help")
    return out


ROOT_OPTIONS = _options(cli)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _code_spans(text: str) -> Iterator[str]:
    """Fenced code lines and inline code spans: where the docs write commands."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            yield line.split("  #", 1)[0]  # a shell comment after the command is prose
        else:
            yield from re.findall(r"`([^`]+)`", line)


def _split_command(span: str) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """Each ``envkernel a b ... --flag`` in a span: the longest known command path, its tokens."""
    for m in COMMAND_LINE.finditer(span):
        words = m.group(1).split()
        path: tuple[str, ...] = ()
        for w in words:
            if (*path, w) in COMMANDS:
                path = (*path, w)
            else:
                break
        rest = span[m.end() :]
        nxt = COMMAND_LINE.search(rest)
        tail = rest[: nxt.start()] if nxt else rest
        tail = re.split(r"[|;&]|\s/\s", tail, maxsplit=1)[0]  # the next command of a pipe or list
        yield path, FLAG.findall(tail)


def _command_lines() -> list[tuple[str, tuple[str, ...], str]]:
    """(page, command path, flag) for every flag on an envkernel command line in the docs."""
    got = []
    for page in DOCS:
        for span in _code_spans(_read(page)):
            for path, flags in _split_command(span):
                got += [(page.name, path, f) for f in flags]
    return got


def test_the_cli_tree_has_its_commands() -> None:
    assert {("run",), ("worker",), ("tap",), ("plugins",), ("schemas",)} <= set(COMMANDS)
    assert ("env", "call") in COMMANDS and ("serve",) in COMMANDS  # a plugin's command too


@pytest.mark.parametrize(
    ("page", "path", "flag"),
    sorted(set(_command_lines())),
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v),
)
def test_a_flag_on_a_documented_command_line_exists(
    page: str, path: tuple[str, ...], flag: str
) -> None:
    cmd = COMMANDS[path]
    known = _options(cmd) | ROOT_OPTIONS
    assert flag in known, (
        f"{page}: `envkernel {' '.join(path)} ... {flag}`: no such option; "
        f"it has {', '.join(sorted(_options(cmd, hidden=False)))}"
    )


CLI_PAGE = ROOT / "docs" / "cli.md"


def _cli_page() -> dict[tuple[str, ...], set[str]]:
    """docs/cli.md: the options in the table of each ``## `envkernel ...` `` section."""
    sections = re.split(r"^## `envkernel ([a-z -]+)`$", _read(CLI_PAGE), flags=re.M)
    tables = {}
    for name, body in zip(sections[1::2], sections[2::2], strict=True):
        rows = re.findall(r"^\| (`-.*?) \|", body, re.M)
        tables[tuple(name.split())] = {f for row in rows for f in FLAG.findall(row)}
    return tables


LEAF_COMMANDS = sorted(
    p for p, c in COMMANDS.items() if p and not isinstance(c, click.Group) and not c.hidden
)


@pytest.mark.parametrize("path", LEAF_COMMANDS, ids=lambda p: " ".join(p))
def test_every_option_of_a_command_is_on_the_cli_page(path: tuple[str, ...]) -> None:
    page = _cli_page()
    assert path in page, f"docs/cli.md has no section `envkernel {' '.join(path)}`"
    code = _options(COMMANDS[path], hidden=False) - {"--help"}
    assert page[path] == code, (
        f"docs/cli.md, `envkernel {' '.join(path)}`: missing {sorted(code - page[path])}, "
        f"no such option {sorted(page[path] - code)}"
    )


def test_the_cli_page_names_no_command_that_does_not_exist() -> None:
    assert set(_cli_page()) <= set(LEAF_COMMANDS)


def test_the_root_options_are_documented() -> None:
    head = re.split(r"^## ", _read(CLI_PAGE), flags=re.M)[0]
    assert set(FLAG.findall(head)) >= ROOT_OPTIONS - {"--help"}


def _readme_exit_codes() -> dict[int, str]:
    text = _read(ROOT / "README.md")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {
        int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.+) \|$", section, re.M)
    }


def test_the_exit_code_table_is_the_code_s() -> None:
    table = _readme_exit_codes()
    code = {v: k for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert set(table) == set(code), f"README exit codes {sorted(table)}, errors.py {sorted(code)}"
    assert errors.EXIT_USAGE == 2 and errors.EXIT_ABORTED == 3 and errors.EXIT_EMPTY == 4
    assert "usage" in table[errors.EXIT_USAGE] and "interrupted" in table[errors.EXIT_ABORTED]
    assert "no task" in table[errors.EXIT_EMPTY] and "plugins failed" in table[errors.EXIT_FAILURES]


def test_the_cli_help_lists_every_exit_code() -> None:
    from envkernel.cli import EXIT_CODES_HELP

    for code in _readme_exit_codes():
        assert re.search(rf"(?<!\d){code} ", EXIT_CODES_HELP), (
            f"`run --help` lacks exit code {code}"
        )


def test_the_source_default_in_the_help_is_the_config_s() -> None:
    from envkernel.config import RunConfig

    (field,) = [f for f in msgspec.structs.fields(RunConfig) if f.name == "sources"]
    sources = field.default_factory()
    helps = {p.name: p.help or "" for p in COMMANDS[("run",)].params}
    assert f"default: {sources[0]}" in helps["sources"], helps["sources"]


# events.md ------------------------------------------------------------------------------------

EVENTS = _read(ROOT / "docs" / "events.md")
ENVELOPE = ("run", "id", "parent", "iteration", "time")


def _event_types() -> list[Any]:
    import envkernel_schemas as s

    return list(s.EVENT_TYPES)


def _section(text: str, heading: re.Pattern[str]) -> str:
    m = heading.search(text)
    assert m, f"no section matching {heading.pattern}"
    rest = text[m.end() :]
    end = re.search(r"^#{1,3} ", rest, re.M)
    return rest[: end.start()] if end else rest


def _table_fields(section: str) -> list[str]:
    return re.findall(r"^\| `([a-z_][a-z0-9_]*)` \|", section, re.M)


@pytest.mark.parametrize("t", _event_types(), ids=lambda t: t.kind)
def test_each_event_kind_is_documented_with_its_fields(t: Any) -> None:
    tag = t.__struct_config__.tag
    heading = re.compile(
        rf"^### `{re.escape(t.kind)}` — `{t.__name__}` \(tag `{re.escape(tag)}`\)$", re.M
    )
    fields = [f for f in t.__struct_fields__ if f not in ENVELOPE]
    assert _table_fields(_section(EVENTS, heading)) == fields


def test_every_event_kind_named_in_events_md_exists() -> None:
    kinds = {t.kind for t in _event_types()}
    headed = set(re.findall(r"^### `([a-z]+\.[a-z]+)` — ", EVENTS, re.M))
    who = _section(EVENTS, re.compile(r"^## Who publishes what$", re.M))
    listed = set(re.findall(r"^\| `([a-z]+\.[a-z]+)` \|", who, re.M))
    assert headed == kinds, f"headed {sorted(headed ^ kinds)}"
    assert listed == kinds, f"'Who publishes what' differs in {sorted(listed ^ kinds)}"


def test_the_envelope_table_is_the_event_base() -> None:
    from envkernel_schemas import Event

    envelope = _section(EVENTS, re.compile(r"^## The envelope and the tag$", re.M))
    assert tuple(_table_fields(envelope)) == Event.__struct_fields__ == ENVELOPE


def _record_types() -> list[Any]:
    from envkernel_schemas import records

    return [
        v
        for v in vars(records).values()
        if isinstance(v, type) and issubclass(v, records.Record) and v is not records.Record
    ]


@pytest.mark.parametrize("t", _record_types(), ids=lambda t: t.__name__)
def test_each_record_type_is_documented_with_its_fields(t: Any) -> None:
    heading = re.compile(rf"^### `{t.__name__}`( \(tag .*\))?$", re.M)
    assert _table_fields(_section(EVENTS, heading)) == list(t.__struct_fields__)


# settings tables -------------------------------------------------------------------------------


def _settings_types() -> dict[str, type]:
    """Settings struct per documented component whose plugin is installed."""
    out: dict[str, type] = {}
    for comp, (mod, attr) in {
        "process": ("envkernel_process", "Settings"),
        "podman": ("envkernel_podman.runner", "Settings"),
    }.items():
        try:
            module = __import__(mod, fromlist=[attr])
        except ImportError:
            continue
        out[comp] = getattr(module, attr)
    return out


def _settings_rows(page: Path, component: str) -> list[str]:
    """The first column of the table under a heading naming ``[component]`` settings."""
    text = _read(page)
    heading = rf"(.*`\[?{component}\]?`.*[Ss]ettings|[Ss]ettings.*`\[{component}\]`)"
    m = re.search(rf"^#+ {heading}.*$", text, re.M)
    if not m:
        return []
    rest = text[m.end() :]
    end = re.search(r"^#+ ", rest, re.M)
    return _table_fields(rest[: end.start()] if end else rest)


@pytest.mark.parametrize("component", sorted(_settings_types()))
def test_the_settings_tables_are_the_settings_structs(component: str) -> None:
    st = _settings_types()[component]
    rows = [r for page in DOCS for r in _settings_rows(page, component)]
    assert rows, f"no page has a settings table of `{component}`"
    fields = set(st.__struct_fields__)
    assert set(rows) <= fields, f"documented but not settings: {sorted(set(rows) - fields)}"
    assert fields <= set(rows), f"settings not documented: {sorted(fields - set(rows))}"


def test_the_process_variables_named_in_the_docs_exist() -> None:
    settings = _settings_types().get("process")
    if settings is None:
        pytest.skip("envkernel-process is not installed")
    env: dict[str, str] = getattr(settings, "__env__", {})
    named = {v for page in DOCS for v in re.findall(r"ENVKERNEL_PROCESS_[A-Z_]*[A-Z]", _read(page))}
    assert named <= set(env.values()), f"no such variable: {sorted(named - set(env.values()))}"


# the executor's command line --------------------------------------------------------------------


def test_the_executor_synopsis_is_its_argparse() -> None:
    from envkernel_runtime import executor

    parser = executor._parser()  # the executor's own parser (stdlib argparse)
    code = {o for a in parser._actions for o in a.option_strings} - {"-h", "--help"}
    text = _read(ROOT / "docs" / "sandboxes.md")
    synopsis = text.split("python3 executor.py", 1)[1].split("```", 1)[0]
    assert set(FLAG.findall(synopsis)) == code


def test_the_executor_ops_are_documented() -> None:
    from envkernel_runtime import executor_files

    src = "\n".join(Path(p).read_text() for p in executor_files() if "executor" in Path(p).name)
    ops = set(re.findall(r'op == "([a-z]+)"', src)) | set(re.findall(r'\{"op":"([a-z]+)"', src))
    text = _read(ROOT / "docs" / "sandboxes.md")
    documented = set(re.findall(r'\{"op": ?"([a-z]+)"', text))
    assert ops == documented, f"in the code, not the docs: {sorted(ops - documented)}"


# environment variables -------------------------------------------------------------------------

VARIABLE = re.compile(r"\bENVKERNEL_[A-Z0-9_]*[A-Z0-9]\b")


def _code_text() -> str:
    roots = ["kernel", "bus", "runtime", "schemas", "kit", "plugins", "scripts", "benchmarks"]
    files = [p for r in roots for p in (ROOT / r).rglob("*") if p.suffix in {".py", ".sh"}]
    files += [ROOT / "tests" / "conftest.py", *(ROOT / "scripts").glob("*")]
    return "\n".join(p.read_text(errors="replace") for p in files if p.is_file())


NOT_IN_THE_CODE = {
    "ENVKERNEL_RUN": "read by the example scoring function of docs/training.md, the user's code",
    "ENVKERNEL_NATS_TLS_CLIENT_KEY": "the bus builds the name: f'ENVKERNEL_NATS_TLS_{k}'",
    "ENVKERNEL_NATS_TLS_CLIENT_CERT": "the bus builds the name: f'ENVKERNEL_NATS_TLS_{k}'",
}


def test_every_variable_the_docs_name_is_read_by_the_code() -> None:
    code = set(VARIABLE.findall(_code_text())) | set(NOT_IN_THE_CODE)
    named = {v for page in DOCS for v in VARIABLE.findall(_read(page))}
    prefixes = {v for v in named if any(c.startswith(v + "_") for c in code)}  # ENVKERNEL_PROCESS
    assert named - prefixes <= code, f"no code reads {sorted(named - prefixes - code)}"


# summary.json ----------------------------------------------------------------------------------


def test_the_summary_table_is_what_a_run_writes(tmp_path: Path) -> None:
    from envkernel.recorder import Recorder

    written = set(Recorder(tmp_path).summary("r", {}))
    written |= {"reward", "gate_reward", "broken_plugins", "undecodable_events", "sandbox_stack"}
    written |= {"resumed", "aborted", "exit_code"}  # only when they apply; the exit code last
    written |= {"eval"}  # only in an evaluation (envkernel eval)
    text = _read(ROOT / "README.md")
    table = text.split("`summary.json` holds:", 1)[1].split("\n\n", 2)[1]
    documented = {
        f for row in table.splitlines()[2:] for f in re.findall(r"`([a-z_]+)`", row.split(" | ")[0])
    }
    assert documented == written, (
        f"undocumented: {sorted(written - documented)}; not written: {sorted(documented - written)}"
    )


# links -----------------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    heads = re.findall(r"^#+ (.+)$", _read(page), re.M)
    return {_slug(h) for h in heads}


ALL_PAGES = [*DOCS, *sorted((ROOT / "docs" / "notes").glob("*.md"))]
KNOWN_BROKEN = {
    ("serve.md", "sessions.md#recycled-sandboxes-a-trainers-next-batch-recycle--n"),
    ("serve.md", "sessions.md#envkernel-serve-one-step-counted-round-5"),
    (
        "serve.md",
        "sessions.md#round-6-the-executors-own-cost-per-call-and-where-a-steps-microseconds-go",
    ),
}
"""Links into sections sessions.md no longer has, on a page another change rewrites; each must still
be broken (a fixed one is taken off this list)."""


def _broken(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_read(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = [t for t in _broken(page) if (page.name, t) not in KNOWN_BROKEN]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_known_broken_links_are_still_broken() -> None:
    for name, target in KNOWN_BROKEN:
        page = ROOT / "docs" / name
        assert target in _broken(page), f"{name}: {target} resolves now; take it off KNOWN_BROKEN"


# the context API -------------------------------------------------------------------------------


def test_every_ctx_attribute_the_docs_name_exists() -> None:
    import inspect

    from envkernel.context import Context

    src = inspect.getsource(Context.__init__)
    attrs = set(dir(Context)) | set(re.findall(r"self\.([a-z_]+)\s*[:=]", src))
    named = {(page.name, m) for page in DOCS for m in re.findall(r"`ctx\.([a-z_]+)", _read(page))}
    missing = sorted((p, m) for p, m in named if m not in attrs)
    assert not missing, f"no such Context attribute: {missing}"


# the workspace tools ---------------------------------------------------------------------------


def test_the_workspace_tool_table_is_the_runtime_s() -> None:
    from envkernel_runtime import workspace

    text = _read(ROOT / "docs" / "workspace.md")
    table = text.split("| tool | arguments | result |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for row in table.splitlines()[2:]:
        cells = row.split(" | ")
        rows[cells[0].strip("| `")] = set(re.findall(r"`([a-z_]+)`", cells[1]))
    tools = {t["name"]: set(t["parameters"]["properties"]) for t in workspace.TOOLS}
    assert set(rows) == set(tools)
    for name, params in tools.items():
        assert params <= rows[name], f"workspace.md, `{name}`: undocumented {params - rows[name]}"
    assert f"default {workspace.EXEC_TIMEOUT:g} s" in table
    assert f"default {workspace.READ_LIMIT}" in table


# the run folder --------------------------------------------------------------------------------


def test_the_readme_lists_the_fields_of_a_rejected_jsonl_row(tmp_path: Path) -> None:
    """The README's fields of ``rejected.jsonl`` are the keys of the row the recorder writes (for a
    task whose environment came from a ``--source``: its source and file are in the row)."""
    import json

    from envkernel.recorder import Recorder
    from envkernel_schemas import (
        EnvRequested,
        EnvSpec,
        EnvSynthesized,
        Outcome,
        Provenance,
        Task,
        TaskRejected,
        WorkspaceBehaviour,
    )

    text = _read(ROOT / "README.md")
    row = next(x for x in text.splitlines() if x.startswith("| `rejected.jsonl` |"))
    listed = [n for n in re.findall(r"`([a-z_]+)`", row.split("|")[2]) if n != "rejected"]
    rec = Recorder(tmp_path)
    src = "openapi:specs/petstore.yaml"
    env = EnvSpec(
        id="petstore-0",
        name="Petstore",
        tools=[],
        behaviour=WorkspaceBehaviour(files={}),
        provenance=Provenance(source_kind="openapi", source="/abs/specs/petstore.yaml"),
    )
    task = Task(id="t1", env_id=env.id, request="r", calls=[], outcome=Outcome(mutates=False))
    rec.record(
        EnvRequested(run="r", id="req-0", source_kind="openapi", source="specs/petstore.yaml")
    )
    rec.record(EnvSynthesized(run="r", id="syn-0", parent="req-0", env=env))
    rec.record(TaskRejected(run="r", id="rej-0", task=task, reason="duplicate", detail="d"))
    rec.close()
    (got,) = [json.loads(x) for x in (tmp_path / "rejected.jsonl").read_text().splitlines()]
    assert listed == list(got), f"README lists {listed}, the recorder writes {list(got)}"
    assert got["env_id"] == "petstore-0" and got["source"] == src
    assert got["source_file"] == "/abs/specs/petstore.yaml"


# the run config --------------------------------------------------------------------------------


def test_the_readme_lists_the_config_file_s_top_level_keys() -> None:
    from envkernel import config

    text = _read(ROOT / "README.md")
    para = text.split("- `--config FILE` reads a TOML file.", 1)[1].split("table per component", 1)[
        0
    ]
    assert set(re.findall(r"`([a-z_]+)`", para)) == config.TOP_LEVEL


def test_the_readme_lists_the_run_s_environment_variables() -> None:
    from envkernel import config

    text = _read(ROOT / "README.md")
    para = text.split("- Precedence: flags, then environment variables, then the file.", 1)[1]
    para = para.split("A component can also read", 1)[0]
    named = set(VARIABLE.findall(para))
    assert named == set(config.ENV_VARS) | {"ENVKERNEL_NATS_URL"}


def test_the_preset_named_in_the_docs_is_the_suite_s() -> None:
    import tomllib

    data = tomllib.loads(_read(ROOT / "pyproject.toml"))
    preset = data["project"]["entry-points"]["envkernel.presets"]["default"]
    for page in (ROOT / "README.md", ROOT / "docs" / "architecture.md"):
        named = re.findall(r"(?<![\w,])(openapi,[a-z,-]*[a-z])", _read(page))
        assert named and set(named) == {preset}, f"{page.name}: {named} against {preset}"


# the plugins -----------------------------------------------------------------------------------


def _readme_plugins() -> dict[str, tuple[bool, dict[str, set[str]]]]:
    text = _read(ROOT / "README.md")
    table = text.split("| plugin | in the preset | role: components | what |", 1)[1]
    out = {}
    for row in table.split("\n\n", 1)[0].splitlines()[2:]:
        name, preset, roles = (c.strip() for c in row.strip().strip("|").split("|")[:3])
        by_role: dict[str, set[str]] = {}
        for part in roles.split(";"):
            role, _, comps = part.partition(":")
            if comps:
                by_role[role.strip().replace(" ", "_")] = set(re.findall(r"`([a-z-]+)`", comps))
        out[name.strip("`")] = (preset == "yes", by_role)
    return out


def test_the_plugin_table_is_what_is_installed() -> None:
    from envkernel.plugins import describe_installed, installed, load

    documented = _readme_plugins()
    infos = {i.name: i for i in describe_installed()}
    assert set(documented) == set(infos)
    for name, (default, by_role) in documented.items():
        assert default == infos[name].default, f"{name}: in the preset?"
        assert set(by_role) == set(infos[name].roles), f"{name}: roles"
        assert {c for cs in by_role.values() for c in cs} == set(infos[name].components), name
    registry = load(sorted(installed()))
    for name, (_, by_role) in documented.items():
        for role, comps in by_role.items():
            for comp in comps:
                assert registry.components[comp].role == role, f"{name}: {comp} is not a {role}"


# the kernel's modules --------------------------------------------------------------------------


def test_the_architecture_module_table_names_every_kernel_module() -> None:
    text = _read(ROOT / "docs" / "architecture.md")
    table = text.split("| module | job |", 1)[1].split("\n\n", 1)[0]
    named = {
        m
        for row in table.splitlines()[2:]
        for m in re.findall(r"`([a-z_]+)\.py`", row.split("|")[1])
    }
    modules = {p.stem for p in (ROOT / "kernel" / "src" / "envkernel").glob("*.py")}
    modules -= {"__init__", "__main__"}
    assert named == modules, (
        f"not in the table: {sorted(modules - named)}; gone: {sorted(named - modules)}"
    )


def test_the_chat_settings_table_is_chat_settings_and_its_defaults() -> None:
    from envkernel.plugins import installed, load
    from envkernel_kit.chat import ChatSettings

    text = _read(ROOT / "docs" / "chat.md")
    rest = text.partition("| setting | meaning |")[2]
    header = ("| setting | meaning |" + rest).splitlines()[0]
    comps = re.findall(r"`([a-z-]+)`", header)
    rows = ("| setting | meaning |" + rest).split("\n\n", 1)[0].splitlines()[2:]
    registry = load(sorted(installed()))
    documented: set[str] = set()
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        names = re.findall(r"`([a-z_]+)`", cells[0])
        documented.update(names)
        for comp, cell in zip(comps, cells[2:], strict=True):
            if not cell:
                continue
            want = [float(v) for v in cell.split(",")]
            defaults = registry.components[comp].settings_type()
            got = [float(getattr(defaults, n)) for n in names]
            assert got == want, f"chat.md, {names} of {comp}: {want}, the code says {got}"
    assert documented == set(ChatSettings.__struct_fields__)


# benchmark command lines -----------------------------------------------------------------------

BENCH_LINE = re.compile(r"\b(benchmarks/[a-z_]+\.py)((?:\s+[^\s|;&`]+)*)")


def _bench_lines() -> list[tuple[str, str, str]]:
    got = []
    for page in DOCS:
        for span in _code_spans(_read(page)):
            for m in BENCH_LINE.finditer(span):
                got += [(page.name, m.group(1), f) for f in FLAG.findall(m.group(2))]
    return sorted(set(got))


@pytest.mark.parametrize(("page", "script", "flag"), _bench_lines())
def test_a_benchmark_flag_in_the_docs_exists(page: str, script: str, flag: str) -> None:
    src = (ROOT / script).read_text()
    assert f'"{flag}"' in src, f"{page}: {script} has no option {flag}"


# dotted names ----------------------------------------------------------------------------------

DOTTED = re.compile(r"`(envkernel(?:_[a-z]+)?(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(|`)")
NOT_PYTHON = {
    "envkernel.api": "an entry-point group",
    "envkernel.commands": "an entry-point group",
    "envkernel_reward.py": "a file of the user's (docs/training.md)",
}


def _resolve(name: str) -> bool:
    """Import the longest module prefix of ``name`` and walk the rest as attributes."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("envkernel"):
                pytest.skip(f"{name}: needs {exc.name}, which is not installed")
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize(
    ("page", "name"),
    sorted({(p.name, n) for p in DOCS for n in DOTTED.findall(_read(p)) if n not in NOT_PYTHON}),
)
def test_a_dotted_name_in_the_docs_resolves(page: str, name: str) -> None:
    assert _resolve(name), f"{page}: `{name}` does not resolve"
