"""What a rollout line says besides the model's items: the line itself as a record, its time,
the session it belongs to (and a subagent's parent), a response's usage, a session's title."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sessionstore.events import (
    Message,
    Native,
    NativePart,
    Record,
    RecordAppended,
    TextPart,
    Usage,
    check_json_value,
)
from sessionstore.importers._common import Json
from sessionstore.importers._transcript import Link

ROLLOUT = "codex.rollout"
"""The api of a record's `native`: a rollout line, verbatim."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def rollout_record(kind: str, key: str, line: Json) -> RecordAppended:
    """A line kept verbatim, out of the context."""
    part = NativePart(id=f"{key}.0", native=Native(api=ROLLOUT, value=line))
    check_json_value(part.model_dump(mode="json"))  # a NaN, say, fails here, not at append
    return RecordAppended(record=Record(id=key, kind=kind[:128], parts=(part,)))


def spawned_by(source: object) -> Link | None:
    """The parent thread of a subagent's rollout (`source: {"subagent": {"thread_spawn":
    {"parent_thread_id": ...}}}`)."""
    if not isinstance(source, dict):
        return None
    subagent = source.get("subagent")
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return Link(parent) if isinstance(parent, str) and parent else None


def response_usage(info: object) -> Usage | None:
    """The last response's usage from a `token_count` event; `input_tokens` counts the whole
    prompt, so the cached part is taken out into `cache_read`."""
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None
    counts = [last.get(k) for k in ("input_tokens", "cached_input_tokens", "output_tokens")]
    prompt, cached, output = (
        c if isinstance(c, int) and not isinstance(c, bool) and c >= 0 else 0 for c in counts
    )
    return Usage(input=max(prompt - cached, 0), output=output, cache_read=min(cached, prompt))


def title_of(message: Message) -> str | None:
    text = " ".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
    first = text.splitlines()[0] if text else ""
    return first[:100] or None


def id_from_name(name: str | None) -> str | None:
    if not name:
        return None
    found = _UUID.findall(name)
    return found[-1] if found else name.rsplit("/", 1)[-1].removesuffix(".jsonl") or None


def timestamp(value: object) -> datetime | None:
    """A line's ISO timestamp as aware UTC; `None` when absent, unreadable or before year
    1000 (which the store's time format cannot write back)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if moment.year >= 1000 else None
