"""The root of sessionstore's exceptions, and the ones the vocabulary itself raises.

`events` imports nothing of ours, so the root of the tree lives here; `store` adds the
rest and re-exports the whole tree (drawn in `store/_errors.py`).
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base of every error sessionstore raises on purpose."""


class InvalidArgument(SessionStoreError, ValueError, TypeError):
    """An argument the caller passed is of the wrong type or out of range; nothing was written.

    One class for both, and both built-in bases, so every `except` written before keeps
    working: pydantic's errors (what a bad value raised before) are `ValueError`s, and Python
    raises `TypeError` for an argument of the wrong type. The message says which it was.
    """


class InvalidEvent(SessionStoreError, ValueError):
    """An event the store refuses: wrong shape, bad text, unstable numbers, too big."""


class UnknownEventType(InvalidEvent):
    """An event `type` that this version of the vocabulary does not know."""

    def __init__(self, event_type: str) -> None:
        shown = event_type if len(event_type) <= 80 else event_type[:77] + "..."
        super().__init__(f"unknown event type {shown!r}")
        self.event_type = event_type


class UnsupportedSchemaVersion(InvalidEvent):
    """A stored event written by a newer vocabulary than this one can read."""

    def __init__(self, event_type: str, stored: int, current: int) -> None:
        super().__init__(
            f"{event_type} schema_version {stored} is newer than this code's {current}; "
            "upgrade sessionstore to read it"
        )
        self.event_type = event_type
        self.stored = stored
        self.current = current
