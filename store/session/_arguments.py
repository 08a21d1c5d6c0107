"""Checks of the arguments of the public methods, run before any I/O.

Each raises `InvalidArgument` naming the argument, what it must be and what it got (shown by
`brief`, which cannot fail or grow long), and returns the value with its type narrowed. Type
hints are not enough: callers pass what their own code holds (bytes from a socket, `None`
from a missing field, JSON numbers), and a wrong value that slips past the door either raises
from deep inside (pydantic, the driver, tiktoken) or, worse, is stored.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from sessionstore.events import InvalidArgument, brief, check_text, described

if TYPE_CHECKING:  # `proposal` imports it when called: opening a store loads no policies
    from sessionstore.context import CompactionProposal

T = TypeVar("T")


def text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a str, got {described(value)}")
    return value


def optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a str or None, got {described(value)}")
    return value


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be a bool, got {described(value)}")
    return value


SQL_INT_MAX = 2**63 - 1
"""The largest integer every backend's SQL takes (SQLite's INTEGER, PostgreSQL's BIGINT): a
count or offset sent to the database past it fails in the driver (`OverflowError` on SQLite,
out of range on PostgreSQL) instead of meaning anything."""


def integer(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An int (from `minimum` to `maximum`), but not a bool: `True` is an int to Python, never
    a count or a seq to a caller."""
    if _is_int(value, minimum, maximum):
        return value  # type: ignore[return-value]  # an int, checked
    raise InvalidArgument(f"{name} must be {_an_int(minimum, maximum)}, got {described(value)}")


def optional_integer(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    """`None`, or what `integer` accepts."""
    if value is None:
        return None
    if _is_int(value, minimum, maximum):
        return value  # type: ignore[return-value]  # an int, checked
    bounded = minimum is not None or maximum is not None
    must = f"{_an_int(minimum, maximum)}, or None" if bounded else "an int or None"
    raise InvalidArgument(f"{name} must be {must}, got {described(value)}")


def _is_int(value: object, minimum: int | None, maximum: int | None = None) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)


def _an_int(minimum: int | None, maximum: int | None = None) -> str:
    if maximum is not None:
        return (
            f"an int up to {maximum}" if minimum is None else f"an int from {minimum} to {maximum}"
        )
    if minimum is None:
        return "an int"
    return f"an int {'from 0' if minimum == 0 else f'above {minimum - 1}'}"


def choice(name: str, value: object, choices: Collection[T]) -> T:
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise InvalidArgument(f"{name} must be one of {allowed}, got {described(value)}")
    return value  # type: ignore[return-value]  # one of `choices`, which are str


def summarizer_or_none(value: T | None) -> T | None:
    """A summarizer is called only when a compaction is due; a wrong one is refused at once."""
    if value is not None and not callable(value):
        raise InvalidArgument(f"summarizer must be callable or None, got {described(value)}")
    return value


def confirm_or_none(value: T | None) -> T | None:
    """A confirm callback, like a summarizer, is called only when a compaction is due."""
    if value is not None and not callable(value):
        raise InvalidArgument(f"confirm must be callable or None, got {described(value)}")
    return value


def proposal(value: object, session_id: str) -> CompactionProposal:
    """A compaction proposed on `session_id`: one made on another session names messages
    this one does not have."""
    from sessionstore.context import CompactionProposal

    if not isinstance(value, CompactionProposal):
        raise InvalidArgument(f"proposal must be a CompactionProposal, got {described(value)}")
    if value.session_id != session_id:
        raise InvalidArgument(f"proposal is for session {value.session_id!r}, not {session_id!r}")
    return value


def part_ids(value: object) -> list[str]:
    """Part ids to restore or redact, as a list: a lone str is refused (iterating it would
    name its characters)."""
    if isinstance(value, str):
        raise InvalidArgument(
            f"part_ids must be a list of part ids, not one str: restore([{brief(value)}])"
        )
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidArgument(
            f"part_ids must be a list of part ids or None, got {described(value)}"
        )
    ids = list(value)
    for part_id in ids:
        if not isinstance(part_id, str):
            raise InvalidArgument(f"part_ids must hold str part ids, got {described(part_id)}")
    return ids


REASON_LENGTH = 500


def redaction_reason(value: object) -> str:
    """Why content was redacted: the session shows `[redacted: <reason>]` in its place, so it
    is 1 to 500 characters of text a backend stores as sent (`InvalidEvent` for a NUL or a
    lone surrogate, as for any content), checked before the redaction is planned."""
    reason = text("reason", value)
    if not 1 <= len(reason) <= REASON_LENGTH:
        raise InvalidArgument(f"reason must be 1 to {REASON_LENGTH} characters, got {len(reason)}")
    check_text(reason, "reason")
    return reason


LABEL_LENGTH = 128
MAX_TAGS = 64


def optional_label(name: str, value: object) -> str | None:
    """`None`, or an app, user or tag name: 1 to 128 printable characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= LABEL_LENGTH:
        raise InvalidArgument(
            f"{name} must be None or 1 to {LABEL_LENGTH} characters, got {described(value)}"
        )
    if not value.isprintable():
        raise InvalidArgument(f"{name} has unprintable characters: {described(value)}")
    return value


def tags(value: object) -> tuple[str, ...]:
    """Tags as the session keeps them: each a label, at most 64, repeats dropped, sorted (a
    set: the order they were given in means nothing)."""
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise InvalidArgument(f"tags must be a list of names, got {described(value)}")
    checked = {optional_label("a tag", tag) for tag in value}
    if None in checked:
        raise InvalidArgument("a tag must be 1 to 128 characters, got None")
    if len(checked) > MAX_TAGS:
        raise InvalidArgument(f"a session has at most {MAX_TAGS} tags, got {len(checked)}")
    return tuple(sorted(tag for tag in checked if tag is not None))
