"""Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`, older ones
`.json`; `/chat save` checkpoints `~/.gemini/tmp/<project>/checkpoint-<tag>.json`) as a
Transcript.

Gemini CLI records a session (`ChatRecordingService` in `packages/core`) as JSONL: a first
line of metadata (`sessionId`, `projectHash`, `startTime`, `kind`...), then a line per
message record (`{"id", "timestamp", "type": "user" | "gemini" | "info" | "error" |
"warning", "content"}`, a `gemini` one with `toolCalls`, `thoughts`, `tokens`, `model`),
written again whole each time it changes (its tokens arrive, its tool calls finish), then
`{"$set": {...}}` metadata updates (a `messages` list there replaces the history: a
compression, a rollback) and `{"$rewindTo": id}` (the history from that message on is
dropped). Versions before JSONL wrote the whole record as one JSON document, `messages`
inline; a checkpoint is the Gemini API history itself (`{"history": [Content...]}`, or the
bare list in older versions). All three are read here.

What maps to what (what Gemini CLI sends the model when it resumes a session,
`convertSessionToClientHistory`, is the guide):
- a message record, at the line it first appears, as its last version in the file (the one
  Gemini CLI resumes with); each earlier or later version's line is a record;
- `user` -> a user message (text, inline data and files as ours, any other Gemini part kept
  verbatim in a native part); one Gemini CLI does not send again (a slash command, `?help`,
  `<session_context>`, empty) -> a record (`gemini-cli.user`); function responses that answer
  calls already answered (Gemini CLI records a tool's response both in the call and as a
  message) are kept in the record, not answered twice;
- `gemini` -> an assistant message: its content's parts when they hold the calls and
  thoughts (current versions), else its `thoughts` as reasoning, its text, its `toolCalls` as
  tool calls; then a tool message of the calls' results (`toolCalls[].result`, a
  `functionResponse`'s `response.output` as the output, the rest as JSON; `status: "error"`
  an error). A call without a result stays unanswered;
- `info`, `error`, `warning` -> records (`gemini-cli.<type>`): shown to the user, never sent;
- `$rewindTo` -> `MessagesReverted` of the messages from that one on (`SessionCleared` from
  the first); a `$set` `messages` list -> the messages it drops leave the context, those it
  adds are appended (a list of only new messages, Gemini CLI's compression, is a
  `ContextCompacted` whose summary is its first message); a message it keeps whose content it
  changed (a masked tool output) stays as it was, the change kept in the record of its line;
- the metadata line and every `$set` -> records; the `summary` is the title;
- a subagent's session (`chats/<parent session id>/<session id>.jsonl`) -> its own session,
  linked to the parent's tool call that ran it (`toolCalls[].agentId`).
Each message keeps its record, without its `content` (kept as the parts), as its `native`
(api `gemini-cli`); a Gemini part that is not plain text keeps itself verbatim (api
`google.genai`). A line that is not JSON or not a record is skipped and reported.

Keys: a message's own id (a message that comes back after it left the history, `<id>@<line>`;
its results `<id>.results`), a record's line (`line:<n>`); in a single JSON document, the
metadata by its `lastUpdated`; in a checkpoint, a content's position (`content:<n>`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

from sessionstore.events import (
    ContextCompacted,
    FilePart,
    ImportRefused,
    Message,
    MessageAppended,
    MessagesReverted,
    Native,
    NativePart,
    Part,
    Payload,
    ReasoningPart,
    Record,
    RecordAppended,
    SessionCleared,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    brief,
    check_json_value,
)
from sessionstore.importers._codex_meta import timestamp
from sessionstore.importers._common import Json, at_line, counted, message_tokens
from sessionstore.importers._lines import TranscriptLines
from sessionstore.importers._transcript import Link, Skipped, Spool, Transcript

FORMAT = "gemini-cli"
RECORDED = "gemini-cli"
"""The api of the natives that keep Gemini CLI's records (a message's, a line's)."""
GENAI = "google.genai"
"""The api of a native part holding a Gemini API part verbatim."""
_IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
"""How the user records Gemini CLI does not send again begin (`isIgnoredUserContent`)."""
_SUBAGENT_ID = 8
"""How many characters of the session id a session file's name ends with."""

Place = tuple[int, int | None]
"""Where a message record is: its line, and its index when a `$set` list holds it."""


def looks_like_gemini_cli(value: Any) -> bool:
    """Whether a file's first JSON value is Gemini CLI's: a session's metadata (or the whole
    record of an older version), or a checkpoint (`{"history": [...]}`, or the bare list)."""
    if isinstance(value, list):
        return _is_history(value)
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
        return True
    history = value.get("history")
    return isinstance(history, list) and (not history or _is_history(history))


def _is_history(value: list[Any]) -> bool:
    return bool(value) and all(
        isinstance(c, dict)
        and c.get("role") in ("user", "model")
        and isinstance(c.get("parts"), list)
        for c in value[:20]
    )


def gemini_cli_subagents(path: Path) -> list[Path]:
    """The subagents' sessions of a session file: `chats/<parent session id>/*.jsonl`, in the
    folder named by the session's full id, whose first characters end the file's name
    (`session-<time>-<id8>.jsonl`)."""
    short = path.stem.rsplit("-", 1)[-1]
    if not path.name.startswith("session-") or len(short) < _SUBAGENT_ID:
        return []
    return sorted(
        found
        for folder in path.parent.glob(f"{short}*")
        if folder.is_dir()
        for found in folder.glob("*.jsonl")
    )


def gemini_cli_transcript(
    lines: TranscriptLines,
    encoding: str,
    name: str = "",
    companions: Mapping[str, TranscriptLines] | None = None,
    *,
    spool: bool = False,
) -> Transcript:
    """A Gemini CLI session file (or checkpoint) as one transcript, its subagents'
    (`companions`, by file name) as its children. `ImportRefused` when it is none of them."""
    out = Transcript(FORMAT, "", spool=Spool() if spool else None)
    try:
        first = _first_record(lines)
        if first is not None:  # JSONL (an older version's whole record on one line too)
            whole = isinstance(first.get("messages"), list)
            session = _Session(encoding, out, _jsonl(lines, out), whole=whole)
        else:
            document = _document(lines)
            if isinstance(document, dict) and isinstance(document.get("sessionId"), str):
                session = _Session(encoding, out, _legacy(document, out), whole=True)
            elif looks_like_gemini_cli(document):
                history = document if isinstance(document, list) else document["history"]
                _checkpoint(history, encoding, out)
                out.source_id = PurePath(name).stem or "checkpoint"
                out.title = out.source_id.removeprefix("checkpoint-")  # the tag it was saved as
                return out
            else:
                raise ImportRefused("not a Gemini CLI session: no metadata, messages or history")
        session.run()
    except BaseException:
        out.close()
        raise
    out.source_id = session.session_id or PurePath(name).stem or "session"
    for file_name, companion in sorted((companions or {}).items()):
        child = Transcript(FORMAT, "", spool=Spool() if spool else None)
        own = _Session(encoding, child, _jsonl(companion, child))
        own.run()
        child.source_id = own.session_id or PurePath(file_name).stem
        child.parent = Link(out.source_id, session.agents.get(child.source_id))
        child.skipped = [Skipped(s.line, s.reason, file_name) for s in child.skipped]
        if child.size:
            out.children.append(child)
        else:
            child.close()
    return out


# the records of a file


@dataclass(frozen=True, slots=True)
class _At:
    """Where a record is: its line (a position in a document), where to read it again
    (`offset`), and, for a message inside a `$set` list, its index there."""

    number: int
    offset: int
    index: int | None = None

    @property
    def place(self) -> Place:
        return (self.number, self.index)


@dataclass(frozen=True, slots=True)
class _Line(_At):
    """A record of the file, and where it is."""

    record: Json = field(default_factory=dict)

    def inner(self, index: int, message: Json) -> _Line:
        """The message a `$set` list holds at `index`."""
        return _Line(self.number, self.offset, index, message)


@dataclass(frozen=True, slots=True)
class _Source:
    """A file's records, as often as a reader passes over them, and one read again (what
    the first pass keeps of a record is where it is, not the record)."""

    each: Callable[[], Iterator[_Line]]
    again: Callable[[_At], Json]


_HEAD = 20
"""How many of a file's first lines are read for a record, to tell JSONL from a document."""


def _first_record(lines: TranscriptLines) -> Json | None:
    """The first of a file's first lines that is a record by itself (`None`: the file is one
    JSON document, or none of Gemini CLI's): a malformed first line does not hide the rest."""
    for number, _, text in lines.numbered():
        if number > _HEAD:
            break
        if not text.lstrip().startswith("{"):
            continue
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and _kind_of(value):
            return value
    return None


def _document(lines: TranscriptLines) -> Any:
    try:
        return json.loads("\n".join(text for _, _, text in lines.numbered()))
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise ImportRefused("the JSON is nested too deeply to read") from None


def _kind_of(record: Json) -> str:
    """What a record of the file is: "message", "rewind", "set", "metadata", or ""."""
    if isinstance(record.get("$rewindTo"), str):
        return "rewind"
    if isinstance(record.get("id"), str) and record["id"]:
        return "message"
    if isinstance(record.get("$set"), dict):
        return "set"
    if isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
        return "metadata"
    return ""


def _listed(record: Json) -> list[tuple[int, Json]]:
    """The message records a `$set` (or an older version's whole record) lists, by index."""
    holder = record["$set"] if isinstance(record.get("$set"), dict) else record
    listed = holder.get("messages")
    if not isinstance(listed, list):
        return []
    return [
        (n, m) for n, m in enumerate(listed) if isinstance(m, dict) and _kind_of(m) == "message"
    ]


def _jsonl(lines: TranscriptLines, out: Transcript) -> _Source:
    """A JSONL session's records, a line at a time; a line that is not one is reported."""

    def each() -> Iterator[_Line]:
        for number, offset, text in lines.numbered():
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                out.skip(number, f"not JSON: {exc.msg} (column {exc.colno})")
                continue
            except RecursionError:
                out.skip(number, "the JSON is nested too deeply to read")
                continue
            if not isinstance(value, dict) or not _kind_of(value):
                out.skip(number, "not a Gemini CLI record (metadata, message, $set, $rewindTo)")
                continue
            yield _Line(number, offset, None, value)

    def again(at: _At) -> Json:
        value = json.loads(lines.line_at(at.offset))
        assert isinstance(value, dict)
        return value if at.index is None else dict(_listed(value))[at.index]

    return _Source(each, again)


def _legacy(document: Json, out: Transcript) -> _Source:
    """A session recorded as one JSON document (before JSONL): its metadata, then each message,
    numbered from 1 in that order."""
    messages = document.get("messages")
    records = [
        {key: value for key, value in document.items() if key != "messages"},
        *(messages if isinstance(messages, list) else []),
    ]
    for index, value in enumerate(records):
        if not (isinstance(value, dict) and _kind_of(value)):
            out.skip(index + 1, "not a Gemini CLI message record")

    def each() -> Iterator[_Line]:
        for index, value in enumerate(records):
            if isinstance(value, dict) and _kind_of(value):
                yield _Line(index + 1, index, None, value)

    def again(at: _At) -> Json:
        value = records[at.offset]
        assert isinstance(value, dict)
        return value

    return _Source(each, again)


# the session


@dataclass(slots=True)
class _Life:
    """A message from where it first appears in the history until it leaves: the key it is
    written under, and where its last version is."""

    key: str
    last: _At


@dataclass(slots=True)
class _Session:
    """Reads the records twice: first to follow the history as Gemini CLI's own loader does
    (`loadConversationRecord`), which tells each message's last version (a message is written
    again whole when it changes) and where it first appears; then to write them in order."""

    encoding: str
    out: Transcript
    source: _Source
    whole: bool = False  # one JSON document, rewritten whole as the session grows
    session_id: str | None = None
    agents: dict[str, str] = field(default_factory=dict)  # subagent -> the call that ran it
    lives: dict[Place, _Life] = field(default_factory=dict)  # by where they first appear
    lasts: set[Place] = field(default_factory=set)  # where each life's last version is
    history: list[str] = field(default_factory=list)  # the Gemini ids in the history
    ours: dict[str, list[str]] = field(default_factory=dict)  # Gemini id -> our message ids
    live: dict[str, int] = field(default_factory=dict)  # our live message ids -> tokens
    calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    answered: set[str] = field(default_factory=set)

    def run(self) -> None:
        self._plan()
        for line in self.source.each():
            try:
                with at_line(line.number):
                    self._read(line)
            except ImportRefused as refused:
                self.out.skip(refused.line or line.number, refused.reason)
        # both passes report a line that is not a record: once, in order
        self.out.skipped = sorted(set(self.out.skipped), key=lambda s: (s.line or 0, s.reason))
        self.out.live_messages = len(self.live)
        self.out.live_tokens = sum(self.live.values())

    # the first pass

    def _plan(self) -> None:
        current: dict[str, _Life] = {}  # Gemini id -> its life, while in the history
        used: set[str] = set()

        def appear(line: _Line) -> None:
            gemini_id = line.record["id"]
            at = _At(line.number, line.offset, line.index)
            life = current.get(gemini_id)
            if life is not None:
                life.last = at
                return
            key = gemini_id if gemini_id not in used else f"{gemini_id}@{line.number}"
            used.add(gemini_id)
            current[gemini_id] = self.lives[line.place] = _Life(key, at)

        def keep(kept: list[str]) -> None:
            staying = set(kept)
            for gemini_id in [g for g in current if g not in staying]:
                del current[gemini_id]

        for line in self.source.each():
            record, kind = line.record, _kind_of(line.record)
            if kind == "metadata" and self.session_id is None:
                self.session_id = record["sessionId"]
            if kind == "message":
                appear(line)
            elif kind == "rewind":
                order = list(current)
                target = record["$rewindTo"]
                keep(order[: order.index(target)] if target in order else [])
            elif kind in ("set", "metadata"):
                listed = _listed(record)
                if kind == "set" and "messages" in record["$set"]:
                    keep([m["id"] for _, m in listed])
                for index, message in listed:
                    if message["id"] not in current:  # a kept one is not a new version
                        appear(line.inner(index, message))
        self.lasts = {life.last.place for life in self.lives.values()}

    # the second pass

    def _read(self, line: _Line) -> None:
        record, kind = line.record, _kind_of(line.record)
        if kind == "message":
            time = timestamp(record.get("timestamp"))
            life = self.lives.get(line.place)
            if line.place not in self.lasts:  # a version the message's last replaced
                self._record(f"gemini-cli.{_type_of(record)}.version", line, time)
            if life is not None:
                self._message(life, line)
        elif kind == "metadata":
            metadata = {key: value for key, value in record.items() if key != "messages"}
            key = f"metadata@{record.get('lastUpdated')}" if self.whole else f"line:{line.number}"
            started = timestamp(record.get("startTime"))
            self._add_record("gemini-cli.metadata", key, metadata, started)
            self._titled(record.get("summary"))
            for index, message in _listed(record):  # an older version's record on one line
                self._listed_message(line, index, message)
        elif kind == "rewind":
            self._record("gemini-cli.rewind", line, None)
            target = record["$rewindTo"]
            kept = self.history[: self.history.index(target)] if target in self.history else []
            self._leave(kept, f"line:{line.number}.revert")
        else:
            self._record("gemini-cli.set", line, None)
            self._titled(record["$set"].get("summary"))
            if "messages" in record["$set"]:
                self._replaced(line)

    def _titled(self, summary: object) -> None:
        if isinstance(summary, str) and summary:
            self.out.title = summary

    def _replaced(self, line: _Line) -> None:
        """A `$set` message list: the history becomes it. What it drops leaves the context;
        what it adds is appended; a list of only new messages (Gemini CLI's compression) is
        a compaction, its first message the summary."""
        listed = _listed(line.record)
        ids = [m["id"] for _, m in listed]
        new = [(index, m) for index, m in listed if (line.number, index) in self.lives]
        kept = [g for g in self.history if g in ids]
        if not kept and self.history and new:
            index, first = new[0]
            if self._compacted(self.lives[(line.number, index)], line, index, first):
                new = new[1:]
            else:
                self._leave([], f"line:{line.number}.revert")
        else:
            self._leave(kept, f"line:{line.number}.revert")
        for index, message in new:
            self._listed_message(line, index, message)

    def _listed_message(self, line: _Line, index: int, message: Json) -> None:
        life = self.lives.get((line.number, index))
        if life is not None:
            self._message(life, line.inner(index, message))

    def _compacted(self, life: _Life, line: _Line, index: int, first: Json) -> bool:
        """The summary of a compaction replaces every live message; `False` when the first
        message is nothing the model is shown."""
        record = first if life.last.place == (line.number, index) else self.source.again(life.last)
        parts = _parts(record.get("content"), model=_type_of(record) == "gemini")
        parts = [p for p in parts if not isinstance(p, ToolResultPart)]
        if not parts:
            return False
        role = "assistant" if _type_of(record) == "gemini" else "user"
        native = Native(api=RECORDED, value=_without_content(record))
        summary = Message(
            id=life.key, role=role, parts=counted(parts, self.encoding, life.key), native=native
        )
        compaction = ContextCompacted(
            summary=summary,
            first_kept_message_id=summary.id,
            replaced_message_ids=tuple(self.live),
            tokens_before=sum(self.live.values()),
            tokens_after=message_tokens(summary),
            reason="before_llm_call",
            summarizer="gemini-cli",
        )
        self.out.add(f"{life.key}.compaction", compaction, timestamp(record.get("timestamp")))
        self.live = {summary.id: message_tokens(summary)}
        self.history = [record["id"]]
        self.ours = {record["id"]: [summary.id]}
        return True

    def _leave(self, kept: list[str], key: str) -> None:
        """The history becomes `kept` (what it keeps, in order): the messages of the rest
        leave the context."""
        staying = set(kept)
        gone_ids = [g for g in self.history if g not in staying]
        self.history = [g for g in self.history if g in staying]
        gone = tuple(m for g in gone_ids for m in self.ours.pop(g, ()) if m in self.live)
        if not gone:
            return
        before = [m for g in self.history for m in self.ours.get(g, ()) if m in self.live]
        payload: Payload
        if before:
            payload = MessagesReverted(after_message_id=before[-1], reverted_message_ids=gone)
        else:
            payload = SessionCleared(cleared_message_ids=gone, reason="gemini-cli")
        self.out.add(key, payload, None)
        for message_id in gone:
            del self.live[message_id]

    # messages

    def _message(self, life: _Life, place: _Line) -> None:
        """A message where it first appears, as its last version."""
        record = place.record if life.last.place == place.place else self.source.again(life.last)
        time = timestamp(record.get("timestamp"))
        self.history.append(record["id"])
        self.ours[record["id"]] = []
        kind = _type_of(record)
        if kind == "user":
            self._user(record, life.key, time)
        elif kind == "gemini":
            self._gemini(record, life.key, time)
        else:  # info, error, warning: shown to the user, never sent
            self._add_record(f"gemini-cli.{kind}", life.key, record, time)

    def _user(self, record: Json, key: str, time: datetime | None) -> None:
        """A user record: the results it answers first, then what the user said, unless Gemini
        CLI does not send it again (then the record keeps it)."""
        raw = record.get("content")
        parts = _parts(raw)
        results = []
        for part in parts:
            if isinstance(part, ToolResultPart) and part.call_id not in self.answered:
                self.answered.add(part.call_id)
                results.append(part.model_copy(update={"name": self.calls.get(part.call_id)}))
        if results:
            tool_id = f"{key}.results"
            tool = Message(id=tool_id, role="tool", parts=counted(results, self.encoding, tool_id))
            self._emit(record["id"], tool, time)
        shown = [p for p in parts if not isinstance(p, ToolResultPart)]
        said = _as_text(raw).strip()
        if shown and said and not said.startswith(_IGNORED_PREFIXES):
            native = Native(api=RECORDED, value=_without_content(record))
            parts_of = counted(shown, self.encoding, key)
            self._emit(
                record["id"], Message(id=key, role="user", parts=parts_of, native=native), time
            )
            if self.out.title is None:
                self.out.title = said.splitlines()[0][:100]
        else:
            self._add_record("gemini-cli.user", key, record, time)

    def _gemini(self, record: Json, key: str, time: datetime | None) -> None:
        """A model turn, then its calls' results."""
        model = record.get("model")
        if self.out.model is None and isinstance(model, str) and model:
            self.out.model = model
        message = self._assistant(record, key)
        if message is None:  # nothing the model is shown again
            self._add_record("gemini-cli.gemini", key, record, time)
            return
        self._emit(record["id"], message, time)
        results = []
        for call in _tool_calls(record):
            agent, call_id = call.get("agentId"), call.get("id")
            if isinstance(agent, str) and agent and isinstance(call_id, str):
                self.agents.setdefault(agent, call_id)
            result = _call_result(call)
            if result is not None and result.call_id not in self.answered:
                self.answered.add(result.call_id)
                results.append(result)
        if results:
            tool_id = f"{key}.results"
            tool = Message(id=tool_id, role="tool", parts=counted(results, self.encoding, tool_id))
            self._emit(record["id"], tool, time)

    def _assistant(self, record: Json, key: str) -> Message | None:
        """A `gemini` record's model turn, as Gemini CLI rebuilds it to resume: its content's
        parts when they hold its calls or thoughts, else its thoughts, text and calls."""
        calls = _tool_calls(record)
        content = _parts(record.get("content"), model=True, calls=calls, key=key)
        parts: list[Part] = content
        if not any(isinstance(p, ToolCallPart | ReasoningPart) for p in content):
            parts = [*_thoughts(record), *(p for p in content if _said(p))]
            for call in calls:
                call_id, name = call.get("id"), call.get("name")
                if isinstance(call_id, str) and call_id and isinstance(name, str) and name:
                    arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
                    parts.append(ToolCallPart(call_id=call_id, name=name, arguments=arguments))
        self.calls.update({p.call_id: p.name for p in parts if isinstance(p, ToolCallPart)})
        if not parts:
            return None
        native = Native(api=RECORDED, value=_without_content(record))
        return Message(
            id=key,
            role="assistant",
            parts=counted(parts, self.encoding, key),
            usage=_usage(record.get("tokens")),
            native=native,
        )

    def _emit(self, gemini_id: str, message: Message, time: datetime | None) -> None:
        if message.native is not None:
            check_json_value(message.native.value)  # a NaN, say: the line is skipped
        self.out.add(message.id, MessageAppended(message=message), time)
        self.ours.setdefault(gemini_id, []).append(message.id)
        self.live[message.id] = message_tokens(message)

    # records

    def _record(self, kind: str, line: _Line, time: datetime | None) -> None:
        self._add_record(kind, f"line:{line.number}", line.record, time)

    def _add_record(self, kind: str, key: str, value: Json, time: datetime | None) -> None:
        part = NativePart(id=f"{key}.0", native=Native(api=RECORDED, value=value))
        check_json_value(part.model_dump(mode="json"))  # a NaN, say: the line is skipped
        record = Record(id=key, kind=kind[:128], parts=(part,))
        self.out.add(key, RecordAppended(record=record), time)


# Gemini's parts


def _type_of(record: Json) -> str:
    kind = record.get("type")
    return kind if isinstance(kind, str) and kind else "message"


def _without_content(record: Json) -> Json:
    return {key: value for key, value in record.items() if key != "content"}


def _said(part: Part) -> bool:
    return not (isinstance(part, TextPart) and not part.text)


def _as_text(content: Any) -> str:
    """A content as Gemini CLI reads it to tell what it is (`partToString`, verbose)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_as_text(part) for part in content)
    if not isinstance(content, dict):
        return ""
    if isinstance(content.get("text"), str):
        return str(content["text"])
    return f"[{next(iter(content), 'part')}]"


def _thoughts(record: Json) -> list[Part]:
    """A `gemini` record's `thoughts` as reasoning, as Gemini CLI sends them back."""
    found: list[Part] = []
    thoughts = record.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict) and isinstance(thought.get("description"), str):
            subject, text = thought.get("subject"), thought["description"]
            shown = f"**{subject}** {text}" if isinstance(subject, str) and subject else text
            found.append(ReasoningPart(text=shown, native=Native(api=RECORDED, value=thought)))
    return found


def _parts(
    content: Any, *, model: bool = False, calls: list[Json] | None = None, key: str = ""
) -> list[Part]:
    """A `PartListUnion` (a string, a part, or a list of both) as our parts. A function call
    without an id takes the id of the record's tool call of its name (else one from its
    place), as Gemini CLI pairs them."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)]
    free = [c for c in calls or [] if isinstance(c.get("id"), str) and c["id"]]
    parts = []
    for n, raw in enumerate(content if isinstance(content, list) else [content]):
        call = raw.get("functionCall") if isinstance(raw, dict) and model else None
        call_id = None
        if isinstance(call, dict) and not call.get("id"):
            match = next((c for c in free if c.get("name") == call.get("name")), None)
            if match is not None:
                free.remove(match)
            call_id = str(match["id"]) if match is not None else f"{key}.call{n}"
        parts.append(_part(raw, model, call_id))
    return parts


def _part(raw: Any, model: bool, call_id: str | None = None) -> Part:
    """One Gemini part: text and thoughts, a call (model) or a response (user), inline data and
    files as ours; anything else verbatim in a native part."""
    if isinstance(raw, str):
        return TextPart(text=raw)
    if not isinstance(raw, dict):
        raise ImportRefused(f"a content part is not an object or text: {brief(raw)}")
    native = Native(api=GENAI, value=raw)
    text = raw.get("text")
    if isinstance(text, str):
        if raw.get("thought") is True:
            return ReasoningPart(text=text, native=native)
        return TextPart(text=text, native=native if set(raw) != {"text"} else None)
    call = raw.get("functionCall")
    if model and isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]:
        call_id = call_id or call.get("id")
        if isinstance(call_id, str) and call_id:
            arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
            return ToolCallPart(
                call_id=call_id, name=call["name"], arguments=arguments, native=native
            )
    response = raw.get("functionResponse")
    if not model and isinstance(response, dict) and isinstance(response.get("id"), str):
        output, is_error = _response_output(response.get("response"))
        if response["id"]:
            return ToolResultPart(call_id=response["id"], output=output, is_error=is_error)
    for field_name, key in (("inlineData", "data"), ("fileData", "fileUri")):
        value = raw.get(field_name)
        if isinstance(value, dict) and isinstance(value.get(key), str):
            media = value.get("mimeType")
            media = media if isinstance(media, str) and media else "application/octet-stream"
            if key == "data":
                return FilePart(media_type=media, data=value[key], native=native)
            return FilePart(media_type=media, url=value[key], native=native)
    return NativePart(native=native, text=f"[{next(iter(raw), 'part')}]")


def _response_output(response: Any) -> tuple[str, bool]:
    """A function response's output as text: its `output` when that is all it holds (as
    Gemini CLI writes a tool's), its `error` when that is, else the response as JSON."""
    if isinstance(response, dict) and len(response) == 1:
        if isinstance(response.get("output"), str):
            return response["output"], False
        if isinstance(response.get("error"), str):
            return response["error"], True
    return json.dumps(response, ensure_ascii=False), False


def _tool_calls(record: Json) -> list[Json]:
    calls = record.get("toolCalls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_result(call: Json) -> ToolResultPart | None:
    """A tool call's result, as Gemini CLI sends it back (its `functionResponse` parts; an
    image beside them a block of the result)."""
    call_id, result, name = call.get("id"), call.get("result"), call.get("name")
    if not isinstance(call_id, str) or not call_id or result is None:
        return None
    error = call.get("status") == "error"
    outputs: list[str] = []
    files: list[FilePart] = []
    for raw in result if isinstance(result, list) else [result]:
        response = raw.get("functionResponse") if isinstance(raw, dict) else None
        if isinstance(response, dict):
            output, failed = _response_output(response.get("response"))
            outputs.append(output)
            error = error or failed
            continue
        part = _part(raw, False)
        if isinstance(part, FilePart):
            files.append(part)
        elif isinstance(part, TextPart):
            outputs.append(part.text)
    output = "\n".join(outputs)
    blocks = (TextPart(text=output), *files) if files else None
    return ToolResultPart(
        call_id=call_id,
        name=name if isinstance(name, str) else None,
        output=output,
        is_error=error,
        blocks=blocks,
    )


def _usage(tokens: Any) -> Usage | None:
    """Gemini CLI's `tokens` (`input` is the whole prompt, `cached` part of it; `thoughts`
    are output too)."""
    if not isinstance(tokens, dict):
        return None
    counts = [tokens.get(k) for k in ("input", "cached", "output", "thoughts")]
    prompt, cached, output, thoughts = (
        c if isinstance(c, int) and not isinstance(c, bool) and c >= 0 else 0 for c in counts
    )
    return Usage(
        input=max(prompt - cached, 0), output=output + thoughts, cache_read=min(cached, prompt)
    )


# checkpoints


def _checkpoint(history: list[Any], encoding: str, out: Transcript) -> None:
    """A `/chat save` checkpoint: the Gemini API history itself, a message per content (a
    user content's function responses the tool message of their calls, before what the user
    said beside them), keyed by position. A response without an id answers the last model
    turn's call of its name, as Gemini CLI pairs them."""
    calls: list[ToolCallPart] = []  # the last model turn's
    answered: set[str] = set()
    live: list[Message] = []
    for n, content in enumerate(history):
        key = f"content:{n}"
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list) or content.get("role") not in ("user", "model"):
            out.skip(n + 1, "a history entry is not a content with a role and parts")
            continue
        envelope = Native(api=GENAI, value={k: v for k, v in content.items() if k != "parts"})
        try:
            with at_line(n + 1):
                if content["role"] == "model":
                    read = _parts(parts, model=True, key=key)
                    calls = [p for p in read if isinstance(p, ToolCallPart)]
                    made = (
                        [
                            Message(
                                id=key,
                                role="assistant",
                                parts=counted(read, encoding, key),
                                native=envelope,
                            )
                        ]
                        if read
                        else []
                    )
                else:
                    made = _checkpoint_user(parts, key, calls, answered, encoding, envelope)
        except ImportRefused as refused:
            out.skip(refused.line or n + 1, refused.reason)
            continue
        for message in made:
            out.add(message.id, MessageAppended(message=message))
            live.append(message)
    out.live_messages = len(live)
    out.live_tokens = sum(message_tokens(m) for m in live)


def _checkpoint_user(
    parts: list[Any],
    key: str,
    calls: list[ToolCallPart],
    answered: set[str],
    encoding: str,
    envelope: Native,
) -> list[Message]:
    results: list[Part] = []
    shown: list[Part] = []
    for raw in parts:
        response = raw.get("functionResponse") if isinstance(raw, dict) else None
        if not isinstance(response, dict):
            shown.append(_part(raw, False))
            continue
        name = response.get("name")
        call_id = response.get("id")
        if not isinstance(call_id, str) or not call_id:
            match = next((c for c in calls if c.name == name and c.call_id not in answered), None)
            call_id = match.call_id if match is not None else f"{key}.response{len(results)}"
        answered.add(call_id)
        output, is_error = _response_output(response.get("response"))
        named = name if isinstance(name, str) else None
        results.append(
            ToolResultPart(
                call_id=call_id,
                name=named,
                output=output,
                is_error=is_error,
                native=Native(api=GENAI, value=raw),
            )
        )
    made = []
    if results:
        tool_id = f"{key}.results"
        made.append(Message(id=tool_id, role="tool", parts=counted(results, encoding, tool_id)))
    if shown:
        made.append(
            Message(id=key, role="user", parts=counted(shown, encoding, key), native=envelope)
        )
    return made
