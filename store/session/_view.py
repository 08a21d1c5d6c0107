"""What the store reads to draw the HTML view of a session (its events, its fork's parent at
the fork, its forks and sub-agents) and of all its sessions: the rendering itself is the pure
`sessionstore.projections.view_page` and `index_page`."""

from __future__ import annotations

from collections.abc import Mapping

from sessionstore.events import SessionStarted
from sessionstore.log import EventLog, SessionSummary
from sessionstore.projections import IndexRow, SessionLink, ToolMap, check_prices, view_page
from sessionstore.storage import SessionInfo


def session_page(
    log: EventLog,
    info: SessionInfo,
    head: int,
    *,
    prices: object = None,
    tools: ToolMap | None = None,
) -> str:
    """The page of the session `info` names, as its log holds it up to seq `head`."""
    table: Mapping[str, Mapping[str, float]] | None = (
        None if prices is None else check_prices(prices)
    )
    events = log.read(info.id, 1, head)
    header = events[0].payload
    start = parent = None
    if isinstance(header, SessionStarted) and header.parent_session_id is not None:
        assert header.parent_seq is not None
        start = log.fold_at(header.parent_session_id, header.parent_seq)
        row = log.recorder.session(header.parent_session_id)
        title = row.title if row is not None else ""
        parent = SessionLink(header.parent_session_id, title, header.parent_seq)
    children = []
    for child_id in log.recorder.forks_of([info.id]):
        child = log.recorder.session(child_id)
        if child is not None:
            children.append(SessionLink(child.id, child.title, child.parent_seq))
    return view_page(events, start, parent=parent, children=children, prices=table, tools=tools)


def index_row(summary: SessionSummary) -> IndexRow:
    info = summary.info
    return IndexRow(
        session_id=info.id,
        title=info.title,
        updated_at=info.updated_at,
        events=info.version,
        live_tokens=summary.live_tokens,
        context_window=summary.context_window,
        compactions=summary.compactions,
        parent_id=info.parent_id,
        app=info.app,
        user=info.user,
        tags=info.tags,
    )
