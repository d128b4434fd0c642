#!/usr/bin/env python3
"""Fix ruff's E501 (line too long) without changing what a program does.

Three rewrites, each limited to text the formatter cannot break:

- docstrings: an over-long prose line gives its last words to the next line of the same
  paragraph (or a new line), cascading; code blocks (``::``, ``>>>``), tables, indented blocks
  and lines without a space are left alone;
- ``#`` comments: an over-long comment is rewrapped into several comment lines at the same
  indent (a trailing comment moves above its line); pragmas (``noqa``, ``type:``, ``fmt:``) are
  left alone;
- triple-quoted data literals (prompts, SQL, source code; not docstrings, not raw): an
  over-long line is broken after a space with a backslash-newline, which the literal's value
  does not contain, so the value is unchanged;
- string literals: an over-long single-line literal (plain, raw, bytes or f-string) is split at
  spaces outside ``{...}`` fields into adjacent literals, which ``ruff format`` then lays out one
  per line.

Passes repeat (with ``ruff format`` between them) until nothing changes. Before a file is
written, its new version must compile to the same AST as the old one, once docstring whitespace
is normalised and adjacent string constants are joined, and its comments must hold the same words
in the same order; a file that fails is not written. Lines still too long are listed.

Usage::

    python scripts/wrap_long_lines.py PATH...             # rewrite in place, list the rest
    python scripts/wrap_long_lines.py --diff PATH...      # show what would change
    python scripts/wrap_long_lines.py --check-ast [--against REV] PATH...
                                                          # compare files with git REV (HEAD)

Standard library only (Python 3.11: an f-string is one STRING token); ``ruff`` is run as a
subprocess for the layout step (``--no-format`` to skip it).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import shutil
import subprocess
import sys
import tokenize
import tomllib
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PRAGMA = re.compile(r"#\s*(noqa|type:|fmt:|pragma|pylint:|mypy:|ruff:|isort:|nosec|!)", re.I)
LIST_ITEM = re.compile(r"([-*+\u2022]|\d+[.)]|\([0-9a-z]+\)|[a-z][.)]|:[\w ]+:|\.\. )\s")
TABLE = re.compile(r"(\||\+[-=]|[=\- ]+$)")
FMT_DIRECTIVE = re.compile(r"#\s*fmt:\s*(skip|off|on)\b")
STRING_PREFIX = re.compile(r"([rRbBuUfF]*)('''|\"\"\"|'|\")")
MAX_PASSES = 12


def width(text: str) -> int:
    """Display width of ``text`` as ruff counts it (wide East Asian characters count two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def indent_of(line: str) -> str:
    """The leading whitespace of ``line``."""
    return line[: len(line) - len(line.lstrip())]


# --------------------------------------------------------------------------------------------
# Behaviour check


class _Normalise(ast.NodeTransformer):
    """Join a JoinedStr's adjacent constants; a JoinedStr of constants only becomes a Constant."""

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        values: list[ast.expr] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and values and isinstance(values[-1], ast.Constant):
                values[-1] = ast.Constant(value=values[-1].value + value.value)
            else:
                values.append(value)
        if all(isinstance(v, ast.Constant) for v in values):
            return ast.Constant(value="".join(v.value for v in values))  # type: ignore[attr-defined]
        node.values = values
        return node


def normalised_dump(source: str) -> str:
    """``ast.dump`` of ``source`` with bare string statements' whitespace normalised."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                stmt.value.value = " ".join(stmt.value.value.split())
    return ast.dump(_Normalise().visit(tree), include_attributes=False)


def comment_words(source: str) -> list[str]:
    """The words of every comment in ``source``, in order (``fmt:`` layout directives left out)."""
    words: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            words.extend(FMT_DIRECTIVE.sub("", tok.string).lstrip("#").split())
    return words


def same_behaviour(old: str, new: str) -> str | None:
    """``None`` if ``new`` does what ``old`` does, else why not."""
    try:
        new_dump = normalised_dump(new)
    except SyntaxError as exc:
        return f"new version does not parse: {exc}"
    if normalised_dump(old) != new_dump:
        return "AST differs"
    if comment_words(old) != comment_words(new):
        return "comment words differ"
    return None


# --------------------------------------------------------------------------------------------
# Docstrings


def _docstring_nodes(tree: ast.AST) -> Iterator[ast.Expr]:
    """Every bare string-constant statement (docstrings and attribute docstrings)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for stmt in body if isinstance(body, list) else []:
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                yield stmt


@dataclass
class _Row:
    """One physical line of a docstring and whether it may be reflowed."""

    prose: bool
    cont: str  # indent of the paragraph's continuation lines
    starts_item: bool = False


def _classify_docstring(lines: list[str], first: int, last: int, base: str) -> dict[int, _Row]:
    """Rows ``first..last`` (0-based) of a docstring: which are prose, and their paragraph."""
    rows: dict[int, _Row] = {}
    literal_below: int | None = None  # inside a ``::`` block or indented block: its indent
    cont = base
    after_blank = False
    for i in range(first, last + 1):
        text = lines[i] if i != first else ""
        stripped = text.strip()
        if i == first:
            rows[i] = _Row(prose=True, cont=base)
            if lines[i].rstrip().endswith("::"):
                literal_below = len(base)
            continue
        if not stripped or stripped in ('"""', "'''"):
            rows[i] = _Row(prose=False, cont=cont)
            after_blank = True
            continue
        ind = len(indent_of(text))
        if literal_below is not None:
            if ind > literal_below:
                rows[i] = _Row(prose=False, cont=cont)
                after_blank = False
                continue
            literal_below = None
        item = LIST_ITEM.match(stripped)
        if item:
            # a field or directive's continuation is indented further: left alone below
            field = item.group(1)[0] in ":."
            cont = " " * (ind if field else ind + len(item.group(0)))
        elif after_blank or i == first + 1:
            cont = " " * ind
        prose = not (
            stripped.startswith((">>>", "..."))
            or TABLE.match(stripped)
            or "  " in stripped.rstrip("\"'")
            or " " not in stripped
            or (ind > len(cont) and not item)
            or (after_blank and ind > len(base))
        )
        if not prose and ind > len(base) and after_blank:
            literal_below = ind - 1
        rows[i] = _Row(prose=prose, cont=cont, starts_item=bool(item))
        if text.rstrip().endswith("::"):
            literal_below = ind
        after_blank = False
    return rows


def _split_at(line: str, limit: int, start: int) -> int | None:
    """Index of the space at which to break ``line`` so its left part fits, or ``None``."""
    spaces = [
        m.start()
        for m in re.finditer(" ", line)
        if m.start() > start and line[m.start() - 1] not in " \\"
    ]
    fitting = [s for s in spaces if width(line[:s]) <= limit]
    if not fitting:
        return None
    outside = [s for s in fitting if line[:s].count("``") % 2 == 0]
    return (outside or fitting)[-1]


def fix_docstrings(source: str, limit: int) -> str:
    """Reflow over-long prose lines of every triple-quoted docstring in ``source``."""
    lines = source.split("\n")
    tree = ast.parse(source)
    nodes = sorted(_docstring_nodes(tree), key=lambda n: n.lineno, reverse=True)
    for node in nodes:
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        head = lines[first][node.col_offset :]
        m = STRING_PREFIX.match(head)
        if not m or len(m.group(2)) != 3:
            continue
        base = indent_of(lines[first])
        text_start = node.col_offset + len(m.group(0))
        rows = _classify_docstring(lines, first, last, base)
        i = first
        while i <= last:
            line = lines[i]
            row = rows[i]
            if width(line) <= limit or not row.prose:
                i += 1
                continue
            start = text_start if i == first else len(indent_of(line))
            cut = _split_at(line, limit, start)
            if cut is None:
                i += 1
                continue
            lines[i], overflow = line[:cut].rstrip(), line[cut + 1 :].strip()
            nxt = rows.get(i + 1)
            if (
                i + 1 <= last
                and nxt is not None
                and nxt.prose
                and not nxt.starts_item
                and indent_of(lines[i + 1]) == row.cont
                and lines[i + 1].strip()
                and not lines[i].rstrip().endswith("::")
            ):
                lines[i + 1] = row.cont + overflow + " " + lines[i + 1].strip()
            else:
                lines.insert(i + 1, row.cont + overflow)
                rows = {(k + 1 if k > i else k): v for k, v in rows.items()}
                rows[i + 1] = _Row(prose=True, cont=row.cont)
                last += 1
            i += 1
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Comments


def _wrap_words(words: list[str], prefix: str, limit: int) -> list[str]:
    """Greedy wrap of ``words`` into lines ``prefix + ...`` of at most ``limit`` columns."""
    out: list[str] = []
    current = ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if current and width(prefix + candidate) > limit:
            out.append(prefix + current)
            current = word
        else:
            current = candidate
    if current:
        out.append(prefix + current)
    return out


def _insertable_rows(source: str) -> set[int]:
    """0-based rows before which a new line may be inserted (not inside a token or after ``\\``)."""
    ok: set[int] = set()
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.INDENT, tokenize.DEDENT):
            continue
        row = tok.start[0] - 1
        if prev is None or (prev.type in (tokenize.NEWLINE, tokenize.NL) and prev.end[0] - 1 < row):
            ok.add(row)
        prev = tok
    return ok


def fix_comments(source: str, limit: int) -> str:
    """Rewrap over-long ``#`` comments into several comment lines at the same indent."""
    lines = source.split("\n")
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    ]
    insertable = _insertable_rows(source)
    for tok in reversed(toks):
        row, col = tok.start[0] - 1, tok.start[1]
        line = lines[row]
        if width(line) <= limit or PRAGMA.search(tok.string) or "# fmt:" in line:
            continue
        m = re.match(r"#+:?\s*", tok.string)
        assert m
        marker = m.group(0).rstrip() + " "
        words = tok.string[m.end() :].split()
        if len(words) < 2:
            continue
        code = line[:col]
        if code.strip():  # a trailing comment: move it above its line
            if row not in insertable or width(code.rstrip()) > limit:
                continue
            prefix = indent_of(line) + marker
            lines[row] = code.rstrip()
            lines[row:row] = _wrap_words(words, prefix, limit)
            continue
        prefix = code + marker
        nxt = lines[row + 1] if row + 1 < len(lines) else ""
        nxt_text = nxt[len(prefix) :] if nxt.startswith(prefix) else ""
        merge = (
            nxt_text
            and not nxt_text[0].isspace()
            and not LIST_ITEM.match(nxt_text)
            and not PRAGMA.search(nxt)
            and width(nxt) <= limit + 200
            and not tok.string.rstrip().endswith((":", "."))
        )
        if merge:
            words += nxt_text.split()
            del lines[row + 1]
        lines[row : row + 1] = _wrap_words(words, prefix, limit)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# String literals


def split_points(body: str, raw: bool, is_f: bool) -> list[int]:
    """Indices just after each space in ``body`` that lies outside ``{...}`` and escapes."""
    points: list[int] = []
    i, depth, quote = 0, 0, ""
    while i < len(body):
        c = body[i]
        if depth:
            if quote:
                quote = "" if c == quote else quote
            elif c in "'\"":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
            continue
        if c == "\\":
            if not raw and body.startswith("N{", i + 1):
                end = body.find("}", i)
                i = end + 1 if end > 0 else len(body)
            else:
                i += 2
            continue
        if is_f and c in "{}":
            if body.startswith(c * 2, i):
                i += 2
                continue
            if c == "{":
                depth = 1
            i += 1
            continue
        if c == " ":
            points.append(i + 1)
        i += 1
    return [p for p in points if 0 < p < len(body)]


def split_literal(token: str, room: int, first_room: int | None = None) -> list[str] | None:
    """``token`` as adjacent literals of about ``room`` columns each (the first one
    ``first_room``), or ``None``."""
    m = STRING_PREFIX.match(token)
    if not m or len(m.group(2)) == 3:
        return None
    prefix, quote = m.groups()
    body = token[m.end() : -1]
    raw, is_f = "r" in prefix.lower(), "f" in prefix.lower()
    points = split_points(body, raw, is_f)
    if not points:
        return None
    pieces: list[str] = []
    start = 0
    overhead = len(prefix) + 2
    while True:
        this_room = first_room if first_room is not None and not pieces else room
        if width(body[start:]) + overhead <= this_room:
            break
        fits = [p for p in points if p > start and width(body[start:p]) + overhead <= this_room]
        later = [p for p in points if p > start]
        if not later:
            break
        cut = fits[-1] if fits else later[0]
        pieces.append(body[start:cut])
        start = cut
    pieces.append(body[start:])
    if len(pieces) < 2:
        return None
    out = []
    for piece in pieces:
        p = prefix
        if is_f and "{" not in piece and "}" not in piece:
            p = p.replace("f", "").replace("F", "")
        out.append(f"{p}{quote}{piece}{quote}")
    return out


def _merge_into(piece: str, nxt: str) -> str | None:
    """``piece`` + ``nxt`` (two literals) as one literal of ``nxt``'s kind, or ``None`` if their
    kinds differ (quote, raw, bytes) or ``piece`` holds fields and ``nxt`` is no f-string."""
    a, b = STRING_PREFIX.match(piece), STRING_PREFIX.match(nxt)
    if not a or not b or a.group(2) != b.group(2) or len(b.group(2)) == 3:
        return None
    pa, pb = a.group(1).lower(), b.group(1).lower()
    if pa.replace("f", "").replace("u", "") != pb.replace("f", "").replace("u", ""):
        return None
    body = piece[a.end() : -1]
    if ("f" in pa) != ("f" in pb) and ("{" in body or "}" in body):
        return None
    return nxt[: b.end()] + body + nxt[b.end() :]


def fix_strings(source: str, limit: int) -> str:
    """Split over-long single-line string literals at spaces into adjacent literals; when the
    literal is followed by another one (an implicit concatenation), the overflow moves into it
    (the next pass splits that one if it is now too long)."""
    lines = source.split("\n")
    docrows: set[int] = set()
    for node in _docstring_nodes(ast.parse(source)):
        docrows.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.NL, tokenize.COMMENT)
    ]
    edits: dict[int, list[tuple[int, int, str]]] = {}
    done: set[int] = set()  # indices of tokens already rewritten in this pass
    for k, tok in enumerate(toks):
        if tok.type != tokenize.STRING or tok.start[0] != tok.end[0] or k in done:
            continue
        row = tok.start[0] - 1
        line = lines[row]
        if row in docrows or width(line) <= limit or "# fmt: skip" in line:
            continue
        ind = len(indent_of(line))
        # a literal that ends within the limit, closing punctuation included, is not the cause
        if width(line[: tok.end[1]]) <= limit - 2 and width(tok.string) <= limit - ind - 8:
            continue
        before = line[: tok.start[1]]
        # after ``name=`` or ``key: `` ruff keeps the first piece on this line
        first_room = limit - width(before) - 2 if re.search(r"(\w=|:\s)$", before) else None
        pieces = split_literal(tok.string, limit - ind - 4 - 2, first_room)
        if not pieces:
            continue
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        merged = None
        if (
            nxt is not None
            and nxt.type == tokenize.STRING
            and nxt.start[0] == tok.end[0] + 1
            and nxt.start[0] == nxt.end[0]
            and not lines[nxt.start[0] - 1][: nxt.start[1]].strip()
        ):
            m = STRING_PREFIX.match(tok.string)
            assert m
            prefix, quote = m.groups()
            tail = "".join(STRING_PREFIX.sub("", p, count=1)[:-1] for p in pieces[1:])
            if "{" not in tail and "}" not in tail:
                prefix = prefix.replace("f", "").replace("F", "")
            merged = _merge_into(f"{prefix}{quote}{tail}{quote}", nxt.string)
        edits.setdefault(row, []).append(
            (tok.start[1], tok.end[1], pieces[0] if merged else " ".join(pieces))
        )
        if merged:
            edits.setdefault(nxt.start[0] - 1, []).append((nxt.start[1], nxt.end[1], merged))
            done.add(k + 1)
    for row, row_edits in edits.items():
        line = lines[row]
        for start, end, text in sorted(row_edits, reverse=True):
            line = line[:start] + text + line[end:]
        lines[row] = line
    return "\n".join(lines)


def _split_triple_once(source: str, limit: int) -> str | None:
    """Break one over-long line inside a triple-quoted (non-raw, non-docstring) literal with a
    backslash-newline after a space, which leaves the literal's value as it was; ``None`` if
    there is none to break."""
    lines = source.split("\n")
    docstarts = {(n.lineno, n.col_offset) for n in _docstring_nodes(ast.parse(source))}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING or tok.start[0] == tok.end[0] or tok.start in docstarts:
            continue
        m = STRING_PREFIX.match(tok.string)
        if not m or len(m.group(2)) != 3 or "r" in m.group(1).lower():
            continue
        rows = range(tok.start[0] - 1, tok.end[0])
        if all(width(lines[r]) <= limit for r in rows):
            continue
        body = tok.string[m.end() : -3]
        row, col = tok.start[0] - 1, tok.start[1] + m.end()
        where: list[tuple[int, int]] = []  # (row, col) of each body character
        for c in body:
            where.append((row, col))
            row, col = (row + 1, 0) if c == "\n" else (row, col + 1)
        cuts: dict[int, list[int]] = {}
        for p in split_points(body, raw=False, is_f="f" in m.group(1).lower()):
            r, c = where[p]
            if body[p - 1] == " " and body[p] != "\n":
                cuts.setdefault(r, []).append(c)
        for r in rows:
            line = lines[r]
            if width(line) <= limit:
                continue
            fitting = [
                c
                for c in cuts.get(r, [])
                if width(line[:c]) + 1 <= limit and line[: c - 1].strip() and line[c - 2] != " "
            ]
            if fitting:
                # prefer a space outside the quotes of a string inside the literal (code, SQL)
                outside = [c for c in fitting if all(line[:c].count(q) % 2 == 0 for q in "'\"")]
                c = (outside or fitting)[-1]
                lines[r : r + 1] = [line[:c] + "\\", line[c:]]
                return "\n".join(lines)
    return None


def fix_triple_quoted(source: str, limit: int) -> str:
    """Break over-long lines inside triple-quoted data literals (prompts, SQL, code) with
    backslash-newlines: the literal's value, and so the program, stays the same."""
    while (new := _split_triple_once(source, limit)) is not None:
        source = new
    return source


# --------------------------------------------------------------------------------------------
# Driver


@dataclass
class Result:
    """What happened to one file."""

    path: Path
    changed: bool = False
    refused: str | None = None
    left: list[tuple[int, str]] = field(default_factory=list)


def ruff_command(explicit: str | None) -> list[str]:
    """The command that runs ruff."""
    if explicit:
        return explicit.split()
    found = shutil.which("ruff")
    return [found] if found else [sys.executable, "-m", "ruff"]


def ruff_format(source: str, path: Path, ruff: list[str]) -> str:
    """``source`` as ``ruff format`` lays it out (with the project's settings for ``path``)."""
    proc = subprocess.run(
        [*ruff, "format", "--stdin-filename", str(path), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ruff format failed on {path}: {proc.stderr.strip()}")
    return proc.stdout


def long_lines(source: str, limit: int) -> list[tuple[int, str]]:
    """(1-based row, text) of each line over ``limit`` that ruff would report."""
    out = []
    for n, line in enumerate(source.split("\n"), 1):
        if width(line) <= limit:
            continue
        if " " not in line.strip():  # ruff ignores a single over-long word
            continue
        if re.search(r"https?://\S+$", line) and " " not in line.rsplit("://", 1)[1]:
            if width(line[: line.rfind(" ") + 1]) <= limit:
                continue
        out.append((n, line))
    return out


def fix_source(source: str, path: Path, limit: int, ruff: list[str] | None) -> str:
    """``source`` after the rewrites, repeated with ``ruff format`` until nothing changes."""
    current = source
    for _ in range(MAX_PASSES):
        new = fix_docstrings(current, limit)
        new = fix_triple_quoted(fix_strings(fix_comments(new, limit), limit), limit)
        if ruff is not None and new != current:
            new = ruff_format(new, path, ruff)
        if new == current:
            break
        current = new
    return current


def process(path: Path, limit: int, ruff: list[str] | None, diff: bool) -> Result:
    """Fix one file (or print its diff); refuse if the behaviour check fails."""
    result = Result(path)
    old = path.read_text(encoding="utf-8")
    new = fix_source(old, path, limit, ruff)
    result.left = long_lines(new, limit)
    if new == old:
        return result
    why = same_behaviour(old, new)
    if why:
        result.refused = why
        result.left = long_lines(old, limit)
        return result
    result.changed = True
    if diff:
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"
            )
        )
    else:
        path.write_text(new, encoding="utf-8")
    return result


def python_files(paths: Iterable[str]) -> Iterator[Path]:
    """Every ``.py`` file under ``paths``."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*.py") if ".venv" not in q.parts)
        else:
            yield p


def configured_limit(start: Path) -> int:
    """``[tool.ruff] line-length`` of the nearest pyproject.toml above ``start`` (default 88)."""
    for d in [start.resolve(), *start.resolve().parents]:
        f = d / "pyproject.toml"
        if f.is_file():
            ruff = tomllib.loads(f.read_text()).get("tool", {}).get("ruff", {})
            if "line-length" in ruff:
                return int(ruff["line-length"])
    return 88


def check_against(paths: list[Path], rev: str) -> int:
    """Compare each file with its version at git ``rev``; the number that differ."""
    bad = 0
    for path in paths:
        proc = subprocess.run(
            ["git", "show", f"{rev}:./{path.name}"],
            capture_output=True,
            text=True,
            cwd=path.parent,
            check=False,
        )
        if proc.returncode != 0:
            continue  # a new file: nothing to compare with
        old = proc.stdout
        why = same_behaviour(old, path.read_text(encoding="utf-8"))
        if why:
            bad += 1
            print(f"{path}: {why}")
    print(f"{len(paths)} files compared with {rev}, {bad} differ")
    return bad


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("paths", nargs="+", help="files or directories")
    ap.add_argument("--line-length", type=int, help="default: [tool.ruff] line-length")
    ap.add_argument("--diff", action="store_true", help="print a diff, write nothing")
    ap.add_argument("--no-format", action="store_true", help="do not run ruff format")
    ap.add_argument("--ruff", help="command that runs ruff (default: ruff on PATH)")
    ap.add_argument(
        "--check-ast",
        action="store_true",
        help="only check that each file does what its version at --against does",
    )
    ap.add_argument("--against", default="HEAD", help="git revision for --check-ast")
    ap.add_argument("--quiet", action="store_true", help="do not list lines left too long")
    args = ap.parse_args(argv)
    files = list(python_files(args.paths))
    if args.check_ast:
        return 1 if check_against([f.resolve() for f in files], args.against) else 0
    limit = args.line_length or configured_limit(Path.cwd())
    ruff = None if args.no_format else ruff_command(args.ruff)
    changed = refused = left = 0
    for f in files:
        r = process(f, limit, ruff, args.diff)
        changed += r.changed
        if r.refused:
            refused += 1
            print(f"{f}: NOT WRITTEN ({r.refused})", file=sys.stderr)
        left += len(r.left)
        if not args.quiet:
            for n, line in r.left:
                print(f"{f}:{n}: {width(line)} > {limit}: {line.strip()[:80]}")
    print(
        f"{len(files)} files, {changed} changed, {refused} refused, {left} lines left over {limit}",
        file=sys.stderr,
    )
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
