"""Reading what an SDK returned: its pydantic object or the same as a dict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sessionstore.events import InvalidArgument, Message, Native, Part, TextPart, Usage, described


def as_json(response: object, what: str) -> dict[str, Any]:
    """`response` as the JSON object the API sent: an SDK model is dumped with only the fields
    the API set (`exclude_unset`), so nothing the API did not say is added, under their wire
    names (`by_alias`: the SDKs call `async` `async_` and `from` `from_`), without pydantic's
    warnings about an item type newer than the SDK (its client builds one without validating it
    and keeps its fields, which is all we need); a mapping is copied through JSON, so it holds
    only JSON values."""
    dump = getattr(response, "model_dump", None)
    if callable(dump):
        data = dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    elif isinstance(response, dict):
        data = response
    else:
        raise InvalidArgument(
            f"{what} must be the SDK's object or its dict, got {described(response)}"
        )
    try:
        copied = json.loads(json.dumps(data, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgument(f"{what} is not JSON: {str(exc)[:120]}") from None
    if not isinstance(copied, dict):
        raise InvalidArgument(f"{what} must be a JSON object")
    return copied


def field(data: dict[str, Any], name: str, kind: type, what: str) -> Any:
    """`data[name]`, which must be a `kind`: `InvalidArgument` naming it otherwise."""
    value = data.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidArgument(f"{what}: {name!r} is missing or not a {kind.__name__}")
    return value


def count(value: object) -> int:
    """A token count from a usage object: a non-negative int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def arguments_text(value: object) -> str:
    """A tool input object as JSON text, in the order the provider gave its keys."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def assistant_message(
    api: str, parts: Sequence[Part], usage: Usage | None, envelope: dict[str, Any]
) -> Message:
    """The assistant message of one response: its parts (one empty text part when the model
    said nothing, as a message holds at least one), its usage, and what is left of the
    response without its content (`envelope`) as the message's `native`."""
    return Message(
        role="assistant",
        parts=tuple(parts) or (TextPart(text=""),),
        usage=usage,
        native=Native(api=api, value=envelope),
    )
