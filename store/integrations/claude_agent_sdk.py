"""sessionstore as the Claude Agent SDK's session store: `ClaudeSessionStore(store)`.

```python
from claude_agent_sdk import ClaudeAgentOptions, query
from sessionstore.integrations.claude_agent_sdk import ClaudeSessionStore

options = ClaudeAgentOptions(session_store=ClaudeSessionStore(store))
async for message in query(prompt="Fix the failing test", options=options):
    ...
```

The SDK mirrors every line of Claude Code's transcript (a JSONL file per session, one per
subagent) to `append`, and `load` gives them back for a resume. Each key (`project_key`,
`session_id`, `subpath`) is one sessionstore session, and each entry one event of it, in
order, so the session has context management, replay and audit like any other, and `load`
returns every entry exactly as it was appended (deep-equal), whatever truncation, pruning,
compaction or `clear` did to the live context since: it reads the log, not the context.

- A conversation entry (`type` "user" or "assistant") is a message, mapped as the Claude Code
  importer maps its lines: an assistant entry's blocks are Anthropic parts (thinking keeps its
  signature; `to_anthropic()` merges the entries of one response back into one turn), a user
  entry's `tool_result` blocks are tool results (so a 300 KB output is stored whole and shown
  truncated), its other blocks user parts. The entry without its content is kept verbatim in
  the message, as a body (a `NativePart` of no tokens that no render sends, or a tool
  result's `native`), so redaction and `delete` reach it too.
- Every other entry (`summary`, `custom-title`, `tag`, `file-history-snapshot`,
  `queue-operation`, `system` lines such as `compact_boundary`, `attachment`, `progress`,
  types newer than this code) is a record (`RecordAppended`): in the log, never in the
  context. So are conversation entries Claude Code did not send as conversation (`isMeta`,
  `isSidechain`) or whose shape this code does not map (an empty response, a user entry that
  mixes tool results and text): kept whole rather than guessed at.
- Claude Code's compaction summary (`isCompactSummary`) replaces the live context, as the
  importer's `ContextCompacted` does.

An entry whose `uuid` the session holds already is skipped (a retried batch, a resume's
repeated lines); one without a `uuid` is always appended. Each batch is one transaction,
with the summary `fold_session_summary` keeps for `list_session_summaries` (main transcripts
only). Several processes may append to one key: a lost race is read back and retried.

`list_sessions` and `list_subkeys` are SQL filters (`SessionStore.sessions(app=, tag=)`):
every session of the store carries `app` ("claude-agent-sdk", or the `app` given), a tag of
its project (main transcripts) or of its parent session (subagent transcripts), and its key as
its title. `delete` empties the live context and unlists the session in one transaction, then
purges its bodies (`SessionStore.purge`: what was said, thought, run and returned leaves the
database; the events, their hashes and the entries' inline metadata stay): `load` then
returns `None`, and a later `append` to the key starts a new session (`session_id(key)`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

try:
    from claude_agent_sdk import fold_session_summary
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )
    from claude_agent_sdk.types import SessionStore as ClaudeStoreProtocol
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.claude_agent_sdk needs the Claude Agent SDK: "
        "pip install 'sessionstore[claude-agent-sdk]'"
    ) from exc

from sessionstore.aio import AsyncSessionStore
from sessionstore.context import DEFAULT_ENCODING, load_encoding, truncated_result, with_tokens
from sessionstore.events import (
    ANTHROPIC,
    CompressionConfig,
    ConcurrencyError,
    ContextCompacted,
    FilePart,
    InvalidArgument,
    Message,
    MessageAppended,
    MetadataChanged,
    Native,
    NativePart,
    Part,
    Payload,
    Record,
    RecordAppended,
    RecordedEvent,
    Role,
    SessionCleared,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownSession,
)
from sessionstore.integrations._sessions import async_face
from sessionstore.providers import anthropic_message
from sessionstore.session import Session, SessionStore, result_content

APP = "claude-agent-sdk"
CLAUDE_CODE = "claude-code"
"""The `api` of a `Native` that holds Claude Code's own JSON: an entry, or its part of one."""
SUMMARY = "claude-agent-sdk.summary"
"""The `api` of the record that holds a main transcript's `fold_session_summary` state."""
DELETED = "claude-agent-sdk: delete"
"""The reason of the `SessionCleared` that `delete` writes."""
DEFAULT_CONTEXT_WINDOW = 200_000
ATTEMPTS = 40
"""Appends a lost race is retried (each reads what the other writer appended first). Each
retry waits a random while, growing to 50 ms: two writers that retry at once lose to each other
again, and on a loaded machine eight prompt retries were not always enough."""
_CONVERSATION = ("user", "assistant")


@dataclass(slots=True)
class _Mirror:
    """One key's session as this process knows it: the uuids it holds (for idempotency) and
    its summary, read from the log up to `seen`."""

    sid: str
    session: Session
    seen: int = 0
    uuids: set[str] = field(default_factory=set)
    summary: dict[str, Any] | None = None


class ClaudeSessionStore(ClaudeStoreProtocol):
    """The Claude Agent SDK's `SessionStore` kept in a `SessionStore` (or an
    `AsyncSessionStore`). `app` scopes the mirror (two apps never see each other's keys);
    `create` holds keyword arguments of `SessionStore.create_session` for new sessions
    (`model`, `context_window`, `compression`, `encoding`...)."""

    def __init__(
        self, store: SessionStore | AsyncSessionStore, *, app: str = APP, **create: Any
    ) -> None:
        self._face = async_face(store)
        self.store = self._face.sync
        self.app = app
        unknown = set(create) - {
            "model",
            "context_window",
            "output_reserve",
            "encoding",
            "compression",
            "user",
        }
        if unknown:
            raise InvalidArgument(f"ClaudeSessionStore does not take {sorted(unknown)[0]!r}")
        self._create = {"context_window": DEFAULT_CONTEXT_WINDOW, **create}
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._mirrors: dict[str, _Mirror] = {}

    # the SDK's protocol: each call runs on the store's workers, off the event loop (a
    # cancelled one either never ran or returns once done: `AsyncSessionStore.run_sync`)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self._face.run_sync(self.append_sync, key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self._face.run_sync(self.load_sync, key)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self._face.run_sync(self.list_sessions_sync, project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self._face.run_sync(self.list_session_summaries_sync, project_key)

    async def delete(self, key: SessionKey) -> None:
        await self._face.run_sync(self.delete_sync, key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await self._face.run_sync(self.list_subkeys_sync, key)

    # the same, called directly

    def session_id(self, key: SessionKey) -> str:
        """The sessionstore session `key` is kept in now: readable, the same in every process
        (`claude:<session_id>:<hash>`, then `~1`, `~2`... once deleted and written again)."""
        return self._current(self._base_id(key))

    def session(self, key: SessionKey) -> Session | None:
        """The sessionstore session of `key` (its live context, state, timeline), or `None`
        when nothing was appended to it."""
        base = self._base_id(key)
        with self._lock(base):
            mirror = self._open(key, base)
            return None if mirror is None else mirror.session

    def append_sync(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        checked = _checked_entries(entries)
        if not checked:
            return
        base = self._base_id(key)
        with self._lock(base):
            for attempt in range(ATTEMPTS):
                try:
                    self._append(key, base, checked)
                    return
                except ConcurrencyError:
                    # another writer got there first: read what it wrote, and try again
                    if attempt == ATTEMPTS - 1:
                        raise
                    time.sleep(random.uniform(0, min(0.001 * 2**attempt, 0.05)))

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        try:
            events = self.store.read(self.session_id(key))
        except UnknownSession:
            return None
        entries = [entry for event in events for entry in _entries_of(event)]
        return cast(list[SessionStoreEntry], entries) or None

    def list_sessions_sync(self, project_key: str) -> list[SessionStoreListEntry]:
        return [
            {"session_id": _key_of(info.title)[1], "mtime": _epoch_ms(info.updated_at)}
            for info in self.store.sessions(app=self.app, tag=_project_tag(project_key))
        ]

    def list_session_summaries_sync(self, project_key: str) -> list[SessionSummaryEntry]:
        summaries: list[SessionSummaryEntry] = []
        for info in self.store.sessions(app=self.app, tag=_project_tag(project_key)):
            # the summary is the last event of every batch: one small read, else the log
            last = self.store.read(info.id, info.version, info.version)
            found = _summary_in(last) or _summary_in(self.store.read(info.id))
            if found is not None:
                mtime = _epoch_ms(info.updated_at)  # the clock list_sessions shows
                summaries.append(
                    {"session_id": found["session_id"], "mtime": mtime, "data": found["data"]}
                )
        return summaries

    def delete_sync(self, key: SessionKey) -> None:
        project, claude_id, subpath = _key(key)
        keys = [key]
        if subpath is None:
            subkey = {"project_key": project, "session_id": claude_id}
            keys += [
                cast(SessionKey, {**subkey, "subpath": sub})
                for sub in self.list_subkeys_sync(cast(SessionListSubkeysKey, subkey))
            ]
        for each in keys:
            base = self._base_id(each)
            with self._lock(base):
                self._delete(each, base)

    def list_subkeys_sync(self, key: SessionListSubkeysKey) -> list[str]:
        project, claude_id, _ = _key(cast(SessionKey, key))
        tag = _subagent_tag(project, claude_id)
        return sorted(
            _key_of(info.title)[2] or "" for info in self.store.sessions(app=self.app, tag=tag)
        )

    # internals

    def _base_id(self, key: SessionKey) -> str:
        project, claude_id, subpath = _key(key)
        digest = _digest(self.app, project, claude_id, subpath)
        readable = "".join(c for c in claude_id[:40] if c.isprintable() and c != ":")
        return f"claude:{readable}:{digest[:24]}"

    def _current(self, base: str) -> str:
        """The key's live session, or the id its next one takes: a deleted session is
        unlisted (no tags) and stays so, since its purged bodies are redacted for good in it
        (an entry appended again would read back redacted)."""
        for generation in itertools.count():
            sid = base if generation == 0 else f"{base}~{generation}"
            try:
                if self.store.session_info(sid).tags:
                    return sid
            except UnknownSession:
                return sid
        raise AssertionError("unreachable")  # pragma: no cover

    def _lock(self, base: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(base, threading.Lock())

    def _open(self, key: SessionKey, base: str) -> _Mirror | None:
        """The key's live session, caught up with the log; `None` when it has none (never
        written, or deleted)."""
        mirror = self._mirrors.get(base)
        if mirror is None or _catch_up(self.store, mirror) is None:
            self._mirrors.pop(base, None)
            sid = self._current(base)
            try:
                session = self.store.session(sid)
            except UnknownSession:
                return None
            if session.header.title != _title(key):
                raise InvalidArgument(f"session {sid} holds another key: {session.header.title}")
            mirror = _Mirror(sid, session)
            if _catch_up(self.store, mirror) is None:
                return None  # deleted meanwhile
            self._mirrors[base] = mirror
        return mirror

    def _append(self, key: SessionKey, base: str, entries: list[dict[str, Any]]) -> None:
        mirror = self._open(key, base)
        held = mirror.uuids if mirror is not None else set()
        batch_uuids: set[str] = set()
        fresh = []
        for entry in entries:
            uuid = entry.get("uuid")
            if isinstance(uuid, str):
                if uuid in held or uuid in batch_uuids:
                    continue  # appended already: a retried batch, a resume's repeated lines
                batch_uuids.add(uuid)
            fresh.append(entry)
        if not fresh:
            return
        if mirror is None:
            self._start(key, self._current(base), fresh)
            return
        session = mirror.session
        live = session.context().messages
        batch = _Batch(
            session.header,
            session.config,
            {m.id: m.tokens for m in live},
            {p.call_id: p.name for m in live for p in m.parts if isinstance(p, ToolCallPart)},
        )
        payloads = batch.payloads(fresh)
        if _subpath(key) is None:
            payloads.append(_summary_record(mirror.summary, key, fresh))
        if session.version != mirror.seen:  # reading the context caught up with another writer
            raise ConcurrencyError(mirror.sid, mirror.seen, session.version)
        recorded = session.append_events(payloads)
        for event in recorded:
            _note(mirror, event)
        mirror.seen = recorded[-1].seq

    def _start(self, key: SessionKey, sid: str, entries: list[dict[str, Any]]) -> None:
        """A new session and its first batch, in one transaction: a batch refused writes not
        even the session."""
        project, claude_id, subpath = _key(key)
        create = self._create
        encoding = create.get("encoding", DEFAULT_ENCODING)
        load_encoding(encoding)
        try:
            config = CompressionConfig.model_validate(create.get("compression") or {})
            started = SessionStarted(
                title=_title(key),
                model=create.get("model", ""),
                context_window=create["context_window"],
                output_reserve=create.get("output_reserve", 4096),
                encoding=encoding,
                compression=dict(create.get("compression") or {}),
                app=self.app,
                user=create.get("user"),
                tags=(_tag(project, claude_id, subpath),),
            )
        except ValueError as exc:
            raise InvalidArgument(f"ClaudeSessionStore settings: {exc}") from None
        payloads = _Batch(started, config, {}, {}).payloads(entries)
        if subpath is None:
            payloads.append(_summary_record(None, key, entries))
        # created meanwhile by another writer: ConcurrencyError, and the retry appends to it
        self.store.append(sid, [started, *payloads], expected_version=0)

    def _delete(self, key: SessionKey, base: str) -> None:
        """Unlist the session and empty its context (one transaction), then purge its bodies:
        the next append to the key starts a new session."""
        for attempt in range(ATTEMPTS):
            mirror = self._open(key, base)
            if mirror is None:
                return
            session, header = mirror.session, mirror.session.header
            cleared = tuple(m.id for m in session.context().messages)
            try:
                session.append_events(
                    [
                        SessionCleared(cleared_message_ids=cleared, reason=DELETED),
                        MetadataChanged(app=header.app, user=header.user, tags=()),
                    ]
                )
            except ConcurrencyError:
                if attempt == ATTEMPTS - 1:
                    raise
                continue
            self._mirrors.pop(base, None)
            self.store.purge(mirror.sid, reason="deleted through the Claude Agent SDK")
            return


def _catch_up(store: SessionStore, mirror: _Mirror) -> _Mirror | None:
    """The mirror with what other writers appended read in; `None` once its session was
    deleted."""
    mirror.session.refresh()
    head = mirror.session.version  # what the next append expects: the uuids must be as new
    if head != mirror.seen:
        for event in store.read(mirror.sid, mirror.seen + 1, head):
            _note(mirror, event)
        mirror.seen = head
    return None if not mirror.session.header.tags else mirror


# keys


def _key(key: object) -> tuple[str, str, str | None]:
    """(project_key, session_id, subpath) of a `SessionKey`; `InvalidArgument` for anything
    else."""
    if not isinstance(key, dict):
        raise InvalidArgument(f"a session key is a dict, not {type(key).__name__}")
    project, claude_id, subpath = key.get("project_key"), key.get("session_id"), key.get("subpath")
    if not isinstance(project, str) or not isinstance(claude_id, str) or not claude_id:
        raise InvalidArgument("a session key needs a str project_key and a session_id")
    if subpath is not None and (not isinstance(subpath, str) or not subpath):
        raise InvalidArgument("a session key's subpath is a non-empty str, or absent")
    return project, claude_id, subpath


def _subpath(key: SessionKey) -> str | None:
    return _key(key)[2]


def _title(key: SessionKey) -> str:
    """The key as the session's title: what the listings read back."""
    project, claude_id, subpath = _key(key)
    parts = {"project_key": project, "session_id": claude_id}
    if subpath is not None:
        parts["subpath"] = subpath
    return json.dumps(parts, ensure_ascii=False, sort_keys=True)


def _key_of(title: str) -> tuple[str, str, str | None]:
    return _key(json.loads(title))


def _digest(*values: str | None) -> str:
    return hashlib.sha256(json.dumps(values, ensure_ascii=False).encode()).hexdigest()


def _project_tag(project: str) -> str:
    """The tag of a project's main transcripts: the key itself when it fits a label."""
    if len(project) <= 100 and project.isprintable() and project:
        return f"claude-project={project}"
    return f"claude-project#{_digest(project)[:40]}"


def _subagent_tag(project: str, claude_id: str) -> str:
    return f"claude-subagents-of#{_digest(project, claude_id)[:40]}"


def _tag(project: str, claude_id: str, subpath: str | None) -> str:
    return _project_tag(project) if subpath is None else _subagent_tag(project, claude_id)


def _epoch_ms(moment: Any) -> int:
    return int(moment.timestamp() * 1000)


# entries in


def _checked_entries(entries: object) -> list[dict[str, Any]]:
    """The batch as JSON copies, each an object with a str `type`; `InvalidArgument`
    otherwise, before anything is written."""
    if not isinstance(entries, list):
        raise InvalidArgument(f"entries must be a list, got {type(entries).__name__}")
    checked = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise InvalidArgument(f"entry {number} is not an object with a str 'type'")
        try:
            copied = json.loads(json.dumps(entry, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidArgument(f"entry {number} is not JSON: {str(exc)[:120]}") from None
        checked.append(copied)
    return checked


@dataclass(slots=True)
class _Batch:
    """Turns a batch of entries into payloads, tracking what the importer tracks across lines:
    the live messages (a Claude Code compaction replaces them) and the tools called (a result
    takes its call's name, and its limits)."""

    header: SessionStarted
    """The session's header: its encoding counts each part, its window sizes each output's
    share (`truncated_result`), as for `Session.append_tool_result`."""
    config: CompressionConfig
    live: dict[str, int]
    calls: dict[str, str]
    manual: bool = False  # whether the last compact_boundary was a manual /compact

    @property
    def encoding(self) -> str:
        return self.header.encoding

    def payloads(self, entries: list[dict[str, Any]]) -> list[Payload]:
        return [self._payload(entry) for entry in entries]

    def _payload(self, entry: dict[str, Any]) -> Payload:
        kind = entry["type"]
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            metadata = entry.get("compactMetadata")
            self.manual = isinstance(metadata, dict) and metadata.get("trigger") == "manual"
        message = self._message(entry) if _is_conversation(entry) else None
        if message is None:
            native = Native(api=CLAUDE_CODE, value=entry)
            return RecordAppended(
                record=Record(kind=kind[:128], parts=(NativePart(native=native),))
            )
        tokens = sum(part.tokens or 0 for part in message.parts)
        if entry.get("isCompactSummary") is True and message.role == "user" and self.live:
            compaction = ContextCompacted(
                summary=message,
                first_kept_message_id=message.id,  # the fold puts the summary at the end
                replaced_message_ids=tuple(self.live),
                tokens_before=sum(self.live.values()),
                tokens_after=tokens,
                reason="manual" if self.manual else "before_llm_call",
                summarizer=CLAUDE_CODE,
            )
            self.live = {message.id: tokens}
            self.manual = False
            return compaction
        self.live[message.id] = tokens
        return MessageAppended(message=message)

    def _message(self, entry: dict[str, Any]) -> Message | None:
        """The entry as a message, or `None` when its shape is not one this maps (it is then
        kept as a record)."""
        body = entry.get("message")
        if not isinstance(body, dict):
            return None
        content = body.get("content")
        wrapper = {**entry, "message": {k: v for k, v in body.items() if k != "content"}}
        blocks = content if isinstance(content, list) else None
        if blocks is not None and (
            not blocks
            or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks)
        ):
            return None
        if entry["type"] == "assistant":
            return self._assistant(body, blocks, wrapper)
        if body.get("role", "user") != "user":
            return None
        if isinstance(content, str):
            return self._counted("user", [TextPart(text=content)], wrapper)
        if blocks is None:
            return None
        results = [b for b in blocks if b["type"] == "tool_result"]
        if not results:
            return self._counted("user", [_user_part(b) for b in blocks], wrapper)
        if len(results) != len(blocks):
            return None  # tool results and other content in one entry: kept whole
        return self._results(blocks, wrapper)

    def _assistant(
        self, body: dict[str, Any], blocks: list[Any] | None, wrapper: dict[str, Any]
    ) -> Message | None:
        if blocks is None or body.get("role", "assistant") != "assistant":
            return None
        try:
            # the response as `append_anthropic` keeps it: blocks verbatim, the envelope
            # (with the response id that merges its entries in `to_anthropic()`) as native
            response = anthropic_message(body)
        except InvalidArgument:
            return None
        for part in response.parts:
            if isinstance(part, ToolCallPart):
                self.calls[part.call_id] = part.name
        message = self._counted("assistant", list(response.parts), wrapper)
        return message.model_copy(update={"usage": response.usage, "native": response.native})

    def _results(self, blocks: list[dict[str, Any]], wrapper: dict[str, Any]) -> Message | None:
        """A user entry of tool results as a tool message: each result truncated as
        `append_tool_result` does; each block, without an output that is text, in its part's
        `native`, and the entry without its content in the first one's."""
        parts: list[Part] = []
        for number, block in enumerate(blocks):
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str) or not call_id:
                return None
            raw = block.get("content")
            text, shown = _result_text(raw)
            cut_out = isinstance(raw, str)
            kept: dict[str, Any] = {
                "block": {k: v for k, v in block.items() if k != "content"} if cut_out else block,
                "content_is_output": cut_out,
            }
            if number == 0:
                kept["entry"] = wrapper
            try:
                part = truncated_result(
                    self.config,
                    call_id,
                    self.calls.get(call_id),
                    text,
                    header=self.header,
                    is_error=block.get("is_error") is True,
                    blocks=shown,
                    native=Native(api=CLAUDE_CODE, value=kept),
                )
            except UnicodeEncodeError:
                raise InvalidArgument(
                    f"the output of tool_result {call_id[:40]!r} is not valid UTF-8"
                ) from None
            parts.append(with_tokens(part, self.encoding))
        return Message(role="tool", parts=tuple(parts))

    def _counted(self, role: Role, parts: list[Part], wrapper: dict[str, Any]) -> Message:
        """A user or assistant message of `parts`, counted, then the entry without its
        content: a part of no tokens that no render sends (another API's block, without
        text)."""
        counted = [with_tokens(part, self.encoding) for part in parts]
        kept = NativePart(native=Native(api=CLAUDE_CODE, value=wrapper), tokens=0)
        return Message(role=role, parts=(*counted, kept))


def _is_conversation(entry: dict[str, Any]) -> bool:
    """What Claude Code sent as conversation: the importer leaves out subagent traffic in a
    main transcript (`isSidechain`) and context it adds for itself (`isMeta`)."""
    return (
        entry["type"] in _CONVERSATION
        and entry.get("isMeta") is not True
        and entry.get("isSidechain") is not True
    )


def _user_part(block: dict[str, Any]) -> Part:
    """A user block as a part that keeps it: text, an image, else the block as it is (sent
    back as it came to Anthropic, shown as its JSON to other APIs)."""
    native = Native(api=ANTHROPIC, value=block)
    if block["type"] == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"], native=native)
    if block["type"] == "image":
        try:
            _, images = result_content([block])
        except InvalidArgument:
            pass
        else:
            if images and isinstance(images[0], FilePart):
                return images[0].model_copy(update={"native": native})
    text = f"[{block['type']} block] {json.dumps(block, ensure_ascii=False)}"
    return NativePart(native=native, text=text)


def _result_text(raw: object) -> tuple[str, tuple[TextPart | FilePart, ...] | None]:
    """A tool_result's content as the result's text and blocks: text as it is, blocks (text
    and images) read as `append_tool_result` reads them, anything else as its JSON."""
    if raw is None:
        return "", None
    if isinstance(raw, str):
        return raw, None
    try:
        return result_content(raw)
    except InvalidArgument:
        return json.dumps(raw, ensure_ascii=False), None


def _summary_record(
    previous: dict[str, Any] | None, key: SessionKey, entries: list[dict[str, Any]]
) -> RecordAppended:
    """The main transcript's summary after `entries`, as the batch's last event: its `mtime`
    is stamped when listed, from the session's last write (the batch's own)."""
    prev = None if previous is None else cast(SessionSummaryEntry, {**previous, "mtime": 0})
    folded = fold_session_summary(prev, key, cast(list[SessionStoreEntry], entries))
    value = {"session_id": folded["session_id"], "data": folded["data"]}
    native = Native(api=SUMMARY, value=value)
    return RecordAppended(record=Record(kind="session summary", parts=(NativePart(native=native),)))


# entries out


def _note(mirror: _Mirror, event: RecordedEvent) -> None:
    """What `event` changes in the mirror's uuids and summary."""
    found = _summary_in([event])
    if found is not None:
        mirror.summary = found
        return
    for entry in _entries_of(event):
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            mirror.uuids.add(uuid)


def _summary_in(events: list[RecordedEvent]) -> dict[str, Any] | None:
    """The last summary `events` hold."""
    found = None
    for event in events:
        payload = event.payload
        if isinstance(payload, RecordAppended):
            native = payload.record.parts[0].native
            if native.api == SUMMARY and isinstance(native.value, dict):
                found = dict(native.value)
    return found


def _entries_of(event: RecordedEvent) -> list[dict[str, Any]]:
    """The Claude Code entries an event holds, as they were appended."""
    payload = event.payload
    if isinstance(payload, RecordAppended):
        native = payload.record.parts[0].native
        if native.api == CLAUDE_CODE and isinstance(native.value, dict):
            return [native.value]
        return []
    if isinstance(payload, MessageAppended):
        entry = _entry_of(payload.message)
    elif isinstance(payload, ContextCompacted):
        entry = _entry_of(payload.summary)
    else:
        return []
    return [] if entry is None else [entry]


def _entry_of(message: Message) -> dict[str, Any] | None:
    """The entry a message was made from (`_Batch._message`'s inverse); `None` for a message
    sessionstore or another caller wrote."""
    parts = message.parts
    content: Any
    wrapper: Any
    if message.role == "tool":
        content, wrapper = [], None
        for part in parts:
            native = part.native if isinstance(part, ToolResultPart) else None
            kept = native.value if native is not None and native.api == CLAUDE_CODE else None
            if not isinstance(kept, dict) or not isinstance(kept.get("block"), dict):
                return None
            if wrapper is None:
                wrapper = kept.get("entry")
            block: dict[str, Any] = dict(cast(dict[str, Any], kept["block"]))
            if kept.get("content_is_output") is True and isinstance(part, ToolResultPart):
                block["content"] = part.output
            content.append(block)
    else:
        last = parts[-1]
        if not isinstance(last, NativePart) or last.native.api != CLAUDE_CODE:
            return None
        wrapper, blocks = last.native.value, parts[:-1]
        first = blocks[0] if len(blocks) == 1 else None
        if isinstance(first, TextPart) and first.native is None:
            content = first.text  # the entry's content was this text
        else:
            content = [_block_of(part) for part in blocks]
    if not isinstance(wrapper, dict) or not isinstance(wrapper.get("message"), dict):
        return None
    return {**wrapper, "message": {**wrapper["message"], "content": content}}


def _block_of(part: Part) -> Any:
    native = getattr(part, "native", None)
    if isinstance(native, Native):
        return native.value  # the block as it came (a redacted one says so)
    return {"type": "text", "text": getattr(part, "text", "")}
