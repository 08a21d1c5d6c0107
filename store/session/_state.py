"""A session's key-value state: the delta an `update_state` call asks for, checked at the door.

State is for what an agent framework keeps beside the conversation (ADK's `state`, a LangGraph
checkpoint's channels, a user's preferences): JSON values under text keys, changed by deltas
that are events, so the state at any point replays like the context.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from pydantic import JsonValue

from sessionstore.events import (
    InvalidArgument,
    InvalidEvent,
    StateChanged,
    brief,
    check_json_value,
    check_text,
    described,
)


class StateDelta(NamedTuple):
    values: dict[str, JsonValue]
    removed: tuple[str, ...]


def state_delta(values: Mapping[str, Any] | None, remove: Iterable[str]) -> StateDelta:
    """`values` and `remove` as a delta; `InvalidArgument` naming the first thing wrong: a key
    that is not text or is empty, a value that is not storable JSON, a key both set and
    removed."""
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise InvalidArgument(f"values must be a mapping of text keys, got {described(values)}")
    if isinstance(remove, str | bytes) or not isinstance(remove, Iterable):
        raise InvalidArgument(f"remove must be a list of keys, got {described(remove)}")
    removed = tuple(dict.fromkeys(remove))
    for key in [*values, *removed]:
        if not isinstance(key, str) or not key:
            raise InvalidArgument(f"a state key is non-empty text, got {brief(key)}")
    both = [key for key in removed if key in values]
    if both:
        raise InvalidArgument(f"state key {brief(both[0])} is both set and removed")
    try:
        check_json_value(dict(values), "values")
        for key in removed:
            check_text(key, "remove")
    except InvalidEvent as exc:
        raise InvalidArgument(str(exc)) from None
    # as JSON: a tuple becomes the list the state will hold, and compares equal to it
    return StateDelta(json.loads(json.dumps(dict(values), ensure_ascii=False)), removed)


def state_changes(
    current: Mapping[str, JsonValue], values: Mapping[str, Any] | None, remove: Iterable[str] = ()
) -> list[StateChanged]:
    """The `StateChanged` that sets `values` and removes `remove`, or none when that changes
    nothing in the `current` state (checked: `InvalidArgument`). A message appended without
    state (nearly every one) has no delta to check or copy."""
    if values is None and isinstance(remove, tuple) and not remove:
        return []
    delta = state_delta(values, remove)
    changed = {k: v for k, v in delta.values.items() if k not in current or current[k] != v}
    gone = tuple(key for key in delta.removed if key in current)
    return [StateChanged(values=changed, removed=gone)] if changed or gone else []
