"""Claude Code transcripts (JSONL, one entry per line) as our payloads: streamed assistant
responses merged, sidechains and meta lines skipped, compact boundaries as compactions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from events import (
    ContextCompacted,
    FilePart,
    InvalidArgument,
    Message,
    MessageAppended,
    Part,
    Payload,
    TextPart,
    ToolResultPart,
    Usage,
)
from events._arguments import brief
from store._errors import ImportRefused
from store._importers._common import (
    Json,
    at_line,
    counted,
    file_from_url,
    json_object,
    message_tokens,
    string,
)
from store._importers._transcript import Transcript
from store._providers import anthropic_part

_SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's model name for messages it made itself


@dataclass(frozen=True, slots=True)
class ClaudeCodeImport:
    """A Claude Code transcript's events, with what its `SessionStarted` needs."""

    title: str | None
    model: str | None
    payloads: list[Payload]
    times: list[datetime | None]  # when each payload happened, from the lines' timestamps


def claude_code_events(lines: Iterable[str], encoding: str) -> ClaudeCodeImport:
    """The main conversation of a Claude Code transcript, its compactions included."""
    entries = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            with at_line(number):
                entries.append((number, _links_checked(json_object(text, number), number)))
    branch = _current_branch([entry for _, entry in entries])
    reader = _ClaudeCode(encoding)
    for number, entry in entries:
        if branch is None or entry.get("uuid") is None or entry.get("uuid") in branch:
            with at_line(number):
                reader.read(entry, number)
    return reader.finish()


def claude_code_transcript(text: str, encoding: str, name: str = "") -> Transcript:
    """A Claude Code transcript file as a `Transcript`: its session id is the entries'
    `sessionId` (else the file's name), and each event is keyed by the uuid it came from."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    read = claude_code_events(lines, encoding)
    transcript = Transcript(
        format="claude-code",
        source_id=_session_id(lines) or PurePath(name).stem or "transcript",
        title=read.title,
        model=read.model,
    )
    for payload, time in zip(read.payloads, read.times, strict=True):
        if isinstance(payload, MessageAppended):
            transcript.add(payload.message.id, payload, time)
        elif isinstance(payload, ContextCompacted):
            transcript.add(f"compaction:{payload.summary.id}", payload, time)
    return transcript


def _session_id(lines: list[str]) -> str | None:
    for text in lines:
        if '"sessionId"' in text:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
                return str(value["sessionId"]) or None
    return None


def _links_checked(entry: Json, line: int) -> Json:
    """The entry, once its links are known to be text: they key the branch walk below."""
    for key in ("uuid", "parentUuid", "logicalParentUuid"):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise ImportRefused(f"{key!r} is not a string", line)
    return entry


def _current_branch(entries: list[Json]) -> set[object] | None:
    """The uuids on the path from the last message back to the first: a user who rewinds
    leaves the abandoned branch in the file, and it was not what the model saw afterwards.
    A compact boundary links to what it summarized by `logicalParentUuid`. `None` (keep
    everything) for transcripts that do not link their entries."""
    if not any("parentUuid" in entry for entry in entries):
        return None
    by_uuid = {entry["uuid"]: entry for entry in entries if entry.get("uuid") is not None}
    leaf = next(
        (
            entry.get("uuid")
            for entry in reversed(entries)
            if entry.get("type") in ("user", "assistant") and entry.get("isSidechain") is not True
        ),
        None,
    )
    branch: set[object] = set()
    while leaf is not None and leaf not in branch:
        branch.add(leaf)
        entry = by_uuid.get(leaf, {})
        leaf = entry.get("parentUuid") or entry.get("logicalParentUuid")
    return branch


@dataclass(slots=True)
class _Turn:
    """An assistant response still being read: Claude Code writes one line per block."""

    uuid: str
    api_id: object
    parts: tuple[Part, ...]
    usage: Usage | None
    time: datetime | None


@dataclass(slots=True)
class _ClaudeCode:
    """The reader's state across lines: a response spans lines, a compaction needs the live
    messages (and their tokens), and a result needs the call it answers."""

    encoding: str
    payloads: list[Payload] = field(default_factory=list)
    times: list[datetime | None] = field(default_factory=list)
    now: datetime | None = None  # the timestamp of the line being read
    live: dict[str, int] = field(default_factory=dict)  # live message id -> its tokens
    tools: dict[str, str] = field(default_factory=dict)  # tool_use id -> tool name
    seen: set[str] = field(default_factory=set)
    turn: _Turn | None = None
    manual: bool = False  # whether the last compact_boundary was a manual /compact
    title: str | None = None
    model: str | None = None

    def read(self, entry: Json, line: int) -> None:
        self.now = _timestamp(entry.get("timestamp"), line)
        kind = entry.get("type")
        if kind == "summary":
            self.title = string(entry, "summary", "a summary line", line)
        elif entry.get("isSidechain") is True or entry.get("isMeta") is True:
            return  # a subagent's traffic, or context Claude Code adds for itself
        elif kind == "system" and entry.get("subtype") == "compact_boundary":
            metadata = entry.get("compactMetadata")
            self.manual = isinstance(metadata, dict) and metadata.get("trigger") == "manual"
        elif kind in ("user", "assistant"):
            self._message(entry, str(kind), line)

    def _message(self, entry: Json, kind: str, line: int) -> None:
        what = "an assistant line" if kind == "assistant" else "a user line"
        uuid = string(entry, "uuid", what, line)
        if not uuid:
            raise ImportRefused(f"{what} has an empty 'uuid'", line)
        if uuid in self.seen:
            return  # a copy of a line written already (Claude Code repeats some on resume)
        self.seen.add(uuid)
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, str | list):
            raise ImportRefused(f"{what} has no message content", line)
        if not content:
            return  # an interrupted response can leave a line with no blocks
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if kind == "assistant":
            self._assistant(uuid, message, blocks, line)
        elif entry.get("isCompactSummary") is True:
            self._compaction(uuid, blocks, line)
        else:
            self._user(uuid, blocks, line)

    def _assistant(self, uuid: str, message: Json, blocks: list[Any], line: int) -> None:
        """Lines of one API response (same `message.id`) merge into one message; the last
        line's usage is the response's."""
        model = message.get("model")
        if self.model is None and isinstance(model, str) and model != _SYNTHETIC_MODEL:
            self.model = model
        parts = [self._assistant_part(*_block(raw, line), line) for raw in blocks]
        usage = _usage(message.get("usage"), line)
        api_id, turn = message.get("id"), self.turn
        if turn is not None and api_id is not None and turn.api_id == api_id:
            turn.parts += counted(parts, self.encoding, turn.uuid, len(turn.parts))
            turn.usage = usage or turn.usage
            return
        self._flush()
        self.turn = _Turn(uuid, api_id, counted(parts, self.encoding, uuid), usage, self.now)

    def _assistant_part(self, block: Json, kind: str, line: int) -> Part:
        """A block of an API response, kept as `append_anthropic` keeps it (thinking with its
        signature, server tool blocks verbatim), so `to_anthropic()` sends it back; an image
        (which no response holds) is still a file part, as in a user line."""
        if kind == "text":
            string(block, "text", "a text block", line)
        elif kind == "thinking":
            string(block, "thinking", "a thinking block", line)
        elif kind == "image":
            return _other(block, kind, line)
        elif kind == "tool_use":
            call_id = string(block, "id", "a tool_use block", line)
            name = string(block, "name", f"tool_use {brief(call_id)}", line)
            if not isinstance(block.get("input"), dict):
                raise ImportRefused(
                    f"tool_use {brief(call_id)} has an input that is not an object", line
                )
            self.tools[call_id] = name
        try:
            return anthropic_part(block)
        except InvalidArgument as exc:
            raise ImportRefused(str(exc), line) from None

    def _user(self, uuid: str, blocks: list[Any], line: int) -> None:
        """Tool results become a tool message; text and images (a result's images too, which a
        tool message cannot hold) a user message right after it."""
        results: list[Part] = []
        shown: list[Part] = []
        for block, kind in (_block(raw, line) for raw in blocks):
            if kind == "tool_result":
                result, images = self._result(block, line)
                results.append(result)
                shown.extend(images)
            else:
                shown.append(_other(block, kind, line))
        if results:
            self._emit(Message(id=uuid, role="tool", parts=counted(results, self.encoding, uuid)))
        if shown:
            user_id = f"{uuid}.user" if results else uuid
            parts = counted(shown, self.encoding, user_id)
            self._emit(Message(id=user_id, role="user", parts=parts))

    def _result(self, block: Json, line: int) -> tuple[ToolResultPart, list[Part]]:
        call_id = string(block, "tool_use_id", "a tool_result block", line)
        name = self.tools.get(call_id)  # unknown: kept; the renderers leave orphans out
        content = block.get("content")
        if content is None or isinstance(content, str):
            blocks = [{"type": "text", "text": content or ""}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise ImportRefused(f"tool_result {brief(call_id)} has content that is not text", line)
        parts = [_other(inner, kind, line) for inner, kind in (_block(raw, line) for raw in blocks)]
        output = "\n".join(p.text for p in parts if isinstance(p, TextPart))
        images: list[Part] = [p for p in parts if isinstance(p, FilePart)]
        is_error = block.get("is_error") is True
        return ToolResultPart(call_id=call_id, name=name, output=output, is_error=is_error), images

    def _compaction(self, uuid: str, blocks: list[Any], line: int) -> None:
        """Every live message replaced by Claude Code's summary, which becomes the first."""
        self._flush()
        text = "\n".join(_text(_block(raw, line)[0], line).text for raw in blocks)
        parts = counted([TextPart(text=text)], self.encoding, uuid)
        summary = Message(id=uuid, role="user", parts=parts)
        compaction = ContextCompacted(
            summary=summary,
            first_kept_message_id=uuid,  # not live yet: the fold puts the summary at the end
            replaced_message_ids=tuple(self.live),
            tokens_before=sum(self.live.values()),
            tokens_after=message_tokens(summary),
            reason="manual" if self.manual else "before_llm_call",
            summarizer="claude-code",
        )
        self.payloads.append(compaction)
        self.times.append(self.now)
        self.live = {uuid: compaction.tokens_after}
        self.manual = False

    def _emit(self, message: Message, time: datetime | None = None) -> None:
        self._flush()
        self.payloads.append(MessageAppended(message=message))
        self.times.append(time or self.now)
        self.live[message.id] = message_tokens(message)

    def _flush(self) -> None:
        turn, self.turn = self.turn, None
        if turn is not None:
            message = Message(id=turn.uuid, role="assistant", parts=turn.parts, usage=turn.usage)
            self._emit(message, turn.time)

    def finish(self) -> ClaudeCodeImport:
        self._flush()
        if not self.payloads:
            raise ImportRefused("the transcript holds no messages")
        return ClaudeCodeImport(self.title, self.model, self.payloads, self.times)


_EARLIEST_YEAR = 1000
"""Times before this are refused: the hashed and exported form of a time (`format_timestamp`)
writes years below 1000 with fewer than four digits, which no import reads back."""


def _timestamp(value: object, line: int) -> datetime | None:
    """A line's ISO timestamp as aware UTC; `None` when it has none or it does not parse.
    `ImportRefused` when it parses but has no UTC time (year 1 east of Greenwich) or falls
    before year 1000."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    try:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        moment = datetime.min.replace(tzinfo=UTC)
    if moment.year < _EARLIEST_YEAR:
        raise ImportRefused(f"timestamp {brief(value)} is out of range", line)
    return moment


def _block(raw: object, line: int) -> tuple[Json, str]:
    """A content block and its type."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(kind, str):
        raise ImportRefused("a content block is not an object with a type", line)
    return raw, kind


def _other(block: Json, kind: str, line: int) -> Part:
    """A text or image block as such; any other kind (a server tool's use or result, a
    document...) kept as text holding its JSON, so the import never drops what was said."""
    if kind == "text":
        return _text(block, line)
    if kind == "image":
        try:
            return _image(block, line)
        except ImportRefused:
            pass
    return TextPart(text=f"[{kind} block] {json.dumps(block, ensure_ascii=False)}")


def _text(block: Json, line: int) -> TextPart:
    kind = block.get("type")
    if kind != "text":
        raise ImportRefused(f"a {brief(kind)} block stands where only text can", line)
    return TextPart(text=string(block, "text", "a text block", line))


def _image(block: Json, line: int) -> FilePart:
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    if source.get("type") == "base64":
        media_type = string(source, "media_type", "an image source", line)
        return FilePart(media_type=media_type, data=string(source, "data", "an image source", line))
    if source.get("type") == "url":
        return file_from_url(string(source, "url", "an image source", line))
    raise ImportRefused("an image block has neither a base64 nor a url source", line)


def _usage(raw: object, line: int) -> Usage | None:
    """Anthropic's usage; its `input_tokens` leaves out the cached prompt, as ours does."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ImportRefused("an assistant line has usage that is not an object", line)
    counts = {
        "input": raw.get("input_tokens") or 0,
        "output": raw.get("output_tokens") or 0,
        "cache_read": raw.get("cache_read_input_tokens") or 0,
        "cache_write": raw.get("cache_creation_input_tokens") or 0,
    }
    try:
        return Usage.model_validate(counts, strict=True)
    except ValidationError:
        raise ImportRefused("an assistant line has usage that is not token counts", line) from None
