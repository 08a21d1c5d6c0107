"""OpenCode sessions (sst/opencode) as our payloads.

OpenCode keeps a session as a session info object, its messages (`MessageV2.Info`: role `user`
or `assistant`, ids `msg_...` that sort in creation order) and each message's parts
(`MessageV2.Part`, ids `prt_...`). `opencode export <id>` writes them as one JSON document,
`{"info": session, "messages": [{"info": message, "parts": [part, ...]}, ...], "todos": [...]}`;
its storage folder keeps one JSON file per session, message and part
(`_opencode_storage`). Both are read here, by one reader, into one `Transcript` keyed by
OpenCode's own ids (its source id is the session id, `ses_...`).

What maps to what (what OpenCode sends the model, `MessageV2.toModelMessages`, is the guide):
- a user message -> a user message: its `text` parts (not `ignored`) as text, its `file` parts
  as files (not `text/plain` or directory ones: OpenCode sends their content as synthetic text
  parts, which are kept as text), a `compaction` part as the text "What did we do so far?" and
  a `subtask` part as "The following tool was executed by the user", as OpenCode shows them;
- an assistant message -> one assistant message per step (an LLM call: OpenCode's `step-start`
  parts open them, as the AI SDK splits them), each followed by one tool message per tool
  result of its calls. `text` -> text, `reasoning` -> reasoning (an Anthropic signature or an
  OpenAI encrypted reasoning item in its `metadata` rebuilt as that provider's own block, so
  a render for that provider sends it back; never shown as text), `tool` -> a tool call
  (`callID`, `tool`, `state.input`) and, when `state.status` is `completed` or `error`, its
  result (`state.output`, or `state.error` as an error; an interrupted tool's
  `metadata.output` as OpenCode shows it; data-URL `attachments` as image blocks). A
  `pending` or `running` call stays unanswered, as the source left it. A step's `step-finish`
  tokens are its usage;
- a completed tool part whose `state.time.compacted` is set (OpenCode's prune) -> its result,
  whole, then `OutputsPruned` at that time showing "[Old tool result content cleared]", as
  OpenCode shows it;
- a finished assistant message with `summary: true` -> `ContextCompacted`. When it answers a
  user message (`parentID`) holding a `compaction` part, the summary replaces the live messages
  before that request, which stays, followed by the summary, as OpenCode shows them; with a
  `tail_start_id` the messages from it on stay too and the request is replaced (OpenCode shows
  request, summary, tail; ours shows summary, tail). An older summary, with no such request,
  replaces every live message, as OpenCode's older `filterCompacted` did;
- an assistant message OpenCode never sends again (one with an `error`, not an abort after
  some output) -> a record (`opencode.unsent`), as is a message with nothing the model sees;
- `session.revert` (an undo waiting for the next prompt) -> `MessagesReverted` of the
  messages from the reverted one on (or `SessionCleared` when that is the first);
- the session info and the `todos` -> records (`opencode.session`, `opencode.todos`).
Nothing is dropped: each message keeps OpenCode's own JSON in its `native`
(`Native(api="opencode", value={"info": ..., "parts": [...]})`): the message info and every
part in order, `step-start`, `step-finish`, `snapshot`, `patch`, `agent`, `retry` and any newer
kind included, each less the one field our part holds already (a text's `text`, a file's
`url`, a tool's `state.output`).

A message or part that is not what OpenCode writes is skipped and reported (`where` names it:
`messages[3].parts[1]` in an export, the file's path in a storage folder).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import JsonValue

from sessionstore.context import count
from sessionstore.events import (
    ContextCompacted,
    ImportRefused,
    InvalidArgument,
    Message,
    MessageAppended,
    MessagesReverted,
    Native,
    NativePart,
    OutputsPruned,
    Part,
    Payload,
    Record,
    RecordAppended,
    SessionCleared,
    TextPart,
    Usage,
    brief,
    canonical_json,
    check_json_value,
)
from sessionstore.importers._common import Json, at_line, counted, message_tokens
from sessionstore.importers._opencode_parts import (
    OPENCODE,
    Result,
    at,
    file_part,
    latest,
    less,
    no_later,
    opencode_native,
    part_problem,
    reasoning_items,
    reasoning_part,
    text_of,
    time_of,
    tool_part,
    usage_of,
)
from sessionstore.importers._transcript import Entry, Link, Transcript

FORMAT = "opencode"
PRUNED = "[Old tool result content cleared]"
"""What OpenCode shows the model instead of a pruned (`time.compacted`) tool output."""
COMPACTION_REQUEST = "What did we do so far?"
SUBTASK_REQUEST = "The following tool was executed by the user"
_WHOLES = frozenset({"opencode.session", "opencode.todos", "opencode.session_diff"})
"""Records of what OpenCode rewrites in place: keyed by content, so a change is a new record."""
_UNSHOWN_FILES = frozenset({"text/plain", "application/x-directory"})


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One OpenCode message as read from its source, before it is checked: its info, its parts
    in order, and where each came from (for skip reports)."""

    where: str
    info: object
    parts: Sequence[tuple[str, object]]


def looks_like_opencode(value: object) -> bool:
    """Whether `value` (an export's text, or the JSON it parses to) is an `opencode export`."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return False
    if not isinstance(value, dict):
        return False
    info = value.get("info")
    return (
        isinstance(info, dict)
        and isinstance(info.get("id"), str)
        and info["id"].startswith("ses")
        and isinstance(value.get("messages"), list)
    )


def opencode_transcript(text: str, encoding: str) -> Transcript:
    """An `opencode export <id>` document as one transcript. `ImportRefused` when the text is
    not such a document; a message or part that is not OpenCode's is skipped and reported."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not an OpenCode export: not JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise ImportRefused("not an OpenCode export: nested too deeply to read") from None
    if not looks_like_opencode(document):
        raise ImportRefused("not an OpenCode export: no session 'info' and 'messages' list")
    messages = []
    for n, raw in enumerate(document["messages"]):
        where = f"messages[{n}]"
        info = raw.get("info") if isinstance(raw, dict) else None
        parts = raw.get("parts") if isinstance(raw, dict) else None
        listed = parts if isinstance(parts, list) else [None] if parts is not None else []
        messages.append(
            SourceMessage(where, info, [(f"{where}.parts[{k}]", p) for k, p in enumerate(listed)])
        )
    extras = {"opencode.todos": document["todos"]} if "todos" in document else {}
    return session_transcript(document["info"], messages, encoding, extras)


def session_transcript(
    info: Json,
    messages: Iterable[SourceMessage],
    encoding: str,
    extras: dict[str, JsonValue] | None = None,
) -> Transcript:
    """One OpenCode session from its info and messages (in order), with `extras` (record kind
    -> OpenCode's JSON: its todos, say) kept as records."""
    session_id = info.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise ImportRefused("not an OpenCode session: its info has no 'id'")
    title, parent = info.get("title"), info.get("parentID")
    transcript = Transcript(
        format=FORMAT,
        source_id=session_id,
        title=title if isinstance(title, str) else None,
        parent=Link(parent) if isinstance(parent, str) and parent else None,
    )
    reader = _Reader(encoding, transcript)
    reader.record("opencode.session", "session", info, time_of(at(info, "time", "created")))
    checked = [m for m in (reader.checked(message) for message in messages) if m is not None]
    for message in checked:
        marker = next((p for p in message.parts if p["type"] == "compaction"), None)
        if message.role == "user" and marker is not None:
            reader.requests[message.id] = marker
    for message in checked:
        reader.read(message)
    reader.revert(info.get("revert"))
    for kind, value in (extras or {}).items():
        if value not in (None, [], {}):
            reader.record(kind, kind.removeprefix("opencode."), value, None)
    transcript.entries = reader.ordered()
    if not reader.live and not reader.order:
        raise ImportRefused(f"the OpenCode session {brief(session_id)} holds no messages")
    return transcript


@dataclass(frozen=True, slots=True)
class _Checked:
    """A message whose info and parts have the shape OpenCode writes."""

    where: str
    id: str
    role: str
    info: Json
    parts: list[Json]
    part_where: dict[str, str]


@dataclass(slots=True)
class _Prune:
    part_id: str
    tokens_freed: int
    time: datetime | None
    after: int  # index of the entry holding the pruned result


@dataclass(slots=True)
class _Reader:
    """The state across messages: the live context (to say what a compaction replaces), the
    calls made (a call id is made once), and our message ids for each OpenCode message."""

    encoding: str
    transcript: Transcript
    entries: list[Entry] = field(default_factory=list)
    prunes: list[_Prune] = field(default_factory=list)
    live: dict[str, int] = field(default_factory=dict)  # our live message id -> its tokens
    ours: dict[str, list[str]] = field(default_factory=dict)  # OpenCode message id -> ours
    order: list[str] = field(default_factory=list)  # OpenCode message ids, in order
    calls: set[str] = field(default_factory=set)
    requests: dict[str, Json] = field(default_factory=dict)  # summary request -> its part
    placeholder_tokens: int | None = None

    # checking what the source holds

    def checked(self, message: SourceMessage) -> _Checked | None:
        info = message.info
        if not isinstance(info, dict):
            self.transcript.skip(None, "a message without an 'info' object", message.where)
            return None
        message_id, role = info.get("id"), info.get("role")
        if not isinstance(message_id, str) or not message_id:
            self.transcript.skip(None, "a message info without an 'id'", message.where)
            return None
        if role not in ("user", "assistant"):
            self.transcript.skip(None, f"a message with role {brief(role)}", message.where)
            return None
        if message_id in self.ours:
            self.transcript.skip(None, f"message {brief(message_id)} again", message.where)
            return None
        self.ours[message_id] = []
        parts: list[Json] = []
        where: dict[str, str] = {}
        seen: set[str] = set()
        for part_where, part in message.parts:
            why = part_problem(part, seen)
            if why is not None:
                self.transcript.skip(None, why, part_where)
                continue
            assert isinstance(part, dict)
            seen.add(part["id"])
            parts.append(part)
            where[part["id"]] = part_where
        return _Checked(message.where, message_id, str(role), info, parts, where)

    # reading a message

    def read(self, message: _Checked) -> None:
        """Read one message whole, or skip it whole: what it added is taken back."""
        self.order.append(message.id)
        saved = (len(self.entries), len(self.prunes), dict(self.live), set(self.calls))
        try:
            with at_line(None):
                if message.role == "user":
                    self._user(message)
                elif _unsent(message):
                    self._unsent(message)
                elif _is_summary(message.info):
                    self._compaction(message)
                else:
                    self._assistant(message)
        except ImportRefused as exc:
            entries, prunes, self.live, self.calls = saved
            del self.entries[entries:], self.prunes[prunes:]
            self.ours[message.id] = []
            self.transcript.skip(None, exc.reason, message.where)

    def _user(self, message: _Checked) -> None:
        parts: list[Part] = []
        raws: list[JsonValue] = []
        for part in message.parts:
            kind = part["type"]
            shown: Part | None = None
            try:
                if kind == "text" and part.get("ignored") is not True:
                    shown = TextPart(id=part["id"], text=text_of(part))
                elif kind == "file" and part.get("mime") not in _UNSHOWN_FILES:
                    shown = file_part(part)
                elif kind == "compaction":
                    shown = TextPart(id=part["id"], text=COMPACTION_REQUEST)
                elif kind == "subtask":
                    shown = TextPart(id=part["id"], text=SUBTASK_REQUEST)
            except ImportRefused as exc:
                self.transcript.skip(None, exc.reason, message.part_where[part["id"]])
                continue
            raws.append(less(part, shown))
            if shown is not None:
                parts.append(shown)
        time = time_of(at(message.info, "time", "created"))
        native: dict[str, JsonValue] = {"info": message.info, "parts": raws}
        if not parts:
            self.record("opencode.message", message.id, native, time)
            return
        self._append(
            message,
            Message(
                id=message.id,
                role="user",
                parts=self._counted(parts),
                native=opencode_native(native),
            ),
            time,
        )

    def _unsent(self, message: _Checked) -> None:
        """An assistant message OpenCode leaves out of every later request (an error)."""
        whole: dict[str, JsonValue] = {"info": message.info, "parts": list(message.parts)}
        self.record(
            "opencode.unsent", message.id, whole, time_of(at(message.info, "time", "created"))
        )

    def _assistant(self, message: _Checked) -> None:
        model = message.info.get("modelID")
        if self.transcript.model is None and isinstance(model, str) and model:
            self.transcript.model = model
        steps = _steps(message, self)
        shown: list[_Step] = []
        leading: list[JsonValue] = []
        for step in steps:  # a step with nothing shown keeps its parts in a neighbour's
            if step.parts:
                step.raws[:0], leading = leading, []
                shown.append(step)
            elif shown:
                shown[-1].raws.extend(step.raws)
            else:
                leading.extend(step.raws)
        created = time_of(at(message.info, "time", "created"))
        if not shown:
            self.record(
                "opencode.message", message.id, {"info": message.info, "parts": leading}, created
            )
            return
        if not any(step.finished for step in steps):
            shown[-1].usage = usage_of(message.info.get("tokens"))
        time = created
        for n, step in enumerate(shown):
            native: Json = {"parts": step.raws}
            if n == 0:
                native = {"info": message.info, **native}
            assistant = Message(
                id=message.id if n == 0 else step.id,
                role="assistant",
                parts=self._counted(step.parts),
                usage=step.usage,
                native=opencode_native(native),
            )
            self._append(message, assistant, time)
            for result in step.results:
                parts = self._counted([result.part])
                tool = Message(id=f"{result.call_part}.result", role="tool", parts=parts)
                time = latest(time, result.time)
                self._append(message, tool, time)
                if result.pruned:
                    self._prune(tool, result.pruned_at)

    def _compaction(self, message: _Checked) -> None:
        """OpenCode's summary: the live messages before its request leave the context."""
        parts: list[Part] = []
        raws: list[JsonValue] = []
        for part in message.parts:
            shown: Part | None = None
            if part["type"] == "text":
                shown = TextPart(id=part["id"], text=text_of(part))
            elif part["type"] == "reasoning":
                shown = reasoning_part(part, {})
            raws.append(less(part, shown))
            if shown is not None:
                parts.append(shown)
        if not any(isinstance(p, TextPart) for p in parts):
            self._unsent(message)  # a summary with no text: nothing replaced anything
            return
        info = message.info
        summary = Message(
            id=message.id,
            role="assistant",
            parts=self._counted(parts),
            usage=usage_of(info.get("tokens")),
            native=opencode_native({"info": info, "parts": raws}),
        )
        request_id = str(info.get("parentID"))
        request = next((i for i in self.ours.get(request_id, []) if i in self.live), None)
        live = list(self.live)
        first_kept, replaced = message.id, live
        auto = True
        if request is not None and request_id in self.requests:
            point = live.index(request)
            replaced = live[:point]
            marker = self.requests[request_id]
            auto = marker.get("auto") is not False
            tail = next(
                (i for i in self.ours.get(str(marker.get("tail_start_id")), []) if i in self.live),
                None,
            )
            if tail is not None and live.index(tail) < point:
                first_kept = tail
                replaced = [*live[: live.index(tail)], request]
        before = sum(self.live.values())
        kept = [(i, t) for i, t in self.live.items() if i not in set(replaced)]
        position = next((n for n, (i, _) in enumerate(kept) if i == first_kept), len(kept))
        self.live = dict(
            [*kept[:position], (summary.id, message_tokens(summary)), *kept[position:]]
        )
        compaction = ContextCompacted(
            summary=summary,
            first_kept_message_id=first_kept,
            replaced_message_ids=tuple(replaced),
            tokens_before=before,
            tokens_after=sum(self.live.values()),
            reason="before_llm_call" if auto else "manual",
            summarizer="opencode",
        )
        self.ours[message.id].append(summary.id)
        self._add(message.id, compaction, time_of(at(info, "time", "created")))

    # what every message ends in

    def _counted(self, parts: Sequence[Part]) -> tuple[Part, ...]:
        return counted(parts, self.encoding, None)

    def _append(self, message: _Checked, ours: Message, time: datetime | None) -> None:
        self.ours[message.id].append(ours.id)
        self._add(ours.id, MessageAppended(message=ours), time)
        self.live[ours.id] = message_tokens(ours)

    def _add(self, key: str, payload: Payload, time: datetime | None) -> None:
        check_json_value(payload.model_dump(mode="json"))  # a NaN, say, fails here, not at append
        self.entries.append(Entry(key, payload, time))

    def _prune(self, tool: Message, pruned_at: datetime | None) -> None:
        if self.placeholder_tokens is None:
            self.placeholder_tokens = count(PRUNED, self.encoding)
        freed = max(0, message_tokens(tool) - self.placeholder_tokens)
        self.prunes.append(_Prune(tool.parts[0].id, freed, pruned_at, len(self.entries) - 1))

    def record(self, kind: str, key: str, value: JsonValue, time: datetime | None) -> None:
        """`value` kept verbatim in the log, out of the context; keyed by its content when it
        is a changing whole (the session info), so a changed one is recorded again."""
        if kind in _WHOLES:
            digest = hashlib.sha256(canonical_json(value)).hexdigest()[:16]
            key = f"{key}@{digest}"
        part = NativePart(id=f"{key}.0", native=Native(api=OPENCODE, value=value))
        try:
            self._add(key, RecordAppended(record=Record(id=key, kind=kind, parts=(part,))), time)
        except (ValueError, InvalidArgument) as exc:
            self.transcript.skip(None, f"not storable: {exc}", key)

    def revert(self, revert: object) -> None:
        """OpenCode's pending undo: the messages from `messageID` (or its part `partID`) on."""
        if not isinstance(revert, dict) or revert.get("messageID") not in self.ours:
            return
        start, part_id = str(revert["messageID"]), revert.get("partID")
        ids: list[str] = []
        for opencode_id in self.order[self.order.index(start) :]:
            ids += self.ours[opencode_id]
        if isinstance(part_id, str) and part_id:
            holder = next((i for i in ids if i == part_id or self._holds(i, part_id)), None)
            if holder is not None:
                ids = ids[ids.index(holder) :]
        reverted = [i for i in self.live if i in set(ids)]
        if not reverted:
            return
        live = list(self.live)
        point = live.index(reverted[0])
        key = f"revert@{start}:{part_id or ''}"
        payload: Payload
        if point == 0:
            payload = SessionCleared(cleared_message_ids=tuple(live), reason="opencode revert")
            reverted = live
        else:
            payload = MessagesReverted(
                after_message_id=live[point - 1], reverted_message_ids=tuple(reverted)
            )
        self._add(key, payload, None)
        for i in reverted:
            del self.live[i]

    def _holds(self, message_id: str, part_id: str) -> bool:
        for entry in self.entries:
            if (
                isinstance(entry.payload, MessageAppended)
                and entry.payload.message.id == message_id
            ):
                return any(p.id == part_id for p in entry.payload.message.parts)
        return False

    def ordered(self) -> list[Entry]:
        """The entries, each prune placed at its time: after the result it prunes and every
        entry no later than it."""
        after: dict[int, list[_Prune]] = {}
        for prune in self.prunes:
            n = prune.after
            while n + 1 < len(self.entries) and no_later(self.entries[n + 1].time, prune.time):
                n += 1
            after.setdefault(n, []).append(prune)
        if self.placeholder_tokens is None:
            return self.entries
        out: list[Entry] = []
        for n, entry in enumerate(self.entries):
            out.append(entry)
            for prune in after.get(n, []):
                payload = OutputsPruned(
                    part_ids=(prune.part_id,),
                    placeholder=PRUNED,
                    placeholder_tokens=self.placeholder_tokens,
                    tokens_freed=prune.tokens_freed,
                    reason="opencode prune",
                )
                key = f"{prune.part_id.removesuffix('.output')}.pruned"
                out.append(Entry(key, payload, prune.time))
        return out


@dataclass(slots=True)
class _Step:
    """One LLM call of an assistant message: what it said, its results, its usage."""

    id: str
    parts: list[Part] = field(default_factory=list)
    raws: list[JsonValue] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    usage: Usage | None = None
    finished: bool = False


def _steps(message: _Checked, reader: _Reader) -> list[_Step]:
    """The message cut at its `step-start` parts, each part read into its step."""
    reasoning = reasoning_items(message.parts)
    steps = [_Step(message.id)]
    for part in message.parts:
        kind = part["type"]
        if kind == "step-start" and steps[-1].raws:
            steps.append(_Step(part["id"]))
        step = steps[-1]
        shown: Part | None = None
        try:
            if kind == "text":
                shown = TextPart(id=part["id"], text=text_of(part))
            elif kind == "reasoning":
                shown = reasoning_part(part, reasoning)
            elif kind == "file":
                shown = file_part(part)
            elif kind == "tool":
                shown, result = tool_part(part, reader.calls)
                if result is not None:
                    step.results.append(result)
            elif kind == "step-finish":
                step.usage, step.finished = usage_of(part.get("tokens")), True
        except ImportRefused as exc:
            reader.transcript.skip(None, exc.reason, message.part_where[part["id"]])
            continue
        answered = bool(step.results) and step.results[-1].call_part == part["id"]
        step.raws.append(less(part, shown, output=kind == "tool" and answered))
        if shown is not None:
            step.parts.append(shown)
    return steps


def _unsent(message: _Checked) -> bool:
    """Whether OpenCode leaves this assistant message out of later requests: it failed, and is
    not an abort that kept some output."""
    error = message.info.get("error")
    if message.role != "assistant" or not error:
        return False
    aborted = isinstance(error, dict) and error.get("name") == "MessageAbortedError"
    return not (
        aborted and any(p["type"] not in ("step-start", "reasoning") for p in message.parts)
    )


def _is_summary(info: Json) -> bool:
    return info.get("summary") is True and bool(info.get("finish") or at(info, "time", "completed"))
