"""What an environment is written from: a brief, or authentic documentation.

- ``brief:TEXT``: a sentence or a paragraph (domain, entities, a few user stories);
- ``brief:PATH``: a ``.toml`` or ``.json`` file with ``domain``, ``entities`` (list), ``stories``
  (list) and optionally ``name`` and ``notes``; or a ``.md``/``.txt`` file read as text;
- ``doc:PATH``: documentation of a real system: an API reference in Markdown or HTML, a CLI
  manual (plain text or a man page), or a database schema (``.sql``). HTML is reduced to its text
  (scripts and styles dropped). Long documents are cut to ``max_chars``, and the cut is recorded.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Source", "SourceError", "load_source"]


class SourceError(ValueError):
    """A source that cannot be read; the message says what to do."""


@dataclass
class Source:
    """A brief or a document, as the prompts see it."""

    kind: str
    """``brief`` or ``doc``."""
    text: str
    """What goes into the prompt."""
    domain: str
    """A short name of the domain (for the environment's id and retrieval)."""
    path: str = ""
    """The file it was read from, if any."""
    sha256: str = ""
    """Hash of the full text read (before any cut)."""
    format: str = "text"
    """``text``, ``markdown``, ``html``, ``manual``, ``sql``, ``toml`` or ``json``."""
    cut: int = 0
    """Characters left out of the prompt (0: all of it is in)."""


class _Text(html.parser.HTMLParser):
    _SKIP = {"script", "style", "noscript", "svg", "nav", "footer"}
    _BREAK = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "table",
        "section",
        "dt",
        "dd",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skip += 1
        elif tag in self._BREAK:
            self.parts.append("\n")
        if tag in ("h1", "h2", "h3", "h4"):
            self.parts.append("#" * int(tag[1]) + " ")
        if tag == "code" and not self.skip:
            self.parts.append("`")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self._BREAK:
            self.parts.append("\n")
        if tag == "code" and not self.skip:
            self.parts.append("`")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(markup: str) -> str:
    """The readable text of an HTML page."""
    p = _Text()
    p.feed(markup)
    p.close()
    text = "".join(p.parts)
    return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", text)).strip()


def _slug(text: str) -> str:
    words = [
        w
        for w in re.findall(r"[a-z0-9]+", text.lower())
        if w not in ("a", "an", "the", "of", "for", "with", "and")
    ]
    return "-".join(words[:3]) or "env"


_MAN = re.compile(r".\x08")  # overstrike in formatted man pages


def _brief_file(path: Path, text: str) -> tuple[str, str, str]:
    data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if not isinstance(data, dict) or not data.get("domain"):
        raise SourceError(
            f"{path}: a brief file needs at least 'domain' (and 'entities', 'stories')"
        )
    lines = [f"Domain: {data['domain']}"]
    if data.get("name"):
        lines.append(f"Name: {data['name']}")
    for key, title in (("entities", "Entities"), ("stories", "User stories")):
        items = data.get(key) or []
        if isinstance(items, str):
            items = [items]
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    if data.get("notes"):
        lines.append(f"Notes: {data['notes']}")
    return "\n".join(lines), str(data["domain"]), path.suffix[1:]


def load_source(kind: str, value: str, *, max_chars: int = 16000) -> Source:
    """Read ``brief:…`` or ``doc:…`` (see the module docstring); raises :class:`SourceError`."""
    value = value.strip()
    if not value:
        raise SourceError(f"--source {kind}: needs a value: {kind}:'a short brief' or {kind}:PATH")
    path = Path(value).expanduser()
    is_file = len(value) < 1024 and "\n" not in value and path.is_file()
    if kind == "doc" and not is_file:
        raise SourceError(
            f"--source doc:{value[:80]!r}: no such file (doc: takes the path of a Markdown, "
            "HTML, manual or .sql file)"
        )
    if not is_file:
        return Source(
            "brief", value, _slug(value), sha256=hashlib.sha256(value.encode()).hexdigest()
        )
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    digest = hashlib.sha256(raw.encode()).hexdigest()
    suffix = path.suffix.lower()
    if kind == "brief" and suffix in (".toml", ".json"):
        try:
            text, domain, fmt = _brief_file(path, raw)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise SourceError(f"{path}: not a valid brief file: {exc}") from None
        return Source("brief", text, _slug(domain), str(path), digest, fmt)
    if suffix in (".html", ".htm"):
        text, fmt = html_text(raw), "html"
    elif suffix in (".md", ".markdown"):
        text, fmt = raw, "markdown"
    elif suffix == ".sql":
        text, fmt = raw, "sql"
    elif re.fullmatch(r"\.[1-9]", suffix) or "\x08" in raw:
        text, fmt = _MAN.sub("", raw), "manual"
    else:
        text, fmt = raw, "text"
    text = text.strip()
    if not text:
        raise SourceError(f"{path} holds no text")
    cut = max(0, len(text) - max_chars)
    if cut:
        text = text[:max_chars] + f"\n[... {cut} more characters not shown]"
    return Source(kind, text, _slug(path.stem), str(path), digest, fmt, cut)
