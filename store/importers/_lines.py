"""A transcript's lines, read one at a time: the text of a file is never held whole.

An agent writes its transcript a line at a time, so a file can be longer than memory (a
million-line Claude Code file is 188 MB of text and many times that parsed), and a file
copied while it was written can end inside a multi-byte character. Reading bytes line by line
and decoding each line by itself bounds memory by the longest line, and turns a line that is
not UTF-8 into one malformed line, reported with its number, instead of a file refused whole.

`TranscriptLines` gives (number, offset, text) for every line, numbered from 1, a line that is
not UTF-8 given as an empty line (which every reader passes over) and listed in `skipped`.
`line_at(offset)` reads one line again: a reader that must look ahead (Claude Code's response
spread over later lines) keeps offsets, not lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from sessionstore.importers._transcript import Skipped


class TranscriptLines(Protocol):
    """The lines of one transcript, read as often as a reader needs."""

    skipped: list[Skipped]
    """Lines that are not UTF-8 text, by number, each once however often the lines are read."""

    def numbered(self) -> Iterator[tuple[int, int, str]]:
        """Every line as (number from 1, offset for `line_at`, text without its line end)."""
        ...

    def line_at(self, offset: int) -> str:
        """The text of the line that `numbered` gave at `offset`."""
        ...


class FileLines:
    """A file's lines, read from disk at each pass: memory holds one line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped: list[Skipped] = []
        self._reported: set[int] = set()

    def numbered(self) -> Iterator[tuple[int, int, str]]:
        with self.path.open("rb") as file:
            offset = 0
            for number, raw in enumerate(file, start=1):
                yield number, offset, self._decoded(raw, number)
                offset += len(raw)

    def line_at(self, offset: int) -> str:
        with self.path.open("rb") as file:
            file.seek(offset)
            return self._decoded(file.readline(), None)

    def _decoded(self, raw: bytes, number: int | None) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if number is not None and number not in self._reported:
                self._reported.add(number)
                self.skipped.append(Skipped(number, _not_utf8(raw, exc)))
            return ""
        return text.removesuffix("\n").removesuffix("\r")


class TextLines:
    """Text already in memory (an import from text), as lines: an offset is a line's index."""

    def __init__(self, text: str) -> None:
        self._lines = [line.removesuffix("\r") for line in text.split("\n")]
        self.skipped: list[Skipped] = []

    def numbered(self) -> Iterator[tuple[int, int, str]]:
        for index, text in enumerate(self._lines):
            yield index + 1, index, text

    def line_at(self, offset: int) -> str:
        return self._lines[offset]


def head_lines(path: Path, most: int = 50) -> list[str]:
    """The first `most` lines of a file, each decoded by itself (one that is not UTF-8 read as
    empty): what recognising its format reads."""
    lines = FileLines(path)
    found = []
    for number, _, text in lines.numbered():
        found.append(text)
        if number == most:
            break
    return found


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> str:
    if not raw.endswith(b"\n") and exc.end >= len(raw.rstrip(b"\r")):
        return "not UTF-8 text: the file ends inside a character (the last line is cut off)"
    return f"not UTF-8 text: {exc.reason} at byte {exc.start + 1} of the line"
