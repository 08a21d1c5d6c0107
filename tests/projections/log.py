"""A session log built in memory, for testing folds without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sessionstore.events import (
    Message,
    MessageAppended,
    Payload,
    RecordedEvent,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
)

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class Log:
    """Events numbered 1, 2, 3... one second apart from `T0`, with stand-in hashes."""

    def __init__(self, session_id: str = "s1", **started: object) -> None:
        self.session_id = session_id
        self.events: list[RecordedEvent] = []
        self.add(SessionStarted(model="gpt-4o", context_window=1000, **started))

    def add(self, payload: Payload) -> RecordedEvent:
        seq = len(self.events) + 1
        event = RecordedEvent(
            position=seq,
            session_id=self.session_id,
            seq=seq,
            event_id=f"e{seq}",
            type=str(payload.type),  # type: ignore[attr-defined]
            schema_version=payload.schema_version,
            recorded_at=T0 + timedelta(seconds=seq),
            prev_hash=f"h{seq - 1}",
            hash=f"h{seq}",
            payload=payload,
        )
        self.events.append(event)
        return event

    def message(self, message: Message) -> Message:
        self.add(MessageAppended(message=message))
        return message

    def text(self, role: str, text: str, tokens: int, message_id: str) -> Message:
        part = TextPart(id=f"{message_id}.t", text=text, tokens=tokens)
        return self.message(Message(id=message_id, role=role, parts=(part,)))

    def call(self, call_id: str, tokens: int, message_id: str, name: str = "read") -> Message:
        part = ToolCallPart.from_input(
            id=f"{message_id}.c", call_id=call_id, name=name, input={"path": "a.py"}, tokens=tokens
        )
        return self.message(Message(id=message_id, role="assistant", parts=(part,)))

    def result(
        self,
        call_id: str,
        output: str,
        tokens: int,
        message_id: str,
        *,
        shown: str | None = None,
        output_tokens: int | None = None,
        name: str = "read",
    ) -> ToolResultPart:
        truncation = None
        if shown is not None:
            truncation = Truncation(
                shown=shown,
                direction="head",
                max_lines=2000,
                max_bytes=51200,
                omitted_lines=1,
                omitted_bytes=len(output) - len(shown),
                output_tokens=output_tokens,
            )
        part = ToolResultPart(
            id=f"{message_id}.r",
            call_id=call_id,
            name=name,
            output=output,
            tokens=tokens,
            truncation=truncation,
        )
        self.message(Message(id=message_id, role="tool", parts=(part,)))
        return part
