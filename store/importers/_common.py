"""What both importers share: counting parts, refusing bad values at their line, and
keeping tool calls and their results paired."""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from sessionstore.context import with_tokens
from sessionstore.events import (
    FilePart,
    ImportRefused,
    InvalidEvent,
    Message,
    Part,
    ToolResultPart,
    brief,
    check_json_value,
)

Json = dict[Any, Any]
_MAX_WHERE = 120
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


def counted(
    parts: Sequence[Part], encoding: str, prefix: str | None, start: int = 0
) -> tuple[Part, ...]:
    """Parts with their tokens counted (so the fold never estimates), and numbered
    `<message id>.<n>` (a tool result's blocks `<part id>.b<n>`) when the message id is stable,
    so a re-import gives the same ids, and the same hashes in another store."""
    if prefix is not None:
        parts = [_numbered(p, f"{prefix}.{start + n}") for n, p in enumerate(parts)]
    for part in parts:
        check_json_value(part.model_dump(mode="json"))  # a NUL, say, fails here, not at append
    return tuple(with_tokens(part, encoding) for part in parts)


def _numbered(part: Part, part_id: str) -> Part:
    update: dict[str, object] = {"id": part_id}
    if isinstance(part, ToolResultPart) and part.blocks is not None:
        update["blocks"] = tuple(
            block.model_copy(update={"id": f"{part_id}.b{n}"})
            for n, block in enumerate(part.blocks)
        )
    return part.model_copy(update=update)


@contextmanager
def at_line(line: int | None) -> Iterator[None]:
    """Values our models or the store refuse (an empty id, a NUL, a NaN) refused at their line."""
    try:
        yield
    except ImportRefused:
        raise
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(key) for key in error["loc"])
        if len(where) > _MAX_WHERE:  # a value nested hundreds deep has hundreds of keys
            where = f"{where[: _MAX_WHERE // 2]}...{where[-_MAX_WHERE // 2 :]}"
        raise ImportRefused(f"invalid {exc.title} {where}: {error['msg']}", line) from None
    except (InvalidEvent, ValueError) as exc:
        raise ImportRefused(f"not storable: {exc}", line) from None


def message_tokens(message: Message) -> int:
    return sum(part.tokens or 0 for part in message.parts)


def string(block: Json, key: str, what: str, line: int) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise ImportRefused(f"{what} has no string {key!r}", line)
    return value


def file_from_url(url: str) -> FilePart:
    """An image by URL; a base64 data URL is kept as inline data."""
    inline = _DATA_URL.fullmatch(url)
    if inline is not None:
        return FilePart(media_type=inline[1], data=inline[2])
    return FilePart(media_type=mimetypes.guess_type(url)[0] or "image/*", url=url)


@dataclass(slots=True)
class Calls:
    """Tool calls made so far, by call id: a result must answer one, once, and takes its name."""

    word: str  # what the format calls a call: "tool call" or "tool_use"
    names: dict[str, str] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)

    def made(self, call_id: str, name: str, line: int) -> None:
        if call_id in self.names:
            raise ImportRefused(f"{self.word} id {brief(call_id)} is used twice", line)
        self.names[call_id] = name

    def answer(self, call_id: str, who: str, line: int) -> str:
        what = f"{who} answers {self.word} id {brief(call_id)}"
        if call_id not in self.names:
            raise ImportRefused(f"{what} that no earlier assistant message made", line)
        if call_id in self.answered:
            raise ImportRefused(f"{what} a second time", line)
        self.answered.add(call_id)
        return self.names[call_id]
