"""A fork's first event: the parent's header, pointing back at where the fork starts.

A fork (`SessionStore.fork`, `Session.fork_with_summary`) reads its parent's events up to the
fork point instead of copying them; its `SessionStarted` names that point by the parent's id,
seq and hash, so a replay knows where to read and `verify` can check the link.
"""

from __future__ import annotations

from sessionstore.events import SessionStarted
from sessionstore.projections import ContextFold


def fork_header(history: ContextFold, parent_id: str, title: str | None) -> SessionStarted:
    """The `SessionStarted` of a fork of `parent_id` whose history is `history` (the parent
    folded up to the fork point): the parent's settings, `title` (the parent's when `None`),
    and the parent's seq and hash at that point."""
    header = history.header
    assert header is not None
    return header.model_copy(
        update={
            "title": title if title is not None else header.title,
            "parent_session_id": parent_id,
            "parent_seq": history.seq,
            "parent_hash": history.hash,
        }
    )
