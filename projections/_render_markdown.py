"""A session as a Markdown transcript, for people: what the model was shown, message by message.

Two views, rendered from the same folds as everything else (no I/O, nothing re-tokenized):

- `markdown_of(fold)`: the live context at the fold's point, as the model is shown it. A
  truncated or pruned tool output shows what the model saw (the truncated view, the
  placeholder) with a note saying so; a compaction's summary is marked as one.
- `history_markdown(events)`: the whole history, every message ever appended as the model was
  shown it when it was appended, and every other event (a prune, a compaction with its
  summary, a revert, a redaction) as a marked line where it happened.

Tool calls and tool outputs go in fenced blocks whose fence is longer than any run of backticks
in their content, so no output can close its block early. Thinking is collapsed in a
`<details>` block; a compaction's summary is quoted under its own heading, so its headings read
as the summary's. Redacted content reads `[redacted: <reason>]`, as the log itself reads once
the content is gone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime

from sessionstore.events import (
    REDACTED_PREFIX,
    CompressionChanged,
    ContextCompacted,
    FilePart,
    MessageAppended,
    NativePart,
    ReasoningPart,
    RecordedEvent,
    SessionStarted,
    StateChanged,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
    Usage,
)
from sessionstore.projections._context import context_of
from sessionstore.projections._fold import ContextFold
from sessionstore.projections._live import LiveMessage, LiveToolResult
from sessionstore.projections._timeline import describe

ROLE_TITLES = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}

_BACKTICKS = re.compile(r"`+")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_REDACTED = re.compile(re.escape(REDACTED_PREFIX) + r"[^\n]*\]")


def fence(content: str, info: str = "") -> str:
    """`content` in a fenced block whose fence (at least three backticks) is longer than the
    longest run of backticks inside it, so nothing in the content can end the block."""
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    marks = "`" * max(3, longest + 1)
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"{marks}{info}\n{body}{marks}"


def closed(text: str) -> str:
    """Markdown text with a code fence it leaves open closed at its end: a model's answer cut
    off inside a code block (at its token limit) would otherwise turn the rest of the
    transcript, headings and all, into that block's code. Fences are read as CommonMark does
    (three or more backticks or tildes, indented at most three spaces; closed by a run of the
    same character at least as long, with nothing after it)."""
    opened = ""
    for line in text.split("\n"):
        match = _FENCE.fullmatch(line)
        if match is None:
            continue
        marks, rest = match.group(1), match.group(2)
        if not opened:
            if not (marks[0] == "`" and "`" in rest):  # a backtick fence's info has none
                opened = marks
        elif marks[0] == opened[0] and len(marks) >= len(opened) and not rest.strip():
            opened = ""
    return f"{text}\n{opened}" if opened else text


def is_redaction(text: str) -> bool:
    """Whether `text` is a redaction's placeholder: what a part holds once its content is gone."""
    return _REDACTED.fullmatch(text) is not None


def markdown_of(fold: ContextFold) -> str:
    """The live context the fold stands at, as a transcript: a header (title, model, window,
    where in the session it stands), then each live message as the model is shown it."""
    if fold.header is None or fold.time is None:
        raise ValueError("a transcript needs at least the session's SessionStarted event")
    context = context_of(fold)
    shown = (
        f"the live context after event {fold.seq:,} ({_time(fold.time)}): "
        f"{len(context.messages):,} messages, {context.tokens:,} tokens"
    )
    blocks = [_header(fold, shown)]
    blocks.extend(_live_message(fold, message) for message in context.messages)
    return "\n\n".join(blocks) + "\n"


def history_markdown(events: Iterable[RecordedEvent], start: ContextFold | None = None) -> str:
    """Every message ever appended to the session, as the model was shown it when it was
    appended, in order, with the events that changed the context (prunes, compactions with
    their summaries, reverts, restores, redactions...) marked where they happened. `start` is
    the fold a fork continues (its parent's history at the fork): its live messages come
    first, under a line that says so."""
    fold = start if start is not None else ContextFold()
    inherited = fold.live_messages() if start is not None and start.header is not None else ()
    body: list[str] = []
    count = 0
    for event in events:
        change = fold.apply(event)
        payload = event.payload
        if isinstance(payload, SessionStarted):
            if inherited:
                parent = f"`{payload.parent_session_id}` at event {payload.parent_seq}"
                body.append(_marker(event.seq, f"forked from {parent}; its context then:"))
                body.extend(_live_message(fold, message) for message in inherited)
            continue
        if isinstance(payload, MessageAppended):
            if change.added:
                count += 1
                body.append(_appended(payload, event.seq))
            continue
        if isinstance(payload, _UNSHOWN):
            continue
        body.append(_marker(event.seq, describe(payload, change)))
        if isinstance(payload, ContextCompacted):
            summary = payload.summary
            title = f"Compaction summary · event {event.seq}"
            body.append(_message(title, [_part(part) for part in summary.parts], quoted=True))
    if fold.header is None or fold.time is None:
        raise ValueError("a transcript needs at least the session's SessionStarted event")
    shown = (
        f"the whole history, events 1 to {fold.seq:,}: {count:,} messages appended, "
        "with the events that changed the context where they happened"
    )
    return "\n\n".join([_header(fold, shown), *body]) + "\n"


_UNSHOWN = (CompressionChanged, StateChanged)
"""Events the history leaves out: settings and the session's key-value state, which change
nothing the model is shown."""


def _header(fold: ContextFold, shown: str) -> str:
    header = fold.header
    assert header is not None
    title = " ".join(header.title.split()) or f"Session {fold.session_id}"
    lines = [f"# {title}", "", f"- session: `{fold.session_id}`"]
    lines.append(f"- model: {header.model or 'not named'}")
    if header.context_window:
        lines.append(
            f"- window: {header.context_window:,} tokens, {header.output_reserve:,} of them "
            "reserved for output"
        )
    if header.parent_session_id is not None:
        lines.append(f"- forked from: `{header.parent_session_id}` at event {header.parent_seq}")
    for label, value in (("app", header.app), ("user", header.user)):
        if value:
            lines.append(f"- {label}: {value}")
    if header.tags:
        lines.append("- tags: " + ", ".join(header.tags))
    lines.append(f"- shown: {shown}")
    return "\n".join(lines)


def _marker(seq: int, text: str) -> str:
    return f"> **event {seq:,}**: {' '.join(text.split())}"


def _live_message(fold: ContextFold, message: LiveMessage) -> str:
    """A live message as the model is shown it, its tool results with their status."""
    title = "Compaction summary" if message.summary else ROLE_TITLES[message.role]
    if message.pinned:
        title += " (pinned)"
    blocks: list[str] = []
    for part in message.parts:
        if isinstance(part, LiveToolResult):
            blocks.append(_live_result(fold, part))
        elif isinstance(part, ToolCallPart) and message.call_status.get(part.id) == "previewed":
            blocks.append(_call(part) + "\n\n_Arguments cut to a preview: the model sees this._")
        elif isinstance(part, TextPart) and part.truncation is not None:
            blocks.append(_live_text(fold, part))
        else:
            blocks.append(_part(part))
    if message.reasoning_cleared:
        blocks.append("_Thinking cleared from the context (an older turn's)._")
    if message.usage is not None:
        blocks.append(_usage(message.usage))
    return _message(title, blocks, quoted=message.summary)


def _appended(payload: MessageAppended, seq: int) -> str:
    message = payload.message
    blocks = [_part(part) for part in message.parts]
    if message.usage is not None:
        blocks.append(_usage(message.usage))
    return _message(f"{ROLE_TITLES[message.role]} · event {seq:,}", blocks)


def _message(title: str, blocks: list[str], *, quoted: bool = False) -> str:
    """A message under its heading; `quoted` (a compaction's summary) puts its body in a block
    quote, so the summary's own headings and lists read as the summary's, not the
    transcript's."""
    body = "\n\n".join(block for block in blocks if block)  # an empty text shows nothing
    if quoted:
        body = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
    return f"## {title}\n\n{body}" if body else f"## {title}"


def _part(
    part: TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart | NativePart,
) -> str:
    """A stored part as the model was shown it when it was appended."""
    if isinstance(part, TextPart):
        return _text(part)
    if isinstance(part, ReasoningPart):
        return _thinking(part.text)
    if isinstance(part, ToolCallPart):
        return _call(part)
    if isinstance(part, ToolResultPart):
        note = _truncated(part.truncation) if part.truncation is not None else ""
        return _result(part.name, part.call_id, part.is_error, part.shown, note)
    if isinstance(part, FilePart):
        return _file(part)
    return _native(part)


def _text(part: TextPart) -> str:
    if is_redaction(part.shown):
        return part.shown
    if part.truncation is None:
        return closed(part.shown)
    return closed(part.shown) + "\n\n" + _truncated(part.truncation)


def _live_text(fold: ContextFold, part: TextPart) -> str:
    """A long text truncated at append: its view with the note, or, once restored, the
    original (the fold's live part holds the view as `text` until then)."""
    if not fold.is_restorable(part.id) and not is_redaction(part.text):
        return closed(part.text) + "\n\n_Restored: the original text is back in the context._"
    return _text(part)


def _thinking(text: str) -> str:
    if not text:
        return "_Thinking, not readable (kept as the provider sent it)._"
    if is_redaction(text):
        return f"_Thinking:_ {text}"
    return f"<details>\n<summary>Thinking</summary>\n\n{closed(text)}\n\n</details>"


def _call(part: ToolCallPart) -> str:
    title = f"**Tool call** `{part.name}` · `{part.call_id}`"
    if is_redaction(part.arguments):
        return f"{title}: {part.arguments}"
    arguments = part.input
    if isinstance(arguments, dict | list):
        return title + "\n\n" + fence(json.dumps(arguments, indent=2, ensure_ascii=False), "json")
    return title + "\n\n" + fence(part.arguments)


def _live_result(fold: ContextFold, part: LiveToolResult) -> str:
    note = ""
    if part.status == "truncated":
        stored = fold.tool_result(part.id)
        truncation = stored.truncation if stored is not None else None
        note = _truncated(truncation) if truncation is not None else "_Truncated at append._"
    elif part.status == "pruned":
        at = f" at {_time(part.compacted_at)}" if part.compacted_at is not None else ""
        note = f"_Pruned{at}: the output left the context; the model is shown this instead._"
    elif part.status == "previewed":
        note = "_Cut to a preview to fit the window: the model is shown this._"
    elif part.status == "restored":
        note = "_Restored: the original output is back in the context._"
    return _result(part.name, part.call_id, part.is_error, part.output, note)


def _result(name: str | None, call_id: str, is_error: bool, output: str, note: str) -> str:
    title = (
        f"**Tool result** of `{name}` · `{call_id}`" if name else f"**Tool result** · `{call_id}`"
    )
    if is_error:
        title += " · error"
    if is_redaction(output):
        return f"{title}: {output}"
    blocks = [title, fence(output)]
    if note:
        blocks.append(note)
    return "\n\n".join(blocks)


def _truncated(truncation: Truncation) -> str:
    end = "first" if truncation.direction == "head" else "last"
    shown = f"{_count(truncation.max_lines, 'line')} or {_count(truncation.max_bytes, 'byte')}"
    omitted = _count(truncation.omitted_lines, "line")
    return (
        f"_Truncated at append: the model was shown the {end} {shown}; {omitted} "
        f"({_count(truncation.omitted_bytes, 'byte')}) were left out, kept in the log._"
    )


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def _file(part: FilePart) -> str:
    if is_redaction(part.url or part.data or ""):
        return f"**File** ({part.media_type}): {part.url or part.data}"
    name = f" `{part.filename}`" if part.filename else ""
    where = (
        f"<{part.url}>" if part.url else f"inline, {len(part.data or ''):,} characters of base64"
    )
    return f"**File**{name} ({part.media_type}): {where}"


def _native(part: NativePart) -> str:
    title = f"**Provider block** ({part.native.api})"
    if not part.text:
        return f"{title}, kept as the provider sent it"
    if is_redaction(part.text):
        return f"{title}: {part.text}"
    return f"{title}\n\n{fence(part.text)}"


def _usage(usage: Usage) -> str:
    return (
        f"_Usage: {usage.input:,} input, {usage.cache_read:,} cache read, "
        f"{usage.cache_write:,} cache write, {usage.output:,} output tokens._"
    )


def _time(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")
