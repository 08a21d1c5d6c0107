"""Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, one entry per line,
or the web export `{"loglines": [...]}`) as our events, with nothing the file recorded lost.

What maps to what:
- **user and assistant entries** are messages. Claude Code writes one entry per content block
  and chains entries with `parentUuid`, so a response's blocks (same `message.id`) can be
  interleaved with the results of its parallel tool calls: every entry of one response is
  merged into one assistant message, in the order the model produced its blocks, placed where
  its first block was. Each block is kept as Anthropic sent it (thinking with its signature),
  and the entry around it (`uuid`, `cwd`, `toolUseResult`, `isMeta`...) as the message's
  `native` (api `claude-code`), so the entries can be rebuilt. Tool results are tool messages.
  Meta and injected entries (`isMeta`, `<system-reminder>`, `<local-command-…>`) are kept as
  the user messages the model was shown; their `native` says what they are.
- **compactions**: a `compact_boundary` and the summary that follows it (`isCompactSummary`)
  are a `ContextCompacted`; `compactMetadata.preservedSegment` (or `preservedMessages`) names
  the messages it kept.
- **rewinds**: a prompt whose parent already had a branch that the model answered is a
  rewind. The abandoned branch happened, so it stays in the log, and a `MessagesReverted`
  takes it out of the live context where the user went back.
- **queued prompts**: a prompt typed while the agent worked reaches the model as a
  `queued_command` attachment, or only as a `queue-operation` that enqueued it and took it
  off the queue; both become the user message it was.
- **sidechains and subagents** (`isSidechain` entries, `<session>/subagents/agent-<id>.jsonl`)
  are sessions of their own, linked to the tool call that started them: one per agent id, or,
  in Claude Code 1.0.x files (no agent ids, each subagent's conversation inline), one per
  conversation, linked to the Task call whose prompt its first entry holds (`_Sidechains`).
- **everything else** (`summary`, `custom-title`, `file-history-snapshot`, `queue-operation`,
  `progress`, system entries, attachments) is a record: in the log, never in the context.
- A **malformed line** (not JSON, not an object, no `type`, a message without content, a file
  cut mid-line) is skipped and reported with its line number; `strict` refuses the file.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from sessionstore.events import (
    ContextCompacted,
    FilePart,
    ImportRefused,
    InvalidArgument,
    Message,
    MessageAppended,
    MessagesReverted,
    Native,
    NativePart,
    Part,
    Payload,
    Record,
    RecordAppended,
    TextPart,
    ToolResultPart,
    Usage,
    brief,
    check_json_value,
)
from sessionstore.importers._claude_code_index import LineIndex, ReaderIndex
from sessionstore.importers._common import (
    Json,
    at_line,
    counted,
    file_from_url,
    message_tokens,
    string,
)
from sessionstore.importers._lines import TextLines, TranscriptLines
from sessionstore.importers._transcript import Link, Skipped, Spool, Transcript
from sessionstore.providers import anthropic_part

CLAUDE_CODE = "claude-code"
"""The `api` of the natives that keep Claude Code's entries."""
_SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's model name for messages it made itself
_RECORDS_ONLY = ("summary", "custom-title", "file-history-snapshot", "queue-operation", "tag")


@dataclass(frozen=True, slots=True)
class ClaudeCodeImport:
    """A Claude Code transcript's events, with what its `SessionStarted` needs."""

    title: str | None
    model: str | None
    payloads: list[Payload]
    times: list[datetime | None]  # when each payload happened, from the lines' timestamps


def claude_code_events(lines: Iterable[str], encoding: str) -> ClaudeCodeImport:
    """The main conversation of a transcript given as lines, all of it good: `ImportRefused`
    names the first line that is not (text imports write nothing unless all is good)."""
    transcript = claude_code_transcript("\n".join(lines), encoding, strict=True)
    if not any(isinstance(p, MessageAppended | ContextCompacted) for p in transcript.payloads):
        raise ImportRefused("the transcript holds no messages")
    times = [entry.time for entry in transcript.entries]
    return ClaudeCodeImport(transcript.title, transcript.model, transcript.payloads, times)


def claude_code_transcript(
    text: str | TranscriptLines,
    encoding: str,
    name: str = "",
    companions: Mapping[str, str | TranscriptLines] | None = None,
    *,
    strict: bool = False,
    spool: bool = False,
) -> Transcript:
    """A transcript (its text, or its lines read from a file) as a `Transcript`, its sidechains
    and subagents (`companions`, by file name) as its children. `strict`: `ImportRefused` at
    the first line that would be skipped. `spool`: the entries go to temporary files, not
    memory (see `Spool`).

    The lines are read twice, one at a time: first to index what reading in file order needs
    to know of later lines (each response's lines, the tree of entries, the prompts), then to
    read them; what the first pass keeps is per entry and small (ids and line offsets)."""
    lines = TextLines(text) if isinstance(text, str) else text
    read = _plan(lines, encoding, strict=strict, spool=spool, split=True)
    main, sides = read.main, read.sides
    source_id = read.session or PurePath(name).stem or "transcript"
    transcript = main.out
    transcript.source_id = source_id
    transcript.skipped[:0] = read.skipped
    children = []
    for file_name, companion in sorted((companions or {}).items()):
        side_lines = TextLines(companion) if isinstance(companion, str) else companion
        own = _plan(side_lines, encoding, strict=strict, spool=spool, split=False)
        agent = own.agent or PurePath(file_name).stem.removeprefix("agent-")
        own.main.out.source_id = f"{source_id}/agent-{agent}"
        own.main.out.skipped[:0] = [Skipped(s.line, s.reason, file_name) for s in own.skipped]
        children.append((agent, own.main))
    for agent, side in sides.items():
        side.out.source_id = f"{source_id}/agent-{agent}"
        children.append((agent, side))
    for agent, side in children:
        side.out.parent = Link(source_id, main.calls.get(agent) or read.calls.get(agent))
        if side.out.size:
            transcript.children.append(side.out)
        else:
            side.out.close()
    if not transcript.size and len(transcript.children) == 1:
        # a subagent's own file (`<session>/subagents/agent-<id>.jsonl`) read by itself: its
        # session, linked to the parent session it names (the call is in the parent's file)
        [side_out] = transcript.children
        side_out.skipped[:0] = transcript.skipped
        transcript.children = []
        transcript.close()
        return side_out
    return transcript


def _note_call(calls: dict[str, str], message: Message) -> None:
    """Remember the tool call a tool message answers when its result names a subagent."""
    if message.role != "tool":
        return
    native = message.native
    entry = native.value if native is not None else None
    result = entry.get("toolUseResult") if isinstance(entry, dict) else None
    agent = result.get("agentId") if isinstance(result, dict) else None
    part = message.parts[0]
    if isinstance(agent, str) and isinstance(part, ToolResultPart):
        calls.setdefault(agent, part.call_id)


def looks_like_claude_code(value: Any) -> bool:
    """Whether a file's first line is a Claude Code entry (or the file a web export)."""
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("loglines"), list):
        return True
    if "projectHash" in value:  # Gemini CLI's session metadata: no Claude Code entry has one
        return False
    return "sessionId" in value or "parentUuid" in value or value.get("type") in _RECORDS_ONLY


@dataclass(slots=True)
class _Read:
    """A file's lines read: the main conversation's reader, one per sidechain (by agent, in
    order of appearance), the lines skipped with why (by number), the session id and the
    agent id the entries name first."""

    main: _Reader
    sides: dict[str, _Reader]
    skipped: list[Skipped]
    session: str | None
    agent: str | None
    calls: dict[str, str]  # sidechain -> the Task call whose prompt started it


def _plan(
    lines: TranscriptLines, encoding: str, *, strict: bool, spool: bool, split: bool
) -> _Read:
    """Read a transcript's lines in two passes (see `claude_code_transcript`); `split`: its
    sidechain entries are sessions of their own (a subagent's file is one session whole)."""
    skipped: list[Skipped] = []

    def skip(number: int, reason: str) -> None:
        if strict:
            raise ImportRefused(reason, number)
        skipped.append(Skipped(number, reason))

    index = LineIndex()

    def reader(strict_lines: bool) -> _Reader:
        out = Transcript(format=CLAUDE_CODE, source_id="", spool=Spool() if spool else None)
        return _Reader(encoding, out, strict_lines, index.reader())

    try:
        return _read_twice(lines, skip, skipped, reader, index, strict=strict, split=split)
    finally:
        index.close()


def _read_twice(
    lines: TranscriptLines,
    skip: Callable[[int, str], None],
    skipped: list[Skipped],
    reader: Callable[[bool], _Reader],
    index: LineIndex,
    *,
    strict: bool,
    split: bool,
) -> _Read:
    export = _export(lines)
    entries: Callable[[Callable[[int, str], None] | None], Iterable[tuple[int, int, Json]]]
    if export is not None:
        entries = functools.partial(_logline_entries, export)
        entry_at: Callable[[int], Json] = export.__getitem__
    else:
        entries = functools.partial(_jsonl_entries, lines)

        def entry_at(offset: int) -> Json:
            value = json.loads(lines.line_at(offset))
            assert isinstance(value, dict)
            return value

    main = reader(strict)
    main.positional = export is not None
    sides: dict[str, _Reader] = {}
    session: str | None = None
    agent_id: str | None = None
    on_side: dict[int, _Reader] = {}  # a sidechain's lines (few): the rest are the main's
    sidechains = _Sidechains()
    last = 0  # the last line the first pass read as an entry
    for number, offset, entry in entries(skip):
        last = number
        if session is None and isinstance(entry.get("sessionId"), str):
            session = entry["sessionId"]
        if agent_id is None and isinstance(entry.get("agentId"), str):
            agent_id = entry["agentId"]
        if split and entry.get("isSidechain") is True:
            key = sidechains.conversation(entry)
            if key not in sides:
                sides[key] = reader(False)  # a sidechain's bad lines never refuse the file
                sides[key].positional = main.positional
            on_side[number] = sides[key]
        elif split:
            sidechains.main_entry(entry)
        on_side.get(number, main).plan(number, offset, entry, entry_at)
    for found in lines.skipped:
        if strict:
            raise ImportRefused(found.reason, found.line)
        skipped.append(found)
    skipped.sort(key=lambda found: found.line or 0)
    bad = {found.line for found in skipped}
    index.flush()
    for number, _, entry in entries(None):
        # the second pass reads what the first indexed: a transcript still being written
        # (an agent running) may have grown, or finished its last line, since
        if number > last:
            break
        if number not in bad:
            on_side.get(number, main).read(entry, number)
    for side in (main, *sides.values()):
        side.finish()
    return _Read(main, sides, skipped, session, agent_id, sidechains.calls)


_TASK_TOOLS = ("Task", "Agent")
"""The tools that start a subagent (Claude Code renamed `Task` to `Agent`)."""


@dataclass(slots=True)
class _Sidechains:
    """Which conversation each sidechain entry of a file belongs to, and the Task call that
    started it, read in the first pass.

    A subagent's entries name it (`agentId`, Claude Code 2.x). Claude Code 1.0.x names none:
    each subagent's conversation is written into the main file, interleaved with the others
    when they run in parallel, as a chain of `parentUuid`s from a root entry (no parent) that
    holds the prompt its Task call gave. An entry joins its parent's conversation (an entry of
    a file without parents, the latest one); a root starts a new one, named `sidechain`,
    `sidechain-2`... in the order they start (a file is only appended to: a re-import names
    them the same), and linked to the first Task call of the main conversation, made before
    it and not linked yet, whose prompt it holds."""

    of_entry: dict[str, str] = field(default_factory=dict)  # sidechain entry uuid -> its own
    named: set[str] = field(default_factory=set)  # the conversations started so far
    started: int = 0  # conversations started without an agent id
    latest: str | None = None
    tasks: list[tuple[str, str]] = field(default_factory=list)  # (prompt, call id), unlinked
    calls: dict[str, str] = field(default_factory=dict)  # conversation -> the call starting it

    def main_entry(self, entry: Json) -> None:
        """An entry of the main conversation: the Task calls it makes."""
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") != "assistant" or not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            given = block.get("input")
            prompt = given.get("prompt") if isinstance(given, dict) else None
            call_id = block.get("id")
            task = block.get("name") in _TASK_TOOLS and isinstance(call_id, str) and call_id
            if task and isinstance(prompt, str):
                self.tasks.append((prompt.strip(), str(call_id)))

    def conversation(self, entry: Json) -> str:
        """The conversation a sidechain entry belongs to (its agent id, when it names one)."""
        agent, parent, uuid = entry.get("agentId"), entry.get("parentUuid"), entry.get("uuid")
        if isinstance(agent, str) and agent:
            key, new = agent, agent not in self.named
        elif isinstance(parent, str) and parent in self.of_entry:
            key, new = self.of_entry[parent], False
        elif "parentUuid" not in entry and self.latest is not None:
            key, new = self.latest, False
        else:
            self.started += 1
            key = "sidechain" if self.started == 1 else f"sidechain-{self.started}"
            new = True
        if new:
            self.named.add(key)
            self._link(key, entry)
        if isinstance(uuid, str) and uuid:
            self.of_entry[uuid] = key
        if not (isinstance(agent, str) and agent):
            self.latest = key
        return key

    def _link(self, key: str, entry: Json) -> None:
        prompt = _prompt_text(entry)
        if prompt is None:
            return
        found = next((task for task in self.tasks if task[0] == prompt.strip()), None)
        if found is not None:
            self.tasks.remove(found)
            self.calls[key] = found[1]


def _export(lines: TranscriptLines) -> list[Json] | None:
    """The loglines of a web export (`{"loglines": [...]}`, one JSON document, read whole);
    `None` when the text is not one."""
    head = ""
    for _, _, text in lines.numbered():
        head += text + "\n"
        if len(head.lstrip()) >= 2048:
            break
    head = head.lstrip()[:2048]
    if not (head.startswith("{") and '"loglines"' in head):
        return None
    try:
        document = json.loads("\n".join(text for _, _, text in lines.numbered()))
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(document, dict) and isinstance(document.get("loglines"), list):
        return list(document["loglines"])
    return None


def _logline_entries(
    loglines: list[Json], skip: Callable[[int, str], None] | None
) -> Iterator[tuple[int, int, Json]]:
    """A web export's entries: (number from 1, index, entry)."""
    for index, entry in enumerate(loglines):
        number = index + 1
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            if skip is not None:
                skip(number, "a logline that is not an object with a type")
        elif (bad := _bad_link(entry)) is not None:
            if skip is not None:
                skip(number, f"{bad!r} is not a string")
        else:
            yield number, index, entry


def _jsonl_entries(
    lines: TranscriptLines, skip: Callable[[int, str], None] | None
) -> Iterator[tuple[int, int, Json]]:
    """The entries of a JSONL transcript as (line number, offset, entry), a line at a time;
    `skip` hears of each line that is not an entry, with why. A line that is not JSON and
    does not end an object is cut off when no entry follows it: that is decided at the next
    line that is not blank (or at the end)."""
    cut: tuple[int, str] | None = None  # a line that is cut off if it is the last

    def report(number: int, reason: str) -> None:
        if skip is not None:
            skip(number, reason)

    for number, offset, line in lines.numbered():
        if not line.strip():
            continue
        if cut is not None:
            report(*cut)
            cut = None
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = f"not JSON: {exc.msg} (column {exc.colno})"
            if line.rstrip("\r\n").endswith("}"):
                report(number, reason)
            else:
                cut = (number, reason)
            continue
        except RecursionError:
            report(number, "the JSON is nested too deeply to read")
            continue
        if not isinstance(value, dict):
            report(number, f"a JSON {_kind(value)}, not an entry")
        elif not isinstance(value.get("type"), str):
            report(number, "an object without a type")
        elif (bad := _bad_link(value)) is not None:
            report(number, f"{bad!r} is not a string")  # links key the entry tree
        else:
            yield number, offset, value
    if cut is not None:
        report(cut[0], "the last line is cut off (the file ends mid-entry)")


def _bad_link(entry: Json) -> str | None:
    for key in ("uuid", "parentUuid", "logicalParentUuid"):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            return key
    return None


def _kind(value: object) -> str:
    return {str: "string", list: "list", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _envelope(entry: Json) -> Json:
    """The entry without its message's content (kept as the parts' blocks)."""
    message = entry.get("message")
    if isinstance(message, dict) and "content" in message:
        return {**entry, "message": {k: v for k, v in message.items() if k != "content"}}
    return entry


@dataclass(slots=True)
class _Reader:
    """The reader's state across lines: a response spans lines, a compaction needs the live
    messages (and their tokens), a result the call it answers, a rewind the branches."""

    encoding: str
    out: Transcript
    strict: bool
    index: ReaderIndex  # what it knows of the lines, and the live messages (off the heap)
    now: datetime | None = None  # the timestamp of the line being read
    entry_at: Callable[[int], Json] | None = None  # a later line of a response, read again
    queue: deque[tuple[str, int]] = field(default_factory=deque)  # text, line it was queued
    boundary: Json | None = None  # the compact_boundary the next summary closes
    calls: dict[str, str] = field(default_factory=dict)  # subagent id -> the call starting it
    positional: bool = False
    """Whether an entry without a `uuid` is keyed by its position (`line:<n>`, as its records
    are): the web export's entries have none, and its loglines are only ever appended to, so
    a re-import finds the same keys. A JSONL line without one is malformed (every version of
    Claude Code writes it)."""

    def plan(self, number: int, offset: int, entry: Json, entry_at: Callable[[int], Json]) -> None:
        """What reading in file order needs to know of later lines: where each response's
        lines are, the tree of entries, and the prompts the file holds as user lines."""
        self.entry_at = entry_at
        uuid, kind = entry.get("uuid"), entry.get("type")
        message = entry.get("message")
        if kind == "assistant" and isinstance(message, dict):
            api_id = message.get("id")
            if isinstance(api_id, str) and api_id:
                self.index.response_line(api_id, number, offset)
        if isinstance(uuid, str):
            parent = entry.get("parentUuid")
            if isinstance(parent, str) or kind == "assistant":
                parent = parent if isinstance(parent, str) else None
                self.index.entry(number, uuid, parent, kind == "assistant")
        text = _prompt_text(entry)
        if text is None:
            text = _queued_prompt(entry) if kind == "attachment" else None
        if text is not None:
            self.index.prompt(_digest(text), number)

    def read(self, entry: Json, line: int) -> None:
        if self.index.is_merged(line):
            self.index.passed(line)
            return
        try:
            with at_line(line):
                self.now = _timestamp(entry.get("timestamp"), line)
                self._read(entry, str(entry["type"]), line)
        except ImportRefused as refused:
            if self.strict:
                raise
            self.out.skip(refused.line or line, refused.reason)

    def _read(self, entry: Json, kind: str, line: int) -> None:
        uuid = entry.get("uuid")
        if isinstance(uuid, str) and uuid and self.index.was_seen(uuid):
            return  # a copy of a line written already (Claude Code repeats some on resume)
        if kind == "summary" and isinstance(entry.get("summary"), str):
            self.out.title = entry["summary"]
        elif kind == "custom-title" and isinstance(entry.get("customTitle"), str):
            self.out.title = entry["customTitle"]
        if kind in ("user", "assistant"):
            self._message(entry, kind, line)
        elif kind == "attachment" and _queued_prompt(entry) is not None:
            self._queued(entry, line)
        else:
            self._record(entry, kind, line)
            if kind == "queue-operation":
                self._queue(entry, line)
            elif kind == "system" and entry.get("subtype") == "compact_boundary":
                self.boundary = entry
        if isinstance(uuid, str) and uuid:
            self.index.see(uuid)

    def _record(self, entry: Json, kind: str, line: int) -> None:
        uuid = entry.get("uuid")
        key = uuid if isinstance(uuid, str) and uuid else f"line:{line}"
        subtype = entry.get("subtype")
        name = f"{kind}:{subtype}" if isinstance(subtype, str) else kind
        check_json_value(entry)  # what the store could not hold is skipped at its line
        part = NativePart(id=f"{key}.0", native=Native(api=CLAUDE_CODE, value=entry))
        record = Record(id=key, kind=name[:128], parts=(part,))
        self.out.add(key, RecordAppended(record=record), self.now)

    def _message(self, entry: Json, kind: str, line: int) -> None:
        what = "an assistant line" if kind == "assistant" else "a user line"
        if self.positional and "uuid" not in entry:
            uuid = f"line:{line}"
        else:
            uuid = string(entry, "uuid", what, line)
        if not uuid:
            raise ImportRefused(f"{what} has an empty 'uuid'", line)
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, str | list):
            raise ImportRefused(f"{what} has no message content", line)
        if kind == "assistant":
            self._assistant(uuid, entry, message, line)
            return
        self._rewind_to(uuid, entry, line)
        if not content:
            self._record(entry, kind, line)  # nothing was said: kept, not a message
            return
        blocks = _user_blocks(content)
        if entry.get("isCompactSummary") is True:
            self._compaction(uuid, entry, blocks, line)
        else:
            self._user(uuid, entry, blocks, line)

    def _assistant(self, uuid: str, entry: Json, message: Json, line: int) -> None:
        """Every entry of one API response (same `message.id`), wherever the file has them,
        merged into one message here, where its first block is; the last usage counts."""
        api_id = message.get("id")
        has_id = isinstance(api_id, str) and api_id
        lines = self.index.response_lines(str(api_id), line) if has_id else []
        parts: list[Part] = []
        usage: Usage | None = None
        envelopes = []
        for number, member in self._members(line, entry, lines):
            member_uuid = member.get("uuid")
            if number != line and (
                not isinstance(member_uuid, str) or self.index.was_seen(member_uuid)
            ):
                continue
            body = member.get("message")
            blocks = body.get("content") if isinstance(body, dict) else None
            if not isinstance(body, dict) or not isinstance(blocks, list | str):
                continue  # read (and reported) as a line of its own
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}] if blocks else []
            with at_line(number):
                parts.extend(self._assistant_part(*_block(raw, number), number) for raw in blocks)
                usage = _usage(body.get("usage"), number) or usage
            model = body.get("model")
            if self.out.model is None and isinstance(model, str) and model != _SYNTHETIC_MODEL:
                self.out.model = model
            envelopes.append(_envelope(member))
            if number != line:
                self.index.merge(number)
                self.index.see(str(member_uuid))
        if not parts:
            self._record(entry, "assistant", line)  # an interrupted response: no blocks
            return
        native = Native(api=CLAUDE_CODE, value={"entries": envelopes})
        message_parts = counted(parts, self.encoding, uuid)
        self._emit(
            uuid,
            Message(id=uuid, role="assistant", parts=message_parts, usage=usage, native=native),
        )

    def _members(
        self, line: int, entry: Json, later: list[tuple[int, int]]
    ) -> Iterator[tuple[int, Json]]:
        """A response's entries from `line` on: this one, then its later lines read again
        (one at a time: a response can span many)."""
        yield line, entry
        for number, offset in later:
            if not self.index.is_merged(number):
                assert self.entry_at is not None
                yield number, self.entry_at(offset)

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
            self.index.tool(call_id, name)
        try:
            return anthropic_part(block)
        except InvalidArgument as exc:
            raise ImportRefused(str(exc), line) from None

    def _user(self, uuid: str, entry: Json, blocks: list[Any], line: int) -> None:
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
        native = Native(api=CLAUDE_CODE, value=_envelope(entry))
        if results:
            parts = counted(results, self.encoding, uuid)
            self._emit(uuid, Message(id=uuid, role="tool", parts=parts, native=native))
        if shown:
            user_id = f"{uuid}.user" if results else uuid
            parts = counted(shown, self.encoding, user_id)
            envelope = None if results else native
            self._emit(uuid, Message(id=user_id, role="user", parts=parts, native=envelope))

    def _result(self, block: Json, line: int) -> tuple[ToolResultPart, list[Part]]:
        call_id = string(block, "tool_use_id", "a tool_result block", line)
        name = self.index.tool_name(call_id)  # unknown: kept; the renderers leave orphans out
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

    def _queued(self, entry: Json, line: int) -> None:
        """A prompt typed while the agent worked, delivered as a `queued_command` attachment."""
        uuid = string(entry, "uuid", "an attachment line", line)
        text = _queued_prompt(entry) or ""
        parts = counted([TextPart(text=text)], self.encoding, uuid)
        native = Native(api=CLAUDE_CODE, value=entry)
        self._emit(uuid, Message(id=uuid, role="user", parts=parts, native=native))

    def _queue(self, entry: Json, line: int) -> None:
        """A queued prompt that reached the model with no line of its own (taken off the queue,
        or absorbed into the running turn) becomes the user message it was."""
        operation, content = entry.get("operation"), entry.get("content")
        if operation == "enqueue" and isinstance(content, str):
            self.queue.append((content, line))
            return
        if operation == "popAll":
            self.queue.clear()  # back in the input box: not sent
            return
        delivered = operation == "dequeue" or (
            operation == "remove" and "absorbed" in str(entry.get("reason", ""))
        )
        queued = next((q for q in self.queue if q[0] == content), None)
        if queued is None and self.queue:
            queued = self.queue[0]
        if queued is None:
            return
        self.queue.remove(queued)
        text, since = queued
        if not delivered or not text.strip() or self.index.said_after(_digest(text), since):
            return  # not sent, or sent with a line of its own (a prompt, an attachment)
        key = f"queued:{line}"
        parts = counted([TextPart(text=text)], self.encoding, key)
        native = Native(api=CLAUDE_CODE, value={"queued": entry})
        self._emit(key, Message(id=key, role="user", parts=parts, native=native))

    def _rewind_to(self, uuid: str, entry: Json, line: int) -> None:
        """A prompt whose parent had a branch the model answered, earlier in the file: the
        user went back. What that branch added leaves the live context (the log keeps it)."""
        if _prompt_text(entry) is None:
            return
        parent = self.index.parent(uuid)
        if parent is None:
            return
        abandoned: set[str] = set()
        pending = self.index.children(parent, line)
        while pending:
            node = pending.pop()
            if node not in abandoned:
                abandoned.add(node)
                pending.extend(self.index.children(node, line))
        answered = (self.index.answered_line(node) for node in abandoned)
        if not any(at is not None and at < line for at in answered):
            return
        gone = tuple(self.index.live_of(abandoned))
        if not gone:
            return
        anchor: str | None = parent
        while anchor is not None and self.index.first_live_of(anchor) is None:
            anchor = self.index.parent(anchor)
        after = (self.index.first_live_of(anchor) if anchor is not None else None) or parent
        revert = MessagesReverted(after_message_id=after, reverted_message_ids=gone)
        self.out.add(f"rewind:{uuid}", revert, self.now)
        self.index.leave(gone)

    def _compaction(self, uuid: str, entry: Json, blocks: list[Any], line: int) -> None:
        """The live messages replaced by Claude Code's summary, which becomes the first; the
        boundary's preserved segment stays after it."""
        text = "\n".join(_text(_block(raw, line)[0], line).text for raw in blocks)
        parts = counted([TextPart(text=text)], self.encoding, uuid)
        native = Native(api=CLAUDE_CODE, value=_envelope(entry))
        summary = Message(id=uuid, role="user", parts=parts, native=native)
        metadata = (self.boundary or {}).get("compactMetadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        # the live messages, held while the event that lists them is built
        live = [
            (message_id, source, tokens) for _, message_id, source, tokens in self.index.each_live()
        ]
        kept = _preserved(metadata, live)
        replaced = tuple(m for m, _, _ in live if m not in kept)
        first_kept = next((m for m, _, _ in live if m in kept), uuid)
        before = sum(tokens for _, _, tokens in live)
        freed = sum(tokens for m, _, tokens in live if m not in kept)
        compaction = ContextCompacted(
            summary=summary,
            first_kept_message_id=first_kept,
            replaced_message_ids=replaced,
            tokens_before=before,
            tokens_after=before - freed + message_tokens(summary),
            reason="manual" if metadata.get("trigger") == "manual" else "before_llm_call",
            summarizer="claude-code",
        )
        self.out.add(f"compaction:{uuid}", compaction, self.now)
        self.index.clear_live()
        self.index.live(uuid, uuid, message_tokens(summary))
        for message_id, source, tokens in live:
            if message_id in kept:
                self.index.live(message_id, uuid if message_id == uuid else source, tokens)
        self.index.see(uuid)
        self.boundary = None

    def _emit(self, uuid: str, message: Message) -> None:
        if message.native is not None:
            check_json_value(message.native.value)  # a NUL, say: the line is skipped, not the file
        self.out.add(message.id, MessageAppended(message=message), self.now)
        _note_call(self.calls, message)
        self.index.live(message.id, uuid, message_tokens(message))

    def finish(self) -> None:
        """Nothing is held back (a response is merged when its first block is read): what
        is left to say is the size of the live context the transcript ends with."""
        self.out.live_messages, self.out.live_tokens = self.index.live_figures()


def _preserved(metadata: Json, live: list[tuple[str, str, int]]) -> set[str]:
    """The live messages (id, the uuid of its entry, tokens) a partial compaction kept: the
    segment from `headUuid` to `tailUuid`, or the `preservedMessages` (uuids, or how many of
    the newest)."""
    segment = metadata.get("preservedSegment")
    by_source = {source: message_id for message_id, source, _ in live}
    order = [message_id for message_id, _, _ in live]
    if isinstance(segment, dict) and isinstance(segment.get("headUuid"), str):
        head = by_source.get(segment["headUuid"])
        tail_uuid = segment.get("tailUuid")
        tail = by_source.get(tail_uuid) if isinstance(tail_uuid, str) and tail_uuid else None
        if head is not None:
            end = order.index(tail) + 1 if tail in order else len(order)
            return set(order[order.index(head) : end])
    preserved = metadata.get("preservedMessages")
    if isinstance(preserved, list):
        return {by_source[u] for u in preserved if isinstance(u, str) and u in by_source}
    if isinstance(preserved, int) and preserved > 0:
        return set(order[-preserved:])
    return set()


def _digest(text: str) -> bytes:
    """A prompt's text as the index keeps it: a prompt can be long, its digest is not."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _user_blocks(content: str | list[Any]) -> list[Any]:
    """A user line's content as blocks; a bare string in the list is a text block (older
    versions wrote them)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]


def _prompt_text(entry: Json) -> str | None:
    """The text of a user line that is a prompt (not a tool result, not meta, not a summary)."""
    if entry.get("type") != "user" or entry.get("isMeta") is True:
        return None
    if entry.get("isCompactSummary") is True:
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    return "\n".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    )


def _queued_prompt(entry: Json) -> str | None:
    attachment = entry.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    if attachment.get("commandMode", "prompt") != "prompt":
        return None
    prompt = attachment.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in prompt
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return None


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
