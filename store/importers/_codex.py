"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`) as a Transcript.

A rollout is append-only JSONL. Each line is `{"timestamp", "type", "payload"}` (`RolloutLine`
and `RolloutItem` in `codex-rs/protocol`), `type` one of:
- `session_meta`: the thread's id (our `source_id`), cwd, originator, CLI version, model
  provider, base instructions, git state, and for a subagent its parent thread (our `parent`);
- `turn_context`: each turn's settings (model, cwd, approval and sandbox policy, effort);
- `response_item`: one OpenAI Responses item of the model's history (`_codex_items`);
- `event_msg`: what the harness showed or did (`user_message`, `agent_message` and
  `agent_reasoning` repeat response items; `token_count`, `task_started`, `turn_aborted`,
  `thread_rolled_back`...);
- `compacted`: a compaction, with the summary `message` and, in newer versions, the
  `replacement_history` that became the model's whole history.
Rollouts from before mid-2025 have no wrapper: the first line is the meta itself (`{"id",
"timestamp", "instructions"}`), then bare Responses items and `{"record_type": "state"}` lines.
Both layouts are read, line by line.

What maps to what:
- the model's items of one response (consecutive `reasoning`, assistant `message`,
  `function_call`, `custom_tool_call`, `local_shell_call`, `web_search_call`...): one assistant
  message, each item verbatim in its part's `native` (`OPENAI_RESPONSES`); reasoning keeps its
  `encrypted_content` and shows as text only its summary; usage from the `token_count` event
  that ends the response. The message is at its first item's time, and the message's `native`
  keeps each item's (`{"timestamps": [...]}`, one per part, as the lines wrote them): a
  response is not split into a message per item, since its items must stay together (a
  reasoning item is refused without the item it produced; a revert, a compaction or a prune
  keeps or removes a response whole), and what the rollout recorded between its items
  (events) follows it at its own times, so the log's times still only go forward;
- `function_call_output`, `custom_tool_call_output`: a tool message, the result of its call
  (by `call_id`), the item in the message's `native`; output content items are its blocks;
- a `user` message: a user message (text and images), the item verbatim in its `native`;
  those Codex writes itself (`<environment_context>`, AGENTS.md, `<turn_aborted>`...) are
  marked by their message's `native` api `codex.injected` and do not start a user turn;
- a `developer` or `system` message: a system message, the item verbatim in its `native`;
- `compacted`: a record of the line, then `ContextCompacted`: the live messages its
  replacement history repeats stay, the others are replaced by a summary holding the items it
  adds (or, with no replacement history, the summary text beside the newest user messages);
- `event_msg` `thread_rolled_back`: a record, then `MessagesReverted` of the last N user turns;
- `session_meta`, `turn_context`, every `event_msg`, a `record_type: state` line, a
  `ghost_snapshot` or an item of a type not known to reach the model: a record
  (`RecordAppended`, kind `codex.<type>`, the line verbatim), never in the context;
- a line of a type this reader does not know: a record of kind `codex.ignored.<type>`,
  counted by `ignored_lines`.

`event_msg` lines that repeat a message are records, not messages: the message is imported
once, and the event, which can hold more (the user's images, the text as typed), is not lost.
A prompt that only a `user_message` event records (Codex Desktop writes no user message item)
is the user message, built from the event (its text and images), in the event's place
(`_Prompt`).

Keys: an item's own `id` (Codex writes them in newer versions) when it is the first with it,
else `line-<n>`, the line number (a rollout is only appended to). An assistant message is
keyed by its first item.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import JsonValue

from sessionstore.events import (
    OPENAI_RESPONSES,
    ContextCompacted,
    ImportRefused,
    Message,
    MessageAppended,
    MessagesReverted,
    Native,
    Part,
    Payload,
    RecordAppended,
    SessionCleared,
    TextPart,
    ToolCallPart,
    Usage,
)
from sessionstore.importers._codex_index import RolloutIndex
from sessionstore.importers._codex_items import (
    ASSISTANT_ITEMS,
    INPUT_ITEMS,
    OUTPUTS,
    SYSTEM_ROLES,
    Malformed,
    assistant_part,
    input_item_part,
    input_parts,
    is_injected,
    result_part,
    summary_part,
)
from sessionstore.importers._codex_meta import (
    id_from_name,
    response_usage,
    rollout_record,
    spawned_by,
    timestamp,
    title_of,
)
from sessionstore.importers._common import (
    Json,
    at_line,
    counted,
    file_from_url,
    message_tokens,
)
from sessionstore.importers._transcript import Entry, Spool, Transcript

FORMAT = "codex"
INJECTED = "codex.injected"
"""The api of an injected user message's `native`: a Responses item Codex wrote itself."""
PROMPT_EVENT = "codex.event_msg.user_message"
"""The api of the `native` of a prompt read from its `user_message` event (the rollout has no
item for it): the event's payload."""
IGNORED = "codex.ignored."

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
RESPONSE_ENDS = frozenset(
    {
        "token_count",
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "turn_aborted",
        "user_message",
        "thread_rolled_back",
        "context_compacted",
    }
)
"""Events after which the model's next item starts a new response (a new assistant message)."""

COMPACT_USER_TOKENS = 20_000
"""How many tokens of the newest user messages Codex keeps beside a summary when a compaction
records no replacement history (`COMPACT_USER_MESSAGE_MAX_TOKENS`)."""


def codex_transcript(
    lines: Iterable[str], encoding: str, name: str | None = None, *, spool: bool = False
) -> Transcript:
    """The session a rollout records, read a line at a time. `name` is the file's name: the
    session id when the rollout has no meta line. `spool`: the entries go to a temporary
    file, not memory (`Spool`). `ImportRefused` when no line is a rollout's."""
    reader = _Rollout(encoding, Transcript(FORMAT, "", spool=Spool() if spool else None))
    try:
        for number, text in enumerate(lines, start=1):
            if text.strip():
                reader.line(number, text)
        return reader.finish(name)
    finally:
        reader.index.close()


def looks_like_codex(first_lines: Sequence[str]) -> bool:
    """Whether a file's first lines are a rollout's: a wrapper line of a rollout type, or the
    old layout's meta line (`id` and `timestamp`, no `type`) followed by a bare item."""
    objects = []
    for text in first_lines:
        if text.strip():
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                return False
            if not isinstance(value, dict):
                return False
            objects.append(value)
    if not objects:
        return False
    first = objects[0]
    if first.get("type") in LINE_TYPES and isinstance(first.get("payload"), dict):
        return True
    legacy_meta = "type" not in first and isinstance(first.get("id"), str) and "timestamp" in first
    rest = objects[1:2]
    return legacy_meta and all(
        o.get("record_type") == "state" or ("type" in o and "payload" not in o) for o in rest
    )


def ignored_lines(transcript: Transcript) -> int:
    """How many lines of a type this reader does not know it kept as records, unread."""
    return sum(
        1
        for entry in transcript.each()
        if isinstance(entry.payload, RecordAppended)
        and entry.payload.record.kind.startswith(IGNORED)
    )


@dataclass(slots=True)
class _Response:
    """An assistant message still being read: one line per item. What the rollout records
    meanwhile (`held`) follows it: the message goes where its first item was."""

    key: str
    time: datetime | None
    held: list[Entry] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)  # each item's line's, as written


@dataclass(slots=True)
class _Prompt:
    """A prompt only an `event_msg` `user_message` has shown yet. Codex writes a prompt twice,
    as the `response_item` user message the model was sent and as that event, the item first
    (the event first in older versions); some rollouts (Codex Desktop's) have only the event.
    So it waits for what comes next: a user message item (then that item is the message, the
    event stays a record), or anything the model or a tool says (then the prompt, built from
    the event, is the message, in the event's place). What the rollout records meanwhile is
    held and follows it, the live context entries of held messages too (`live`)."""

    message: Message
    key: str
    time: datetime | None
    held: list[Entry] = field(default_factory=list)
    live: list[tuple[str, str, int, list[bytes], bool]] = field(default_factory=list)


@dataclass(slots=True)
class _Rollout:
    encoding: str
    out: Transcript = field(default_factory=lambda: Transcript(format=FORMAT, source_id=""))
    # the item ids taken as keys, the tool calls' names, the live messages (id, role, tokens,
    # the digests of the Responses items it was read from to recognise it in a replacement
    # history, whether it starts a user turn): off the heap, they grow with the file
    index: RolloutIndex = field(default_factory=RolloutIndex)
    response: _Response | None = None
    prompt: _Prompt | None = None
    typed: list[str] = field(default_factory=list)
    """The texts of the prompts read as user message items since the model last spoke, no
    `user_message` event repeating them yet (the item goes first in Codex now)."""
    source_id: str | None = None
    read_any: bool = False

    def line(self, number: int, text: str) -> None:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            self.out.skip(number, f"not JSON: {exc.msg} (column {exc.colno})")
            return
        except RecursionError:
            self.out.skip(number, "the JSON is nested too deeply to read")
            return
        if not isinstance(value, dict):
            self.out.skip(number, "not a JSON object")
            return
        try:  # each handler adds its entries only once nothing of the line can fail
            with at_line(number):
                self._read(value, number)
        except (ImportRefused, Malformed) as exc:
            self.out.skip(number, exc.reason if isinstance(exc, ImportRefused) else str(exc))
            return
        self.read_any = True

    def _read(self, line: Json, number: int) -> None:
        key = f"line-{number}"
        kind, payload = line.get("type"), line.get("payload")
        if "payload" in line and isinstance(kind, str):
            if not isinstance(payload, dict):
                raise Malformed(f"a {kind} line's payload is not an object")
            time = timestamp(line.get("timestamp"))
            if kind == "response_item":
                self._item(payload, key, time, line)
            elif kind == "event_msg":
                self._event(payload, key, time, line)
            elif kind == "compacted":
                self._compacted(payload, key, time, line)
            elif kind in ("session_meta", "turn_context"):
                self._meta(kind, payload, key, time, line)
            else:
                self.rollout_record(f"{IGNORED}{kind}", key, time, line)
        elif line.get("record_type") == "state":  # the old layout's state line
            self.rollout_record("codex.state", key, None, line)
        elif isinstance(kind, str):  # the old layout: a bare item
            self._item(line, key, None, line)
        elif "type" not in line and isinstance(line.get("id"), str):  # the old layout's meta
            self._meta("session_meta", line, key, timestamp(line.get("timestamp")), line)
        else:
            raise Malformed("not a rollout line: no 'type' with a 'payload', nor an item")

    # records

    def rollout_record(self, kind: str, key: str, time: datetime | None, line: Json) -> None:
        self._add(key, rollout_record(kind, key, line), time)

    def _meta(self, kind: str, payload: Json, key: str, time: datetime | None, line: Json) -> None:
        record = rollout_record(f"codex.{kind}", key, line)
        if kind == "session_meta":
            inner = payload.get("meta")
            meta: Json = inner if isinstance(inner, dict) else payload
            session = meta.get("id") or meta.get("session_id")
            if self.source_id is None and isinstance(session, str) and session:
                self.source_id = session
                self.out.parent = spawned_by(meta.get("source"))
        model = payload.get("model")
        if self.out.model is None and isinstance(model, str) and model:
            self.out.model = model
        self._end_response()
        self._add(key, record, time)

    def _event(self, payload: Json, key: str, time: datetime | None, line: Json) -> None:
        kind = payload.get("type")
        kind = kind if isinstance(kind, str) else ""
        record = rollout_record(f"codex.event_msg.{kind}" if kind else "codex.event_msg", key, line)
        if kind in RESPONSE_ENDS:
            self._end_response(
                response_usage(payload.get("info")) if kind == "token_count" else None
            )
        if kind == "user_message":
            self._waited()  # a prompt still waiting for its item has none
        elif kind == "thread_rolled_back":
            self._said()
        self._add(key, record, time)
        if kind == "user_message":
            self._typed_event(payload, key, time)
        if kind == "thread_rolled_back":
            turns = payload.get("num_turns")
            if isinstance(turns, int) and not isinstance(turns, bool) and turns > 0:
                self._roll_back(turns, key, time)

    # prompts

    def _typed_event(self, payload: Json, key: str, time: datetime | None) -> None:
        """A `user_message` event: it repeats a prompt read as an item since the model last
        spoke (the same text, else the first), or it is a prompt that waits (`_Prompt`)."""
        typed = payload.get("message")
        if not isinstance(typed, str):
            return
        if self.typed:
            self.typed.remove(typed if typed in self.typed else self.typed[0])
            return
        images = payload.get("images")
        shown = [url for url in images if isinstance(url, str)] if isinstance(images, list) else []
        prompt_id = f"{key}.prompt"
        parts = counted(
            [TextPart(text=typed), *(file_from_url(url) for url in shown)],
            self.encoding,
            prompt_id,
        )
        native = Native(api=PROMPT_EVENT, value=payload)
        message = Message(id=prompt_id, role="user", parts=parts, native=native)
        self.prompt = _Prompt(message, prompt_id, time)

    def _said(self) -> None:
        """The model or a tool speaks: a waiting prompt had no item, so it is the message; the
        prompts read as items are past being repeated."""
        self.typed.clear()
        self._waited()

    def _waited(self) -> None:
        """The prompt waiting for its item (if any) has none: it is the user message."""
        prompt, self.prompt = self.prompt, None
        if prompt is None:
            return
        message = prompt.message
        if self.out.title is None:
            self.out.title = title_of(message)
        self._take(prompt.key)
        self.out.add(prompt.key, MessageAppended(message=message), prompt.time)
        self.index.live(message.id, "user", message_tokens(message), [], True)
        self._release(prompt)

    def _release(self, prompt: _Prompt) -> None:
        for entry in prompt.held:
            self.out.add(entry.key, entry.payload, entry.time)
        for live in prompt.live:
            self.index.live(*live)

    # response items

    def _item(self, item: Json, key: str, time: datetime | None, line: Json) -> None:
        kind = item.get("type")
        if not isinstance(kind, str):
            raise Malformed("a response item has no type")
        own = item.get("id")
        if (
            isinstance(own, str)
            and own
            and not own.startswith("line-")
            and not self.index.taken(own)
        ):
            key = own
        role = item.get("role")
        if (kind == "message" and role == "assistant") or kind in ASSISTANT_ITEMS:
            written = line.get("timestamp") if line is not item else None
            self._model_item(item, key, time, written if isinstance(written, str) else None)
        elif kind in OUTPUTS:
            call_id = item.get("call_id")
            name = self.index.tool_name(call_id) if isinstance(call_id, str) else None
            result, kept = result_part(item, name)
            native = Native(api=OPENAI_RESPONSES, value=kept)
            parts = counted([result], self.encoding, key)
            self._end_response()
            self._said()
            self._message(Message(id=key, role="tool", parts=parts, native=native), key, time)
        elif kind == "message" and role in ("user", *SYSTEM_ROLES):
            self._input_message(item, str(role), key, time)
        elif kind in INPUT_ITEMS:
            parts = counted([input_item_part(item)], self.encoding, key)
            self._end_response()
            self._said()
            self._message(Message(id=key, role="user", parts=parts), key, time)
        else:  # a harness item (ghost_snapshot), or one newer than this code: not sent
            self.rollout_record(f"codex.response_item.{kind}", key, time, line)

    def _model_item(self, item: Json, key: str, time: datetime | None, written: str | None) -> None:
        self._said()
        response = self.response
        prefix, start = (key, 0) if response is None else (response.key, len(response.parts))
        [part] = counted([assistant_part(item)], self.encoding, prefix, start)
        if response is None:
            response = self.response = _Response(key, time)
            self._take(key)
        if isinstance(part, ToolCallPart):
            self.index.tool(part.call_id, part.name)
        response.parts.append(part)
        response.times.append(written)

    def _end_response(self, usage: Usage | None = None) -> None:
        response, self.response = self.response, None
        if response is None:
            return
        # each item's time, as its line gave it: the message is at its first item's
        envelope: dict[str, JsonValue] = {}
        if any(written is not None for written in response.times):
            envelope["timestamps"] = list(response.times)
        message = Message(
            id=response.key,
            role="assistant",
            parts=tuple(response.parts),
            usage=usage,
            native=Native(api=OPENAI_RESPONSES, value=envelope),
        )
        self.out.add(response.key, MessageAppended(message=message), response.time)
        for entry in response.held:
            self.out.add(entry.key, entry.payload, entry.time)
        self.index.live(message.id, "assistant", message_tokens(message), _items(message), False)

    def _input_message(self, item: Json, role: str, key: str, time: datetime | None) -> None:
        injected = role == "user" and is_injected(item)
        ours = "user" if role == "user" else "system"
        parts = counted(input_parts(item, ours), self.encoding, key)
        native = Native(api=INJECTED if injected else OPENAI_RESPONSES, value=item)
        message = Message(id=key, role=ours, parts=parts, native=native)
        self._end_response()
        if role == "user" and not injected:
            prompt, self.prompt = self.prompt, None
            if prompt is not None:  # the event went first: this item is the message
                self._release(prompt)
            else:
                self.typed.append(_typed_text(message))
        if role == "user" and not injected and self.out.title is None:
            self.out.title = title_of(message)
        self._message(message, key, time, turn=role == "user" and not injected, item=item)

    def _message(
        self,
        message: Message,
        key: str,
        time: datetime | None,
        *,
        turn: bool = False,
        item: Json | None = None,
    ) -> None:
        items = [_json(item)] if item is not None else _items(message)
        live = (message.id, message.role, message_tokens(message), items, turn)
        self._add(key, MessageAppended(message=message), time)
        if self.prompt is not None:  # it follows the waiting prompt, in the context too
            self.prompt.live.append(live)
        else:
            self.index.live(*live)

    def _take(self, key: str) -> None:
        """`key` is taken: an item with it as its id is keyed by its line. Only an item's own
        id is asked about, never one like `line-<n>`: those need not be remembered."""
        if not key.startswith("line-"):
            self.index.take(key)

    def _add(self, key: str, payload: Payload, time: datetime | None) -> None:
        self._take(key)
        if self.response is not None:
            self.response.held.append(Entry(key, payload, time))
        elif self.prompt is not None:
            self.prompt.held.append(Entry(key, payload, time))
        else:
            self.out.add(key, payload, time)

    # compaction and rollback

    def _compacted(self, payload: Json, key: str, time: datetime | None, line: Json) -> None:
        """Codex's new history is `replacement_history` when recorded: live messages it repeats
        item for item stay, the rest are replaced by a summary holding the items it adds. With
        none (older versions), Codex kept the newest user messages (up to
        `COMPACT_USER_TOKENS`) and the summary text."""
        summary_text = payload.get("message")
        if not isinstance(summary_text, str):
            raise Malformed("a compacted line has no string 'message'")
        history = payload.get("replacement_history")
        if history is not None and (
            not isinstance(history, list) or not all(isinstance(i, dict) for i in history)
        ):
            raise Malformed("a compacted line's replacement_history is not a list of items")
        record = rollout_record("codex.compacted", key, line)
        self._end_response()  # whatever comes of this line, that response has ended
        self._said()
        summary_id = f"{key}.summary"
        if history is not None:
            kept, added = self._repeated(history)
            parts = [summary_part(item) for item in added] or [TextPart(text=summary_text)]
        else:
            kept, parts = self._newest_user_messages(), [TextPart(text=summary_text)]
        summary = Message(
            id=summary_id, role="user", parts=counted(parts, self.encoding, summary_id)
        )
        self._add(key, record, time)
        replaced = [
            i for i, role, _ in self.index.each_live() if i not in kept and role != "system"
        ]
        _, before = self.index.live_figures()
        self.index.leave(replaced)
        after = self.index.live_figures()[1] + message_tokens(summary)
        compaction = ContextCompacted(
            summary=summary,
            first_kept_message_id=summary_id,  # not live: the summary goes after what stays
            replaced_message_ids=tuple(replaced),
            tokens_before=before,
            tokens_after=after,
            reason="before_llm_call",
            summarizer="codex",
        )
        self._add(f"{key}.compaction", compaction, time)
        self.index.live(summary_id, "user", message_tokens(summary), [], False)

    def _repeated(self, history: list[Json]) -> tuple[set[str], list[Json]]:
        """The live messages whose items the replacement history holds (each item once), and
        the history's items that no live message holds."""
        pool = Counter(_json(item) for item in history)
        kept = set()
        for message_id, _, items in self.index.each_live():
            wanted = Counter(items)
            if items and all(pool[text] >= n for text, n in wanted.items()):
                kept.add(message_id)
                pool -= wanted
        added = []
        for item in reversed(history):  # the last copies are the ones no message holds
            text = _json(item)
            if pool[text] > 0:
                pool[text] -= 1
                added.append(item)
        return kept, added[::-1]

    def _newest_user_messages(self) -> set[str]:
        kept: set[str] = set()
        budget = COMPACT_USER_TOKENS
        for message_id, tokens in self.index.turns_newest_first():
            if tokens > budget:
                break
            budget -= tokens
            kept.add(message_id)
        return kept

    def _roll_back(self, turns: int, key: str, time: datetime | None) -> None:
        """Codex drops the newest `turns` user turns from the model's history: they leave the
        live context (and stay in the log)."""
        found = self.index.newest_turns(turns)
        if found is None:
            return
        after, dropped = found
        payload: Payload
        if after is None:
            payload = SessionCleared(
                cleared_message_ids=tuple(dropped), reason="thread_rolled_back"
            )
        else:
            payload = MessagesReverted(after_message_id=after, reverted_message_ids=tuple(dropped))
        self.index.leave(dropped)
        self._add(f"{key}.rollback", payload, time)

    def finish(self, name: str | None) -> Transcript:
        self._end_response()
        self._said()
        if not self.read_any:
            raise ImportRefused("no line is a Codex rollout's")
        source_id = self.source_id or id_from_name(name)
        if source_id is None:
            raise ImportRefused("the rollout names no session id (no session_meta line)")
        self.out.source_id = source_id
        self.out.live_messages, self.out.live_tokens = self.index.live_figures()
        return self.out


def _typed_text(message: Message) -> str:
    """A prompt's text as its `user_message` event gives it: its text inputs, joined."""
    return "".join(part.text for part in message.parts if isinstance(part, TextPart))


def _items(message: Message) -> list[bytes]:
    """The Responses items a message was read from, as digests of their canonical text (tool
    messages keep theirs whole in `native` unless their output is text, then it is put
    back)."""
    if message.role == "tool" and message.native is not None:
        value = message.native.value
        if isinstance(value, dict) and "output" not in value:
            [result] = message.parts
            value = {**value, "output": getattr(result, "output", "")}
        return [_json(value)]
    natives = (getattr(part, "native", None) for part in message.parts)
    return [_json(native.value) for native in natives if isinstance(native, Native)]


def _json(value: object) -> bytes:
    """An item as a live message keeps it, to be recognised in a replacement history: the
    digest of its canonical text (every live message's items, kept whole, would hold the
    session's content in memory)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
