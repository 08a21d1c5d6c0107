"""Small builders of events for tests: realistic shapes, one line each."""

from __future__ import annotations

from collections.abc import Sequence

from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    NewEvent,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


def started(title: str = "fix the failing test") -> SessionStarted:
    return SessionStarted(title=title, model="gpt-4o", context_window=128_000)


def user(text: str) -> MessageAppended:
    return MessageAppended(message=Message(role="user", parts=(TextPart(text=text),)))


def tool_call(call_id: str, name: str = "read", **tool_input: str) -> MessageAppended:
    part = ToolCallPart.from_input(call_id=call_id, name=name, input=tool_input)
    return MessageAppended(message=Message(role="assistant", parts=(part,)))


def tool_result(call_id: str, output: str) -> MessageAppended:
    part = ToolResultPart(call_id=call_id, output=output)
    return MessageAppended(message=Message(role="tool", parts=(part,)))


def conversation(turns: int) -> list[NewEvent]:
    """A session start and `turns` user / tool-call / tool-result triples."""
    events = [NewEvent(started())]
    for turn in range(turns):
        events.append(NewEvent(user(f"step {turn}: read the file")))
        events.append(NewEvent(tool_call(f"c{turn}", path=f"src/m{turn}.py")))
        events.append(NewEvent(tool_result(f"c{turn}", f"line {turn}\n" * 3)))
    return events


def compaction(
    summary: Message | str,
    first_kept: str,
    replaced: Sequence[str],
    *,
    tokens_before: int = 0,
    tokens_after: int = 0,
) -> ContextCompacted:
    """A manual compaction by a fixed summary (a user message when given as text)."""
    if isinstance(summary, str):
        summary = Message(role="user", parts=(TextPart(text=summary, tokens=3),))
    return ContextCompacted(
        summary=summary,
        first_kept_message_id=first_kept,
        replaced_message_ids=tuple(replaced),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        reason="manual",
        summarizer="fixed",
    )
