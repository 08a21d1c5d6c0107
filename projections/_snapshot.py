"""The stored shape of a context fold's snapshot, and the checks a snapshot passes before use.

A snapshot is a cache, and a cache is never trusted over the log. Before a snapshot is used it
must parse against this schema (with pydantic's JSON parser, whose depth limit turns a
200,000-deep document into an error, not a crash), and its `digest` must be the SHA-256 of the
rest of its state, so a row edited by hand is ignored. The digest is not a secret: someone who
rewrites a snapshot can recompute it, so `verify` also re-folds the log and compares every
stored snapshot with the fold at its seq. What a snapshot may reference is checked where the
log is at hand (`sessionstore.log._replay`): only messages of the session itself and of its
ancestors, before the points the chain names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from sessionstore.events import SessionStarted

Hash = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]
Seq = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
Id = Annotated[str, Field(min_length=1)]


class SnapshotState(BaseModel):
    """`ContextFold.to_snapshot()`, as stored: messages by reference to the events holding them.

    `entries` are `[message id, index into sessions, seq, 1 if a compaction summary]` in
    context order; `pruned` maps a part id to `[placeholder, tokens, time, reason]`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: Id
    seq: Seq
    hash: Id
    time: str
    header: SessionStarted
    sessions: list[Id]
    entries: list[tuple[Id, Count, Seq, Literal[0, 1]]]
    pruned: dict[str, tuple[str, Count, str, str]]
    restored: list[str]
    restored_tokens: dict[str, Count] = {}
    previewed: dict[str, tuple[Count, Count, str] | tuple[Count, Count, str, Count]] = {}
    """(chars, tokens, notice), and the tail's characters when a preview keeps one."""
    pinned: list[str]
    state: dict[str, JsonValue]
    tokens: Count
    usage_base: tuple[Count, int] | None
    last_compaction: tuple[Seq, Count] | None
    digest: Hash


def snapshot_digest(state: Mapping[str, Any]) -> str:
    """SHA-256 of the state without its digest, in canonical JSON."""
    rest = {key: value for key, value in state.items() if key != "digest"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_snapshot(text: str) -> SnapshotState:
    """The snapshot stored as `text`, checked: `ValueError` saying what is wrong otherwise."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    try:
        state = SnapshotState.model_validate(data)
    except ValidationError as exc:
        raise ValueError(
            f"does not fit the snapshot schema ({exc.error_count()} problems)"
        ) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if snapshot_digest(data) != state.digest:
        raise ValueError("its digest does not match its content")
    if not all(0 <= s < len(state.sessions) for _, s, _, _ in state.entries):
        raise ValueError("an entry names no session of the snapshot")
    return state
