"""Figures about a whole store and its sessions, for `sessionstore ls` and `stats`: counted in
SQL where they can be; a listing reads the counters each session's row keeps."""

from __future__ import annotations

from dataclasses import dataclass

from sessionstore.storage import Recorder, SessionInfo


@dataclass(frozen=True, slots=True)
class StoreStats:
    """How much a store holds, and how many tokens its sessions' pruning and compaction took
    out of the live contexts (nothing is deleted: those tokens stay in the log)."""

    sessions: int
    events: int
    payload_bytes: int
    bodies: int
    body_bytes: int
    stored_body_bytes: int
    prunes: int
    compactions: int
    tokens_freed_by_pruning: int
    tokens_freed_by_compaction: int


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of a session listing: the session, its live context's size and window, and
    how often it was compacted."""

    info: SessionInfo
    live_tokens: int
    context_window: int | None
    compactions: int


_SHRINKING = ("OutputsPruned", "ContextCompacted")


def store_stats(recorder: Recorder) -> StoreStats:
    from sessionstore.events import ContextCompacted, OutputsPruned
    from sessionstore.log._bodies import decode_structure

    counts = recorder.counts()
    prunes = compactions = pruned_tokens = compacted_tokens = 0
    for event_type, version, text in recorder.payloads_of_type(_SHRINKING):
        payload = decode_structure(event_type, version, text)
        if isinstance(payload, OutputsPruned):
            prunes += 1
            pruned_tokens += payload.tokens_freed
        elif isinstance(payload, ContextCompacted):
            compactions += 1
            compacted_tokens += max(payload.tokens_before - payload.tokens_after, 0)
    return StoreStats(
        sessions=counts.sessions,
        events=counts.events,
        payload_bytes=counts.payload_bytes,
        bodies=counts.bodies,
        body_bytes=counts.body_bytes,
        stored_body_bytes=counts.stored_body_bytes,
        prunes=prunes,
        compactions=compactions,
        tokens_freed_by_pruning=pruned_tokens,
        tokens_freed_by_compaction=compacted_tokens,
    )


def session_summaries(recorder: Recorder, infos: list[SessionInfo]) -> list[SessionSummary]:
    """Each session's line from its `sessions` row, which keeps the counters a listing shows.
    A session whose live tokens are not counted (written by a version before the counters,
    or by a writer whose fold failed) is folded from its newest snapshot, as every session
    once was; nothing is written (a listing leaves the database as it found it). The models
    and the fold are imported only for such a session: `sessionstore ls` loads neither."""
    return [
        SessionSummary(info, _live_tokens(recorder, info), info.context_window, info.compactions)
        for info in infos
    ]


def _live_tokens(recorder: Recorder, info: SessionInfo) -> int:
    if info.live_tokens is not None:
        return info.live_tokens
    from sessionstore.log._replay import load_fold

    return load_fold(recorder, info.id, info.version).fold.tokens
