"""How an error shows a value a caller passed: in one short line.

A message must never be huge nor fail to build, whatever the caller passed: a 10,000-deep
dict (whose plain repr raises RecursionError), a 100 MB string, an int too long to print.
`brief` is the one way an offending value is shown. Nothing here needs pydantic (its errors
are read, not imported), so a refusal can be worded by code that never loads it.
"""

from __future__ import annotations

import reprlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

_MAX_BRIEF = 80
_MAX_WHERE = 80
_MAX_PROBLEMS = 3


class _Brief(reprlib.Repr):
    """`reprlib` with small limits, and bytes cut before they are printed."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxstring = self.maxother = self.maxlong = 60
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 4
        self.maxdict = self.maxdeque = self.maxarray = 4

    def repr_bytes(self, value: bytes, level: int) -> str:
        text = repr(value[: self.maxstring])
        return text if len(value) <= self.maxstring else text[:-1] + "...'"


_BRIEF = _Brief()


def brief(value: object) -> str:
    """A short repr of any value, for an error message; never raises."""
    try:
        text = _BRIEF.repr(value)
    except Exception:  # a repr that fails or recurses, an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_BRIEF else text[: _MAX_BRIEF - 3] + "..."


def described(value: object) -> str:
    """`None`, or the type and a short repr: `int 5`, `bytes b'abc'`."""
    return "None" if value is None else f"{type(value).__name__} {brief(value)}"


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """The problems, `field.path: message`, on one line, without pydantic's URLs or the input
    values; at most a few, each path cut short (a value nested 300 deep has 600 keys), and
    each under `prefix` when the model validated one field of something larger."""
    errors = exc.errors(include_url=False, include_input=False)
    problems = []
    for error in errors[:_MAX_PROBLEMS]:
        where, keys = "", [_shown(key) for key in ((prefix,) if prefix else ()) + error["loc"]]
        for n, key in enumerate(keys):
            if len(where) + len(key) > _MAX_WHERE:
                where += "..."
                break
            where += ("." if n else "") + key
        problems.append(f"{where or '<payload>'}: {error['msg']}")
    if len(errors) > _MAX_PROBLEMS:
        problems.append(f"and {len(errors) - _MAX_PROBLEMS} more")
    return "; ".join(problems)


def _shown(key: str | int) -> str:
    """A path key as the one line shows it: a key with a line break or another character
    that is not printable (a dict key is anything) as its `repr`, so the line stays one."""
    text = str(key)
    return text if text.isprintable() else repr(text)
