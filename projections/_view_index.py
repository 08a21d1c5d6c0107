"""The index page `view --all` writes beside the sessions' pages: every session, sortable by
date, size and compactions, with a search box that filters as one types (in the page: it
loads nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sessionstore.projections._view_assets import INDEX_SCRIPT, PAGE_STYLE
from sessionstore.projections._view_parts import esc, page_link, when


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One session of the index, as a listing knows it."""

    session_id: str
    title: str
    updated_at: datetime
    events: int
    live_tokens: int
    context_window: int | None
    compactions: int
    parent_id: str | None = None
    app: str | None = None
    user: str | None = None
    tags: tuple[str, ...] = ()


COLUMNS = (
    ("title", "session"),
    ("date", "updated"),
    ("events", "events"),
    ("size", "live tokens"),
    ("compactions", "compactions"),
)


def index_page(rows: Sequence[IndexRow]) -> str:
    """The index of `rows` (in the order given: newest first, as listings are), each linking
    its page `<id>.html`."""
    heads = "".join(
        f'<th data-key="{key}" aria-sort="{"descending" if key == "date" else "none"}">{title}</th>'
        for key, title in COLUMNS
    )
    body = "".join(_row(row) for row in rows)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Sessions · sessionstore</title><style>{PAGE_STYLE}"
        "th[data-key] { cursor: pointer; } td:first-child, th:first-child { text-align: left; }"
        "</style></head><body><main><h1>Sessions</h1>"
        '<p><input type="search" id="search" placeholder="search titles, ids, apps, tags" '
        'size="40"> <span id="count" class="meta"></span></p>'
        f'<table id="sessions"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>'
        f"<script>{INDEX_SCRIPT}</script></main></body></html>\n"
    )


def _row(row: IndexRow) -> str:
    labels = [label for label in (row.app, row.user, *row.tags) if label]
    extra = f' <span class="meta">{esc(", ".join(labels))}</span>' if labels else ""
    if row.parent_id is not None:
        extra += f' <span class="meta">fork of {esc(row.parent_id)}</span>'
    window = f" / {row.context_window:,}" if row.context_window else ""
    stamp = row.updated_at.isoformat()
    return (
        f'<tr data-title="{esc(row.title.lower())}" data-date="{esc(stamp)}" '
        f'data-events="{row.events}" data-size="{row.live_tokens}" '
        f'data-compactions="{row.compactions}" data-id="{esc(row.session_id)}">'
        f'<td><a href="{page_link(row.session_id)}">{esc(row.title or row.session_id)}</a>'
        f' <code class="meta">{esc(row.session_id)}</code>{extra}</td>'
        f"<td><time>{when(row.updated_at)}</time></td><td>{row.events:,}</td>"
        f"<td>{row.live_tokens:,}{window}</td><td>{row.compactions:,}</td></tr>"
    )
