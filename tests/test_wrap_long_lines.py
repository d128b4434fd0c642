"""scripts/wrap_long_lines.py: each rewrite shortens lines and leaves the program's values alone."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "wrap_long_lines.py"


@pytest.fixture(scope="module")
def wrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wrap_long_lines", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["wrap_long_lines"] = module
    spec.loader.exec_module(module)
    return module


def _value(source: str, name: str) -> object:
    namespace: dict[str, object] = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace[name]


def test_an_f_string_is_split_at_spaces_outside_its_fields(wrap: ModuleType) -> None:
    src = (
        "x = 3\n"
        "s = f\"the value {x + 1:>10} and {'a b c'} then some more words to make it "
        'long enough to split {x!r} end"\n'
    )
    new = wrap.fix_source(src, Path("t.py"), 60, None)
    assert new != src
    assert _value(new, "s") == _value(src, "s")
    assert wrap.same_behaviour(src, new) is None
    # no piece opens a field it does not close
    for node in ast.walk(ast.parse(new)):
        if isinstance(node, ast.JoinedStr):
            assert all(isinstance(v, (ast.Constant, ast.FormattedValue)) for v in node.values)


def test_a_docstring_paragraph_is_reflowed_and_its_code_block_left_alone(
    wrap: ModuleType,
) -> None:
    code = "    python run.py --a-very-long-option value --another-long-option value --more"
    src = (
        '"""Summary line.\n\n'
        "A paragraph whose first line is far too long for the limit that this test sets here.\n"
        "It goes on.\n\n"
        "Usage::\n\n"
        f"{code}\n"
        '"""\n'
    )
    new = wrap.fix_docstrings(src, 60)
    prose = [line for line in new.split("\n") if line and not line.startswith("    ")]
    assert all(len(line) <= 60 for line in prose)
    assert code in new.split("\n")
    assert wrap.same_behaviour(src, new) is None


def test_a_long_comment_is_rewrapped_at_its_indent_and_pragmas_are_not(wrap: ModuleType) -> None:
    src = (
        "def f():\n"
        "    # one two three four five six seven eight nine ten eleven twelve thirteen\n"
        "    return 1  # noqa: E501 this one stays as it is, however long it is, on purpose\n"
    )
    new = wrap.fix_comments(src, 40)
    lines = new.split("\n")
    assert lines[1].startswith("    # ") and len(lines[1]) <= 40 and lines[2].startswith("    # ")
    assert lines[-2] == src.split("\n")[2]
    assert wrap.same_behaviour(src, new) is None


def test_a_triple_quoted_data_literal_keeps_its_value(wrap: ModuleType) -> None:
    src = (
        'SQL = """\\\n'
        "INSERT INTO t VALUES ('a', 'b'), ('c', 'd'), ('e', 'f'), ('g', 'h'), ('i', 'j');\n"
        '"""\n'
    )
    new = wrap.fix_triple_quoted(src, 50)
    assert all(len(line) <= 50 for line in new.split("\n"))
    assert _value(new, "SQL") == _value(src, "SQL")


def test_a_change_of_value_is_refused(wrap: ModuleType) -> None:
    assert wrap.same_behaviour('s = "a b"\n', 's = "a " "c"\n') == "AST differs"
    assert wrap.same_behaviour("x = 1  # a b\n", "x = 1  # a\n") == "comment words differ"
    assert wrap.same_behaviour('s = "a b"\n', 's = (\n    "a "\n    "b"\n)\n') is None
