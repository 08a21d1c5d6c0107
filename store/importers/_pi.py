"""pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`) as a
`Transcript`, every branch of the session's tree included.

The format (badlogic/pi-mono, packages/coding-agent `core/session-manager.ts`): JSONL, the first
line a header `{"type": "session", "id", "timestamp", "cwd", "version"?, "parentSession"?}`,
then one entry per line, appended as they happen:
- `message` (an AgentMessage: see `_pi_messages`), `compaction` (`summary`, `tokensBefore`,
  the first entry it keeps), `branch_summary`, `custom_message`, which the model is sent;
- `model_change`, `thinking_level_change`, `custom` (an extension's state), `label`,
  `session_info` (the session's name), which it is not.

Session version 1 (the legacy linear layout) has no entry ids: the file order is the order and
a compaction names its first kept entry by `firstKeptEntryIndex`, an index among the file's
JSON lines (the header is 0). Versions 2 and 3 (the tree layout) give every entry an `id` and a
`parentId`; a compaction names `firstKeptEntryId`. pi migrates a version 1 file in place when
it opens it, giving its entries new random ids (so such a file, imported before and after,
is two different histories to us). The current branch is the path from the last entry back
to the root; the user branches (`/tree`, `/branch`) by moving the leaf to an earlier entry,
so the next entry's parent is not the entry before it.

What maps to what:
- the header, `model_change`, `thinking_level_change`, `custom`, `label`, `session_info`, a
  repeated header, a `!!` bash command (never sent), a message pi does not send -> a
  `RecordAppended` holding the entry verbatim (api `PI`); the header's `id` is the session's
  source id, `parentSession` (a fork's file `<time>_<uuid>.jsonl`) its parent link;
- a message -> `MessageAppended` under the entry's id (`line-<n>` in the legacy layout),
  its native the entry without the message content; an `error`/`aborted` assistant message,
  which pi never sends again, -> `MessageAppended` then `MessagePopped`;
- a compaction -> `ContextCompacted`: the summary is the user text pi sends (its prefix,
  the summary, its suffix; the entry verbatim as the part's native), the live messages pi
  no longer sends are replaced, the first kept entry's message is the boundary;
- a branch: entries are read in file order, so an abandoned branch is in the log where it
  happened; when an entry's parent is not the entry before it, the messages pi no longer
  sends leave the context (`MessagesReverted` after the last message both branches share, or
  `SessionCleared` when they share none) and messages of the new branch that are not live
  (a branch switched back to, messages a compaction on the old branch replaced) are appended
  again under `<id>@<n>`. The live context is always what pi's `buildSessionContext` gives
  for the branch read so far, so after the last entry it is the current branch's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sessionstore.events import (
    ContextCompacted,
    ImportRefused,
    Message,
    MessageAppended,
    MessagePopped,
    MessagesReverted,
    Native,
    NativePart,
    Payload,
    Record,
    RecordAppended,
    SessionCleared,
    brief,
    check_json_value,
)
from sessionstore.importers._common import Json, at_line, message_tokens
from sessionstore.importers._pi_index import Node as _Node
from sessionstore.importers._pi_index import SessionIndex
from sessionstore.importers._pi_messages import (
    PI,
    Dropped,
    entry_message,
    pi_message,
    renamed,
    summary_message,
)
from sessionstore.importers._transcript import Link, Spool, Transcript

FORMAT = "pi"
SUMMARIZER = "pi"
_PARENT_FILE = re.compile(r"_([0-9A-Fa-f]{8}-[0-9A-Fa-f-]{27})\.jsonl$")
_EARLIEST_YEAR = 1000  # what the store can write back (see the Claude Code importer)
_RECORD_KIND = re.compile(r"[A-Za-z0-9_.:-]{1,100}")


def looks_like_pi(first: object) -> bool:
    """Whether a file's first line (its text, or the object parsed from it) is a pi session
    header, as pi itself decides (`type` "session" and a string `id`)."""
    if isinstance(first, str):
        try:
            first = json.loads(first)
        except (ValueError, RecursionError):
            return False
    return (
        isinstance(first, dict)
        and first.get("type") == "session"
        and isinstance(first.get("id"), str)
        and bool(first["id"])
    )


def pi_transcript(lines: Iterable[str], encoding: str, *, spool: bool = False) -> Transcript:
    """A pi session file's lines (either layout) as one transcript; malformed lines are
    skipped and reported. `ImportRefused` when the first line is not a pi session header, or
    nothing follows it. `spool`: the entries go to a temporary file, not memory (`Spool`)."""
    reader = _Reader(encoding, spool=spool)
    try:
        for number, text in enumerate(lines, start=1):
            reader.read(number, text)
        return reader.finish()
    finally:
        reader.index.close()


@dataclass(slots=True)
class _Reader:
    """The walk through the file: the tree so far, the branch the last entry is on, and the
    live context (always pi's context for that branch), all three in `index`."""

    encoding: str
    spool: bool = False
    transcript: Transcript | None = None
    json_lines: int = 0  # JSON lines so far: what a legacy firstKeptEntryIndex counts
    index: SessionIndex = field(default_factory=SessionIndex)  # the tree, path, live context
    last: str | None = None  # the last entry read: a legacy entry's parent
    model_seen: bool = False

    def read(self, number: int, text: str) -> None:
        if not text.strip():
            return
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return self._bad(number, "not JSON (or a line cut short)")
        index, self.json_lines = self.json_lines, self.json_lines + 1
        if self.transcript is None:
            return self._header(value, number)
        if not isinstance(value, dict):
            return self._bad(number, "not a JSON object")
        try:
            with at_line(number):
                self._entry(value, number, index)
        except ImportRefused as exc:
            self.transcript.skip(number, exc.reason)

    def _bad(self, number: int, reason: str) -> None:
        if self.transcript is None:
            raise ImportRefused(f"not a pi session: {reason}", number)
        self.transcript.skip(number, reason)

    def _header(self, value: object, number: int) -> None:
        if not looks_like_pi(value):
            raise ImportRefused("not a pi session: the first line is not a session header", number)
        assert isinstance(value, dict)
        spool = Spool() if self.spool else None
        self.transcript = Transcript(format=FORMAT, source_id=value["id"], spool=spool)
        parent = value.get("parentSession", value.get("branchedFrom"))
        found = _PARENT_FILE.search(parent) if isinstance(parent, str) else None
        if found is not None:
            self.transcript.parent = Link(found[1])
        try:
            with at_line(number):
                self._record("session", "pi.session", value, _moment(value))
        except ImportRefused as exc:
            self.transcript.skip(number, exc.reason)

    def _entry(self, value: Json, number: int, index: int) -> None:
        kind = value.get("type")
        if not isinstance(kind, str):
            raise ImportRefused("an entry has no string 'type'", number)
        time = _moment(value)
        if kind == "session":  # a second header (an old pi wrote one on some resumes)
            return self._record(self._fresh(f"line-{number}"), "pi.session", value, time)
        key, parent = self._place(value, number)
        if parent != self.index.last:
            self.index.branch(parent)
            self._reconcile(f"{key}:branch", time)
        node = _Node(key, parent, SUMMARIZER)
        self.index.add(node, index)
        self.index.take(key)
        self.last = key
        if kind == "message":
            self._message(node, value, number, time)
        elif kind == "compaction":
            self._compaction(node, value, number, time)
        elif kind in ("branch_summary", "custom_message"):
            message = entry_message(value, key, self.encoding, number)
            if message is None:
                self._record(key, f"pi.{kind}", value, time)
            else:
                self._append(node, message, time)
        else:
            self._remember(value)
            self._record(key, f"pi.{kind}", value, time)

    def _place(self, value: Json, number: int) -> tuple[str, str | None]:
        """The entry's key and its parent's: its own `id` and `parentId` in the tree layout;
        its line and the entry before it in the legacy one (as pi's migration links them)."""
        if "id" not in value:
            return self._fresh(f"line-{number}"), self.last
        key, parent = value["id"], value.get("parentId")
        if not isinstance(key, str) or not key:
            raise ImportRefused("an entry's 'id' is not a non-empty string", number)
        if self.index.taken(key):
            raise ImportRefused(f"entry id {brief(key)} is used twice", number)
        if parent is not None and not isinstance(parent, str):
            raise ImportRefused("an entry's 'parentId' is not a string", number)
        known = parent is not None and self.index.known(parent)
        return key, parent if known else None  # pi: a lost parent ends the path

    def _message(self, node: _Node, value: Json, number: int, time: datetime | None) -> None:
        built = pi_message(value, node.key, self.encoding, number)
        if built is None:
            return self._record(node.key, "pi.message", value, time)
        message = built.message if isinstance(built, Dropped) else built
        if message.role == "assistant" and not self.model_seen:
            raw = value["message"]
            if isinstance(raw.get("model"), str) and raw["model"]:
                assert self.transcript is not None
                self.transcript.model, self.model_seen = raw["model"], True
        if isinstance(built, Dropped):
            self._add(node.key, MessageAppended(message=message), time)
            self._add(
                self._fresh(f"{node.key}:dropped"), MessagePopped(message_id=message.id), time
            )
            return
        self._append(node, message, time)

    def _compaction(self, node: _Node, value: Json, number: int, time: datetime | None) -> None:
        """pi sends the summary, then the kept entries from the first kept one on, then what
        follows: every other live message is replaced."""
        summary = value.get("summary")
        if not isinstance(summary, str):
            raise ImportRefused("a compaction has no string 'summary'", number)
        first_kept = value.get("firstKeptEntryId")
        if "firstKeptEntryId" not in value and isinstance(value.get("firstKeptEntryIndex"), int):
            first_kept = self.index.key_at_index(value["firstKeptEntryIndex"])
        message = summary_message(value, node.key, summary, self.encoding)
        node.compaction = True
        node.first_kept = first_kept if isinstance(first_kept, str) else None
        node.summarizer = "pi extension" if value.get("fromHook") is True else SUMMARIZER
        self.index.save(node)
        self.index.desire()
        replaced, freed = self.index.not_desired()
        first = self.index.first_desired()
        boundary = message.id if first is None else first[0]
        before = self.index.live_figures()[1]
        compaction = ContextCompacted(
            summary=message,
            first_kept_message_id=boundary,
            replaced_message_ids=tuple(replaced),
            tokens_before=before,
            tokens_after=before - freed + message_tokens(message),
            reason="before_llm_call",  # pi does not record what started it
            summarizer=node.summarizer,
        )
        try:
            node.message = self._add(node.key, compaction, time)
        except Exception:
            node.compaction = False  # skipped at its line: no summary to send again
            self.index.save(node)
            raise
        self.index.save(node)
        self.index.leave(replaced)
        if first is None:
            self.index.live(message.id, node.key, message_tokens(message))
        else:
            self.index.live_at(first[1], message.id, node.key, message_tokens(message))
        self._reconcile(f"{node.key}:kept", time)

    def _reconcile(self, key: str, time: datetime | None) -> None:
        """Make the live context pi's for the current path: what follows the longest prefix
        they share leaves it, and what pi sends after that prefix is appended (again)."""
        self.index.desire()
        common, before, cut = self.index.shared()
        if cut is not None:
            gone = tuple(self.index.live_from(cut))
            payload: Payload
            if before is not None:
                payload = MessagesReverted(after_message_id=before, reverted_message_ids=gone)
            else:
                payload = SessionCleared(
                    cleared_message_ids=gone, reason="pi: branch from the start"
                )
            self._add(self._fresh(key), payload, time)
            self.index.leave_from(cut)
        for entry in self.index.desired_from(common):
            self._reenter(self.index.node(entry), time)

    def _reenter(self, node: _Node, time: datetime | None) -> None:
        """A message of the path that is not live (it was reverted or replaced on another
        branch) appended again, as a new message `<id>@<n>`."""
        assert node.message is not None
        node.reentries += 1
        self.index.save(node)
        key = self._fresh(f"{node.key}@{node.reentries}")
        message = renamed(self._message_of(node.message), key)
        tokens = message_tokens(message)
        if not node.compaction:
            self._add(key, MessageAppended(message=message), time)
        else:
            before = self.index.live_figures()[1]
            self._add(
                key,
                ContextCompacted(
                    summary=message,
                    first_kept_message_id=message.id,  # not live: the summary goes last
                    replaced_message_ids=(),
                    tokens_before=before,
                    tokens_after=before + tokens,
                    reason="before_llm_call",
                    summarizer=node.summarizer,
                ),
                time,
            )
        self.index.live(message.id, node.key, tokens)

    def _append(self, node: _Node, message: Message, time: datetime | None) -> None:
        node.message = self._add(node.key, MessageAppended(message=message), time)
        self.index.save(node)
        self.index.live(message.id, node.key, message_tokens(message))

    def _remember(self, value: Json) -> None:
        """What a record says about the session as a whole: its name, its first model."""
        assert self.transcript is not None
        if value.get("type") == "session_info" and isinstance(value.get("name"), str):
            self.transcript.title = value["name"].strip() or self.transcript.title
        model = value.get("modelId")
        changed = value.get("type") == "model_change" and isinstance(model, str) and model
        if changed and not self.model_seen:
            self.transcript.model, self.model_seen = model, True

    def _record(self, key: str, kind: str, value: Json, time: datetime | None) -> None:
        kind = kind if _RECORD_KIND.fullmatch(kind) else "pi.entry"
        part = NativePart(id=f"{key}.0", native=Native(api=PI, value=value))
        self._add(key, RecordAppended(record=Record(id=key, kind=kind, parts=(part,))), time)

    def _add(self, key: str, payload: Payload, time: datetime | None) -> int:
        check_json_value(payload.model_dump(mode="json"))  # a NaN, say, fails at its line
        assert self.transcript is not None
        self.index.take(key)
        return self.transcript.add(key, payload, time)

    def _message_of(self, position: int) -> Message:
        """The message (or compaction summary) of the entry at `position`, read again: the
        tree keeps where each message is, not the message."""
        assert self.transcript is not None
        payload = self.transcript.entry_at(position).payload
        if isinstance(payload, ContextCompacted):
            return payload.summary
        assert isinstance(payload, MessageAppended)
        return payload.message

    def _fresh(self, key: str) -> str:
        """`key`, or it with `~` added until no entry of the file uses it (the source's ids
        are free text)."""
        while self.index.taken(key):
            key += "~"
        return key

    def finish(self) -> Transcript:
        if self.transcript is None:
            raise ImportRefused("not a pi session: the file is empty")
        if not self.index.any_node():
            raise ImportRefused("the pi session holds no entries")
        self.transcript.live_messages, self.transcript.live_tokens = self.index.live_figures()
        return self.transcript


def _moment(value: Json) -> datetime | None:
    """An entry's ISO `timestamp` as aware UTC, else its message's (milliseconds since the
    epoch); `None` when it has none the store can keep."""
    text = value.get("timestamp")
    message = value.get("message")
    millis = message.get("timestamp") if isinstance(message, dict) else None
    if not isinstance(text, str) and isinstance(millis, int) and not isinstance(millis, bool):
        try:
            return datetime.fromtimestamp(millis / 1000, UTC)
        except (ValueError, OverflowError, OSError):
            return None
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if moment.year >= _EARLIEST_YEAR else None
