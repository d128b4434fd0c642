"""The tool dependency graph of one environment (networkx), and how to draw and store it.

There is an edge ``A -> B`` when

- **an output of A can feed a parameter of B** (edge attribute ``feeds``: parameter -> how):
  - *by resource*: A returns rows of the table whose id B's parameter holds (``link: self``:
    ``list_orders -> cancel_order.order_id``), or rows with a foreign key to it (``link: fk``,
    ``field``: ``get_order -> get_customer.customer_id`` through ``orders.customer_id``);
  - *by name*: A returns a field named like B's parameter that identifies a row (``email``,
    ``sku``, ``*_id``);
  - *by type/format*: A returns a field with the same ``format`` as B's parameter (``email``,
    ``uri``);
- or **A writes state B reads** (edge attribute ``state``: the tables): ``create_order ->
  list_orders``.

Each node carries the tool's kind, resource, whether it mutates, and ``depth``: the fewest
levels of lookups needed before it can be called with nothing but what a person knows (0 for a
tool whose required inputs are all literals, like ``list_customers`` or ``create_customer``).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkernel_kit.naming import KEY_LIKE, is_id_name
from envkernel_kit.tools import ParamInfo, Schema, ToolInfo, output_fields

if TYPE_CHECKING:  # networkx is imported where a graph is built, not when the plugin loads
    import networkx as nx

INF = 10**6
LINK_FORMATS = frozenset({"email", "uri", "url", "hostname", "ipv4", "iban"})
"""String formats that identify a thing well enough to link two tools by."""


def produced_fields(
    a: ToolInfo, schema: Schema, observed: dict[str, set[str]]
) -> dict[str, dict[str, Any]]:
    """Field -> schema of the rows ``a`` returns (declared, observed, and its table's columns)."""
    fields = dict(output_fields(a.spec))
    for f in observed.get(a.name, set()):
        fields.setdefault(f, {})
    if a.from_model and a.resource and a.kind != "delete":
        for f, fmt in schema.formats.get(a.resource, {}).items():
            fields.setdefault(f, {"format": fmt})
        for f in schema.refs.get(a.resource, {}):
            fields.setdefault(f, {})
        fields.setdefault(schema.key(a.resource), {})
    return fields


def feeds(
    a: ToolInfo, b: ToolInfo, schema: Schema, fields: dict[str, dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """How the output of ``a`` can fill each parameter of ``b`` (empty when it cannot)."""
    out: dict[str, list[dict[str, Any]]] = {}
    if a.name == b.name or a.kind == "delete":
        return out
    for p in b.params.values():
        if p.is_id and p.resource:
            ways = _id_ways(a, p, schema, fields)
        elif p.role in ("value", "filter", "search") and a.resource != b.resource:
            ways = _value_ways(a, p, schema, fields)
        else:
            ways = []
        if ways:
            out[p.name] = ways
    return out


def _id_ways(
    a: ToolInfo, p: ParamInfo, schema: Schema, fields: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """How ``a``'s rows fill the id parameter ``p``: by their own key (``self``), by a foreign key
    to ``p``'s table (``fk``), else by a field named like ``p`` (``name``)."""
    own_key = schema.key(a.resource)
    ways: list[dict[str, Any]] = []
    if a.resource == p.resource and (own_key in fields or a.from_model):
        ways.append({"via": "resource", "link": "self", "field": own_key})
    for f in fields:
        if f != own_key and schema.ref(a.resource, f) == p.resource:
            ways.append({"via": "resource", "link": "fk", "field": f})
    if not ways and p.name in fields and is_id_name(p.name) and a.resource != p.resource:
        ways.append({"via": "name", "link": "fk", "field": p.name})
    return ways


def _value_ways(
    a: ToolInfo, p: ParamInfo, schema: Schema, fields: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """How ``a``'s rows fill the value, filter or search parameter ``p``: a field of the same name
    that identifies a row, or one of the same identifying format (``LINK_FORMATS``)."""
    fmt = (p.schema or {}).get("format")
    unique = schema.unique.get(a.resource or "", set())
    ways: list[dict[str, Any]] = []
    for f, fs in fields.items():
        if f == p.name and (f in KEY_LIKE or f in unique):
            ways.append({"via": "name", "link": "key", "field": f})
        elif fmt in LINK_FORMATS and (fs or {}).get("format") == fmt:
            ways.append({"via": "format", "link": "key", "field": f})
    return ways


def build_graph(
    infos: dict[str, ToolInfo],
    schema: Schema,
    observed: dict[str, set[str]] | None = None,
    dead: set[str] | None = None,
) -> nx.DiGraph:
    """The tool dependency graph (see the module docstring); ``dead`` tools are left out."""
    observed = observed or {}
    dead = dead or set()
    import networkx as nx

    g = nx.DiGraph()
    live = {n: i for n, i in infos.items() if n not in dead}
    for n, i in live.items():
        g.add_node(
            n,
            kind=i.kind,
            resource=i.resource,
            mutates=i.mutates,
            verb=i.verb,
            reads=sorted(i.reads),
            writes=sorted(i.writes),
        )
    fields = {n: produced_fields(i, schema, observed) for n, i in live.items()}
    for a in live.values():
        for b in live.values():
            if a.name == b.name:
                continue
            f = feeds(a, b, schema, fields[a.name])
            state = sorted(a.writes & b.reads)
            if f or state:
                g.add_edge(a.name, b.name, feeds=f, state=state)
    depths(g, infos)
    return g


def producers(g: nx.DiGraph, tool: str, param: str) -> list[tuple[str, dict[str, Any]]]:
    """``(producer, way)`` pairs that can fill ``param`` of ``tool``."""
    out = []
    for a in g.predecessors(tool):
        for way in g.edges[a, tool].get("feeds", {}).get(param, []):
            out.append((a, way))
    return out


def usable_producer(
    g: nx.DiGraph,
    infos: dict[str, ToolInfo],
    a: str,
    way: dict[str, Any],
    param_resource: str | None,
) -> bool:
    """False for a producer that only hands back what it was given: a lookup of a row by its own
    key feeding that same key (``get_order -> cancel_order``), or a list under an owner feeding
    that owner's id (``list_customer_orders -> get_customer``)."""
    ia = infos[a]
    if (
        way["link"] == "self"
        and ia.kind == "get"
        and any(p.role == "key" for p in ia.params.values())
    ):
        return False
    if (
        way["link"] == "fk"
        and not ia.mutates
        and any(p.required and p.is_id and p.field == way["field"] for p in ia.params.values())
    ):
        return False
    return True


def depths(g: nx.DiGraph, infos: dict[str, ToolInfo]) -> dict[str, int]:
    """Fewest lookup levels before each tool can be called (stored as node attribute ``depth``).

    A required id parameter of an entity no tool can look up (from literals only) is given
    literally, so it does not count. Sets graph attribute ``lookupable``: tables whose ids can
    be looked up.
    """
    d: dict[str, int] = {}
    literal: set[tuple[str, str]] = set()
    own = {i.resource for n, i in infos.items() if n in g and i.resource}
    for _outer in range(8):
        d = _relax(g, infos, literal)
        more = _next_literal(_unreached(g, infos, d, literal), own)
        if not more:
            break
        literal |= more
    lookupable = {infos[a].resource for a in g.nodes if d[a] < INF and infos[a].resource}
    g.graph["lookupable"] = sorted(t for t in lookupable if t)
    g.graph["literal_needs"] = sorted(f"{n}.{p}" for n, p in literal)
    for n in g.nodes:
        g.nodes[n]["depth"] = d[n] if d[n] < INF else -1
    return d


def _unreached(
    g: nx.DiGraph, infos: dict[str, ToolInfo], d: dict[str, int], literal: set[tuple[str, str]]
) -> list[tuple[str, ParamInfo]]:
    """The needs (tool, parameter) not given literally that no producer at a finite depth fills."""
    return [
        (n, p)
        for n in g.nodes
        for p in infos[n].needs()
        if (n, p.name) not in literal and _producer_depth(g, infos, d, n, p) >= INF
    ]


def _next_literal(
    unreached: list[tuple[str, ParamInfo]], own: set[str | None]
) -> set[tuple[str, str]]:
    """The unreached needs to give literally next: the ids of entities no tool is about (Ably's
    account) first, so that the rest may chain from a call that takes them; else all of them."""
    first = {(n, p.name) for n, p in unreached if p.resource not in own}
    return first or {(n, p.name) for n, p in unreached}


def _producer_depth(
    g: nx.DiGraph, infos: dict[str, ToolInfo], d: dict[str, int], n: str, p: ParamInfo
) -> int:
    """The depth of the shallowest usable producer of ``n``'s parameter ``p`` (INF: none)."""
    return min(
        (
            d[a]
            for a, way in producers(g, n, p.name)
            if a != n and usable_producer(g, infos, a, way, p.resource)
        ),
        default=INF,
    )


def _relax(
    g: nx.DiGraph, infos: dict[str, ToolInfo], literal: set[tuple[str, str]]
) -> dict[str, int]:
    """Each tool's depth with the ``literal`` needs given as literals: 0 with no other need, else
    one more than its deepest need's shallowest producer (a fixed point; INF: unreachable)."""
    needs = {n: [p for p in infos[n].needs() if (n, p.name) not in literal] for n in g.nodes}
    d = {n: 0 if not needs[n] else INF for n in g.nodes}
    changed = True
    while changed:
        changed = False
        for n in g.nodes:
            if not needs[n]:
                continue
            worst = max(_producer_depth(g, infos, d, n, p) for p in needs[n])
            new = worst + 1 if worst < INF else INF
            if new < d[n]:
                d[n] = new
                changed = True
    return d


def _jsonable(v: Any) -> Any:
    if isinstance(v, set):
        return sorted(v)
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def graph_json(g: nx.DiGraph) -> dict[str, Any]:
    """The graph in networkx node-link form (JSON-ready)."""
    import networkx as nx

    data = nx.node_link_data(g, edges="links")
    return _jsonable(data)


def graph_svg(g: nx.DiGraph, title: str = "") -> str:
    """A small SVG drawing: tools on a circle, data edges solid, state-only edges dashed."""
    nodes = sorted(g.nodes, key=lambda n: (g.nodes[n].get("resource") or "", n))
    n = max(1, len(nodes))
    size = 260 + 38 * n
    cx = cy = size / 2
    r = size / 2 - 130
    pos = {
        v: (
            cx + r * math.cos(2 * math.pi * i / n - math.pi / 2),
            cy + r * math.sin(2 * math.pi * i / n - math.pi / 2),
        )
        for i, v in enumerate(nodes)
    }
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size:.0f}" height="{size:.0f}" '
        f'viewBox="0 0 {size:.0f} {size:.0f}" '
        'font-family="sans-serif" font-size="11">',
        '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#555"/></marker></defs>',
        f'<text x="10" y="18" font-size="14">{html.escape(title)}</text>',
        '<text x="10" y="36" fill="#666">solid: an output feeds a parameter; dashed: writes '
        "state the other reads; "
        "orange: changes state</text>",
    ]
    for a, b, data in g.edges(data=True):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        dx, dy = x2 - x1, y2 - y1
        dist = math.hypot(dx, dy) or 1.0
        x1, y1 = x1 + dx / dist * 9, y1 + dy / dist * 9
        x2, y2 = x2 - dx / dist * 11, y2 - dy / dist * 11
        dash = "" if data.get("feeds") else ' stroke-dasharray="4 3"'
        tip = html.escape(
            ", ".join(sorted(data.get("feeds", {}))) or "state: " + ", ".join(data.get("state", []))
        )
        out.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" '
            f'stroke-width="0.8" marker-end="url(#a)"{dash}><title>{html.escape(a)} -&gt; '
            f"{html.escape(b)}: {tip}</title></line>"
        )
    for v in nodes:
        x, y = pos[v]
        color = "#f28e2b" if g.nodes[v].get("mutates") else "#4e79a7"
        ang = math.atan2(y - cy, x - cx)
        tx, ty = x + 14 * math.cos(ang), y + 14 * math.sin(ang)
        anchor = "start" if math.cos(ang) > 0.2 else ("end" if math.cos(ang) < -0.2 else "middle")
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="{color}"><title>{html.escape(v)} '
            f"(depth {g.nodes[v].get('depth')})</title></circle>"
        )
        out.append(
            f'<text x="{tx:.1f}" y="{ty + 4:.1f}" text-anchor="{anchor}">{html.escape(v)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def write_graph(g: nx.DiGraph, folder: Path, title: str = "") -> None:
    """Write ``graph.json`` (node-link) and ``graph.svg`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.json").write_text(json.dumps(graph_json(g), indent=1, sort_keys=True))
    (folder / "graph.svg").write_text(graph_svg(g, title))
