"""The HTML page of one session: a pure function of its events (and the links and prices the
caller passes), self-contained (inline CSS, script and SVG; nothing loaded from anywhere).

Long lists (the events, the live context, usage, the trail) are embedded once as escaped
fragments in a JSON block and shown 200 at a time by the page's script, so a 10,000-event
session opens at once; the token curve is drawn here as one SVG polyline with a point per
event.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionstore.events import InvalidArgument, RecordedEvent, brief
from sessionstore.projections._fold import ContextFold
from sessionstore.projections._tool_map import ToolMap
from sessionstore.projections._view_assets import PAGE_SCRIPT, PAGE_STYLE
from sessionstore.projections._view_model import (
    MARK_KINDS,
    CompactionShown,
    SessionView,
    UsageTurn,
    session_view,
)
from sessionstore.projections._view_parts import (
    command_html,
    error_html,
    esc,
    event_html,
    file_html,
    message_html,
    page_link,
    request_html,
    seq_link,
    todo_html,
)

PRICE_KEYS = ("input", "output", "cached", "cache_write")
"""What a price table gives per model, in money per million tokens: `input` and `output`
always; `cached` (cache reads) and `cache_write` default to `input`."""

WIDTH, HEIGHT, PAD = 960, 260, 48


@dataclass(frozen=True, slots=True)
class SessionLink:
    """Another session a page links to (its parent, a fork, a sub-agent), by the relative
    address `view --all` writes its page at (`<id>.html`)."""

    session_id: str
    title: str
    seq: int | None = None
    """The seq of the parent a fork starts from, when it is one."""


def check_prices(prices: object) -> dict[str, dict[str, float]]:
    """A price table as the view reads it: `{model: {"input": ..., "output": ..., "cached":
    ...}}` in money per million tokens. `InvalidArgument` for anything else."""
    if not isinstance(prices, Mapping):
        raise InvalidArgument(f"prices must map a model to its prices, got {brief(prices)}")
    table: dict[str, dict[str, float]] = {}
    for model, entry in prices.items():
        if not isinstance(model, str) or not isinstance(entry, Mapping):
            raise InvalidArgument(
                f"prices: each model name maps to {{'input': ..., 'output': ...}}, "
                f"got {brief(model)}: {brief(entry)}"
            )
        unknown = sorted(str(key) for key in entry if key not in PRICE_KEYS)
        if unknown:
            raise InvalidArgument(
                f"prices of {model!r}: unknown key(s) {', '.join(unknown)}; "
                f"known: {', '.join(PRICE_KEYS)}"
            )
        missing = [key for key in ("input", "output") if key not in entry]
        if missing:
            raise InvalidArgument(f"prices of {model!r}: no {' or '.join(missing)} price")
        row: dict[str, float] = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidArgument(
                    f"prices of {model!r}: {key} must be a number >= 0, got {brief(value)}"
                )
            row[str(key)] = float(value)
        row.setdefault("cached", row["input"])
        row.setdefault("cache_write", row["input"])
        table[model] = row
    return table


def view_page(
    events: Iterable[RecordedEvent],
    start: ContextFold | None = None,
    *,
    parent: SessionLink | None = None,
    children: Sequence[SessionLink] = (),
    prices: Mapping[str, Mapping[str, float]] | None = None,
    tools: ToolMap | None = None,
) -> str:
    """The page of one session's events (folded on top of `start`, a fork's parent at the
    fork), linking its `parent` and `children` (forks, sub-agents); with `prices`, the cost
    of each turn."""
    table = None if prices is None else check_prices(prices)
    view = session_view(events, start, tools=tools)
    return render(view, parent=parent, children=children, prices=table)


def render(
    view: SessionView,
    *,
    parent: SessionLink | None = None,
    children: Sequence[SessionLink] = (),
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    header = view.header
    title = header.title or view.session_id
    kinds = {mark.seq: mark.kind for mark in view.marks}
    first = view.rows[0].seq if view.rows else 0
    last = view.rows[-1].seq if view.rows else 0
    price = None if prices is None else prices.get(header.model)
    trail = view.trail
    texts: dict[str, str] = {}
    data: dict[str, Any] = {
        "first": first,
        "last": last,
        "versions": [
            [version.enter, version.leave, version.message.id, message_html(version, texts)]
            for version in view.versions
        ],
        "texts": texts,
        "seqs": [row.seq for row in view.rows],
        "originals": {
            part_id: text
            for version in view.versions
            for part_id, text in version.originals.items()
        },
        "lists": {
            "events": [event_html(row, kinds.get(row.seq)) for row in view.rows],
            "usage": [_usage_row(turn, price) for turn in view.usage],
            "requests": [request_html(request) for request in trail.user_messages],
            "files": [file_html(file) for file in trail.files],
            "commands": [command_html(command) for command in trail.commands],
            "errors": [error_html(error) for error in trail.errors],
            "todos": [todo_html(todo) for todo in trail.todos],
        },
    }
    return "".join(
        [
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)} · sessionstore</title><style>{PAGE_STYLE}</style></head>",
            "<body><main>",
            _header(view, title, parent, children),
            _curve(view),
            '<section id="replay"><h2>Replay</h2><div class="controls">',
            f'<label>context after event <input type="range" id="seq-a" min="{first}" '
            f'max="{last}" value="{last}"><input type="number" id="seq-a-n" min="{first}" '
            f'max="{last}" value="{last}"></label>',
            f'<label>compare with event <input type="range" id="seq-b" min="{first}" '
            f'max="{last}" value="{last}"><input type="number" id="seq-b-n" min="{first}" '
            f'max="{last}" value="{last}"></label>',
            '</div><p id="replay-info" class="meta"></p>',
            '<div class="columns"><div><h3>Conversation as the model saw it</h3>',
            '<div id="context" class="pager"></div></div>',
            '<div><h3>Diff</h3><div id="diff"></div></div></div></section>',
            '<section id="events"><h2>Events</h2><ol id="event-list" class="pager"></ol>',
            "</section>",
            _compactions(view.compactions),
            _trail_sections(),
            _usage(view.usage, header.model, price, prices is not None),
            '<script type="application/json" id="view-data">',
            _script_json(data),
            f"</script><script>{PAGE_SCRIPT}</script></main></body></html>\n",
        ]
    )


def _script_json(data: object) -> str:
    """JSON that nothing inside can end its `<script>` block early: a browser leaves a
    script's text only at `</` (`</script`, in any case) or after `<!--`, and neither is left
    in it (`<\\/` and `\\u003c!--` are the same JSON strings)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


def _header(
    view: SessionView, title: str, parent: SessionLink | None, children: Sequence[SessionLink]
) -> str:
    header = view.header
    window = "unknown"
    if header.context_window is not None:
        window = f"{header.context_window:,} tokens ({header.output_reserve:,} reserved for output)"
    facts = [
        ("session", f"<code>{esc(view.session_id)}</code>"),
        ("model", esc(header.model or "unnamed")),
        ("window", esc(window)),
        ("events", f"{len(view.rows):,}"),
        ("live tokens", f"{view.live_tokens:,}"),
    ]
    if header.app or header.user or header.tags:
        facts.append(("app", esc(header.app or "-")))
        facts.append(("user", esc(header.user or "-")))
        facts.append(("tags", esc(", ".join(header.tags) or "-")))
    if parent is not None:
        at = f" at event {parent.seq}" if parent.seq is not None else ""
        facts.append(
            (
                "forked from",
                f'<a href="{page_link(parent.session_id)}">{esc(parent.title or parent.session_id)}'
                f"</a> <code>{esc(parent.session_id)}</code>{at}",
            )
        )
    if children:
        links = ", ".join(
            f'<a href="{page_link(child.session_id)}">{esc(child.title or child.session_id)}</a>'
            for child in children
        )
        facts.append(("forks and sub-agents", links))
    rows = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return f'<header class="page"><h1>{esc(title)}</h1><dl class="facts">{rows}</dl></header>'


def _curve(view: SessionView) -> str:
    """The live context's size after each event, the usable window and the trigger, and a
    mark per event that changed how the context is shown."""
    rows = view.rows
    if not rows:
        return ""
    first, last = rows[0].seq, rows[-1].seq
    top = max([row.tokens for row in rows] + [view.usable_window or 0, 1]) * 1.05
    span = max(last - first, 1)

    def x(seq: int) -> float:
        return PAD + (seq - first) / span * (WIDTH - 2 * PAD)

    def y(tokens: float) -> float:
        return HEIGHT - PAD / 2 - tokens / top * (HEIGHT - PAD)

    points = " ".join(f"{x(row.seq):.1f},{y(row.tokens):.1f}" for row in rows)
    lines = []
    for name, tokens in (("usable window", view.usable_window), ("trigger", view.trigger_tokens)):
        if tokens is None:
            continue
        cls = "window" if name == "usable window" else "trigger"
        lines.append(
            f'<line class="limit {cls}" x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(tokens):.1f}" '
            f'y2="{y(tokens):.1f}"/><text class="limit-label" x="{WIDTH - PAD}" '
            f'y="{y(tokens) - 4:.1f}" text-anchor="end">{name} {tokens:,}</text>'
        )
    tokens_at = {row.seq: row.tokens for row in rows}
    marks = "".join(
        f'<g class="mark {mark.kind}" data-seq="{mark.seq}" tabindex="0">'
        f'<line x1="{x(mark.seq):.1f}" x2="{x(mark.seq):.1f}" y1="{PAD / 2}" '
        f'y2="{HEIGHT - PAD / 2}"/><circle cx="{x(mark.seq):.1f}" '
        f'cy="{y(tokens_at[mark.seq]):.1f}" r="5"/>'
        f"<title>event {mark.seq}, {mark.kind}: {esc(mark.text)}</title></g>"
        for mark in view.marks
    )
    legend = "".join(
        f'<span class="key {kind}">{kind}</span>'
        for kind in MARK_KINDS
        if any(mark.kind == kind for mark in view.marks)
    )
    axis = (
        f'<text x="{PAD}" y="{HEIGHT - 4}">event {first}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 4}" text-anchor="end">event {last}</text>'
        f'<text x="4" y="{y(top / 1.05) + 4:.1f}">{int(top / 1.05):,}</text>'
        f'<text x="4" y="{y(0) + 4:.1f}">0</text>'
    )
    return (
        '<section id="curve"><h2>Live context, in tokens, after each event</h2>'
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="token curve">'
        f"{axis}{''.join(lines)}"
        f'<polyline id="tokens" points="{points}"/>'
        f'<line id="cursor" x1="0" x2="0" y1="{PAD / 2}" y2="{HEIGHT - PAD / 2}"/>'
        f'{marks}</svg><p class="legend">{legend}</p></section>'
    )


def _compactions(compactions: Sequence[CompactionShown]) -> str:
    """Each compaction's columns name the versions they show: the page's script fills them
    from the versions it holds, so no message is written into the page twice."""
    if not compactions:
        return '<section id="compactions"><h2>Compactions</h2><p>None.</p></section>'
    blocks = []
    for shown in compactions:
        replaced = " ".join(str(i) for i in shown.replaced)
        summary = "" if shown.summary is None else str(shown.summary)
        blocks.append(
            f'<div class="compaction" id="compaction-{shown.seq}"><h3>'
            f"{seq_link(shown.seq)} {esc(shown.text)}</h3>"
            f'<div class="columns"><div><h4>Replaced ({len(shown.replaced):,} messages)</h4>'
            f'<div class="scroll versions" data-versions="{replaced}"></div></div>'
            f'<div><h4>Summary</h4><div class="scroll versions" data-versions="{summary}" '
            'data-empty="(the summary was live already)"></div></div></div></div>'
        )
    return f'<section id="compactions"><h2>Compactions</h2>{"".join(blocks)}</section>'


def _trail_sections() -> str:
    names = (
        ("requests", "Requests"),
        ("files", "Files"),
        ("commands", "Commands"),
        ("errors", "Errors and fixes"),
        ("todos", "Todos"),
    )
    lists = "".join(
        f'<div><h3>{title}</h3><ul id="{key}-list" class="pager"></ul></div>'
        for key, title in names
    )
    return f'<section id="trail"><h2>Artifact trail</h2><div class="grid">{lists}</div></section>'


def _usage_row(turn: UsageTurn, price: Mapping[str, float] | None) -> str:
    usage = turn.usage
    cells = [seq_link(turn.seq)] + [
        f"{n:,}" for n in (usage.input, usage.cache_read, usage.cache_write, usage.output)
    ]
    if price is not None:
        cells.append(f"{_cost(turn, price):.4f}")
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _cost(turn: UsageTurn, price: Mapping[str, float]) -> float:
    usage = turn.usage
    return (
        usage.input * price["input"]
        + usage.cache_read * price["cached"]
        + usage.cache_write * price["cache_write"]
        + usage.output * price["output"]
    ) / 1_000_000


def _usage(
    turns: Sequence[UsageTurn], model: str, price: Mapping[str, float] | None, priced: bool
) -> str:
    heads = ["event", "input", "cache read", "cache write", "output"]
    if price is not None:
        heads.append("cost")
    totals = [sum(getattr(t.usage, key) for t in turns) for key in ("input", "cache_read")]
    totals += [sum(getattr(t.usage, key) for t in turns) for key in ("cache_write", "output")]
    foot = ["total"] + [f"{n:,}" for n in totals]
    if price is not None:
        foot.append(f"{sum(_cost(turn, price) for turn in turns):.4f}")
    note = ""
    if priced and price is None:
        note = f'<p class="meta">The price table has no entry for {esc(model or "this model")}.'
        note += "</p>"
    return (
        f'<section id="usage"><h2>Usage per turn</h2>{note}<table><thead><tr>'
        + "".join(f"<th>{head}</th>" for head in heads)
        + '</tr></thead><tbody id="usage-list" class="pager"></tbody><tfoot><tr>'
        + "".join(f"<td>{cell}</td>" for cell in foot)
        + "</tr></tfoot></table></section>"
    )
