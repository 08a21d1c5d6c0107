"""What a compaction kept: the fidelity benchmark's measures, pure.

Right after each compaction, three things must still be in the live context (the summary
included) for the work to go on: every real user request so far (its first 80 characters, and
whether it is there whole, word for word), every file path created, modified or deleted so far
(in full), and the last error before it (its decisive line, and whether all its decisive lines
are there). The truth comes from the artifact trail, computed from the events, never
from the summary; "present" means found in the text of the live context's messages, whitespace
collapsed on both sides (a summary may put a request on one line).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sessionstore.events import NativePart, ReasoningPart, TextPart, ToolCallPart
from sessionstore.projections import (
    ArtifactTrail,
    ErrorSeen,
    LiveMessage,
    LiveToolResult,
    native_text,
)

REQUEST_CHARS = 80
SENTENCE_CHARS = 500
"""A first sentence longer than this is taken as a paste: its first this many characters."""
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


def flat(text: str) -> str:
    """`text` with every run of whitespace as one space."""
    return " ".join(text.split())


def context_text(messages: Iterable[LiveMessage]) -> str:
    """Everything the model reads of `messages`: texts, reasoning, tool names and arguments,
    tool outputs as shown (a placeholder when pruned), a provider's own blocks as their JSON,
    flattened. Files and images are not text."""
    chunks: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart | ReasoningPart):
                chunks.append(part.text)
            elif isinstance(part, ToolCallPart):
                chunks += [part.name, part.arguments]
            elif isinstance(part, LiveToolResult):
                chunks.append(part.output)
            elif isinstance(part, NativePart):
                chunks.append(native_text(part))
    return flat("\n".join(chunks))


def request_key(text: str) -> str:
    return flat(text[:REQUEST_CHARS])


def first_sentence(text: str) -> str:
    """A request's first sentence or line (at most `SENTENCE_CHARS` characters), flattened."""
    text = text.lstrip()
    found = _SENTENCE_END.search(text)
    end = len(text) if found is None else found.start() if found.group() == "\n" else found.end()
    return flat(text[: min(end, SENTENCE_CHARS)])


def decisive_line(error: ErrorSeen) -> str:
    """The one line of an error's decisive lines that says what failed: a pytest `FAILED`
    summary (test id and message), a traceback's exception (its last line), a Rust test's
    panic or another runtime's exception (the first line), a compiler's first `error` line;
    else the last line. The trail's `…` cut marks are dropped."""
    lines = [line.strip().strip("…").strip() for line in error.decisive.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    for line in lines:
        if line.startswith(("FAILED ", "ERROR ")):
            return line
    if error.kind == "traceback":
        return lines[-1]
    if error.kind in ("panic", "exception"):
        return lines[0]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1]


@dataclass(frozen=True)
class Kept:
    """What one compaction kept of the trail: totals, and what it lost by name."""

    requests: int
    """Requests whose first `REQUEST_CHARS` characters are there."""
    requests_total: int
    paths: int
    paths_total: int
    error: bool | None
    """Whether the last error's decisive line is there (`None`: no error so far)."""
    error_lines: float | None
    """The share of the last error's decisive lines that are there."""
    lost_requests: tuple[str, ...]
    lost_paths: tuple[str, ...]
    lost_error: str
    requests_whole: int = 0
    """Requests that are there whole, word for word (whitespace collapsed)."""
    shortened_requests: tuple[str, ...] = ()
    """The first `REQUEST_CHARS` characters of each request not there whole."""
    lost_first_sentences: tuple[str, ...] = ()
    """The first sentence of each request whose first sentence is not there."""


def kept(trail: ArtifactTrail, text: str) -> Kept:
    """What of `trail` is in the flattened context `text` (see `context_text`)."""
    requests = [request_key(r.text) for r in trail.requests if not r.reverted]
    lost_requests = tuple(r for r in requests if r not in text)
    whole = [r.text for r in trail.requests if not r.reverted]
    shortened = tuple(request_key(r) for r in whole if flat(r) not in text)
    headless = tuple(first_sentence(r) for r in whole if first_sentence(r) not in text)
    paths = [file.path for file in trail.changed_files]
    lost_paths = tuple(p for p in paths if p not in text)
    error: bool | None = None
    share: float | None = None
    lost_error = ""
    if trail.errors:
        last = trail.errors[-1]
        line = flat(decisive_line(last))
        error = bool(line) and line in text
        lines = [flat(x.strip("…")) for x in last.decisive.splitlines() if x.strip("… ")]
        share = sum(1 for x in lines if x in text) / len(lines) if lines else 1.0
        lost_error = "" if error else line
    return Kept(
        requests=len(requests) - len(lost_requests),
        requests_total=len(requests),
        paths=len(paths) - len(lost_paths),
        paths_total=len(paths),
        error=error,
        error_lines=share,
        lost_requests=lost_requests,
        lost_paths=lost_paths,
        lost_error=lost_error,
        requests_whole=len(whole) - len(shortened),
        shortened_requests=shortened,
        lost_first_sentences=headless,
    )
