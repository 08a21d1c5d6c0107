"""`AgentsSession`: one Agents SDK session kept as one sessionstore session.

Each SDK item is one message of the session, and the item itself is kept verbatim, so
`get_items()` returns exactly what `add_items()` was given (the SDK fingerprints its items to
dedupe them on resume: the JSON values must match, not the key order):
- what the model produced (an assistant `message`, `reasoning`, `function_call`, hosted tool
  items) is recorded as `append_openai_response` records a response's output items, each item
  in its part's `native`;
- a user, system or developer message is a text message, the item in the message's `native`;
- an assistant message with string content (an easy input message, as a caller or the SDK's
  own tests write one) is an assistant text message, the item in its part's `native`;
- a `function_call_output` is the tool result of its call, so truncation, pruning and restore
  apply to it like to any other (the item, without its `output`, in the message's `native`);
- any other item the SDK's own `SQLiteSession` would keep (an `EncryptedSession` envelope, an
  output whose call is not pending, an item of no type sessionstore models) is kept verbatim
  in a message of its own (`AGENTS_ITEM`) that no model is shown: it comes back in its place.

`session_settings` (the SDK's `SessionSettings`, its `limit` the default of `get_items`) and
`close()` are the SDK's sessions' own. An `OpenAIResponsesCompactionSession` over this session
reads a bounded tail and replaces it in one transaction (`_get_compaction_snapshot`, as the SDK's
`SQLiteSession` offers it), or replaces the whole history in one (`_atomic_replace_items`), so a
failed or raced compaction never leaves the history half-replaced.

The Runner keeps the items of a run in memory and sends them to the model as they are: the
session's truncation, pruning and compaction reach the model only through
`context_filter(session)`, a `call_model_input_filter` that records what the run added and
replaces the model's input with the session's live context (`Context.to_responses()`).
"""

from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

try:
    from agents.memory.session import SessionABC, _await_mutation, _CompactionSnapshot
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'sessionstore[openai-agents]'"
    ) from exc

from sessionstore.aio import AsyncSessionStore
from sessionstore.context import with_tokens
from sessionstore.events import (
    OPENAI_RESPONSES,
    ConcurrencyError,
    InvalidArgument,
    Message,
    MessageAppended,
    MessagePopped,
    Native,
    NativePart,
    NotInContext,
    Payload,
    SessionCleared,
    TextPart,
    ToolResultPart,
)
from sessionstore.integrations._sessions import async_face, retried, session_on_first_use
from sessionstore.projections import LiveMessage, LiveToolResult
from sessionstore.providers import responses_message
from sessionstore.session import Session, SessionStore

INPUT_ROLES = {"user": "user", "system": "system", "developer": "system"}
CALL_OUTPUTS = ("function_call_output", "custom_tool_call_output")
AGENTS_ITEM = "openai-agents.item"
"""The `Native.api` of an SDK item sessionstore keeps without modelling it (an `EncryptedSession`
envelope, a call output no pending call waits for): its message's one `NativePart`, with no
text, so no render shows it to a model, and `get_items()` gives it back in its place."""


def settings_of(given: SessionSettings | dict[str, Any] | None) -> SessionSettings:
    """The SDK's settings as its own sessions keep them: an empty `SessionSettings` when none
    are given (its `limit` is then `get_items()`'s default), a dict coerced."""
    return SessionSettings() if given is None else coerce_session_settings(given)


class AgentsSession(SessionABC):
    """An Agents SDK session kept in a `SessionStore` (or an `AsyncSessionStore`). The
    sessionstore session is created on first use with `create` (keyword arguments of
    `SessionStore.create_session`), and resumed as it is when it exists."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore | AsyncSessionStore,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **create: Any,
    ) -> None:
        self.session_id = session_id
        # as the SDK's own sessions: its `limit` is `get_items()`'s default
        self.session_settings: SessionSettings | None = settings_of(session_settings)
        self._face = async_face(store)
        self._store = self._face.sync
        self._create = create
        self._handle: Session | None = None
        self._lock = threading.Lock()
        self._writing = threading.RLock()
        """Held from reading the items to appending what follows from them (a replacement,
        the items a run has not stored yet): the handle is shared by every thread."""
        self._added_early: Counter[str] = Counter()
        """Items `context_filter` stored before the Runner's `add_items` sent them: that call
        skips each of them once."""

    @property
    def session(self) -> Session:
        """The sessionstore session underneath (created on first use)."""
        with self._lock:
            if self._handle is None:
                self._handle = session_on_first_use(self._store, self.session_id, self._create)
            return self._handle

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items, oldest first; the newest `limit` of them (`session_settings.limit` when
        `limit` is `None`). A negative limit gives every item, as the SDK's `SQLiteSession`."""
        items = await self._face.run_sync(self._items)
        limit = resolve_session_limit(limit, self.session_settings)
        return items if limit is None or limit < 0 else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        await self._face.run_sync(self._add_new, items)

    async def pop_item(self) -> Any | None:
        popped = await self._face.run_sync(self._pop)
        return None if popped is None else item_of(popped)

    async def clear_session(self) -> None:
        await self._face.run_sync(self._clear)

    def _pop(self) -> Message | None:
        with self._writing:
            session = self.session
            return retried(session, session.pop)

    def _clear(self) -> None:
        with self._writing:
            session = self.session
            retried(session, lambda: session.clear(reason="clear_session"))

    def close(self) -> None:
        """Let go of the sessionstore session this object holds (its folded context). The
        store is the caller's and stays open; a later call resumes the session from it."""
        with self._lock:
            self._handle = None

    async def _get_compaction_snapshot(
        self,
        limit: int,
        *,
        prune_prefix: Callable[[Any], bool] | None = None,
    ) -> _CompactionSnapshot | None:
        """The newest `limit` items and a way to replace a suffix of them in one transaction,
        which fails (`False`) when the session changed after this read: what the SDK's
        `OpenAIResponsesCompactionSession` needs to compact a long history's tail. When every
        item before the suffix is one `prune_prefix` says may go (an `EncryptedSession`'s
        expired envelopes), they go in the same transaction; otherwise they stay.

        A subclass that transforms items gets none (the compaction session then falls back to
        reading `get_items`), as the SDK's `SQLiteSession` does: the snapshot would bypass it."""
        if type(self) is not AgentsSession:
            return None

        def read() -> tuple[list[str], list[Any], bool]:
            messages = self._messages()
            tail = messages[-limit:] if limit > 0 else []
            return [m.id for m in tail], [item_of(m) for m in tail], len(tail) == len(messages)

        ids, items, complete = await self._face.run_sync(read)

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            expected = ids[start:]
            if not expected:
                return False
            replace = self._replace
            return await _await_mutation(
                self._face.run_sync(replace, expected, list(output), prune_prefix)
            )

        return _CompactionSnapshot(items, complete, replace_suffix)

    async def _atomic_replace_items(self, items: list[Any]) -> bool:
        """Replace the whole history by `items` in one transaction (the SDK's compaction
        session's manual `run_compaction`), so a failure never leaves it half-replaced.

        A subclass gets `False`, and the compaction session replaces through its
        `clear_session` and `add_items`, as for the SDK's `SQLiteSession`: one transaction here
        would bypass what its methods do to the items."""
        if type(self) is not AgentsSession:
            return False
        return await self._face.run_sync(self._replace, None, list(items), None)

    def _replace(
        self,
        expected: list[str] | None,
        output: list[Any],
        prune_prefix: Callable[[Any], bool] | None,
    ) -> bool:
        """The live messages `expected` (the newest ones; `None`: all of them) replaced by the
        messages of `output`, in one append; `False`, and nothing written, when the newest live
        messages are no longer `expected`."""
        with self._writing:
            return self._replace_now(expected, output, prune_prefix)

    def _replace_now(
        self,
        expected: list[str] | None,
        output: list[Any],
        prune_prefix: Callable[[Any], bool] | None,
    ) -> bool:
        session = self.session
        messages = self._messages()
        if expected is None:
            expected = [m.id for m in messages]
        if [m.id for m in messages[len(messages) - len(expected) :]] != expected:
            return False
        before = messages[: len(messages) - len(expected)]
        if before and prune_prefix is not None and all(prune_prefix(item_of(m)) for m in before):
            expected, before = [m.id for m in messages], []
        encoding = session.header.encoding
        events: list[Payload] = (
            [SessionCleared(cleared_message_ids=tuple(expected), reason="compaction")]
            if not before and expected
            else [MessagePopped(message_id=i) for i in reversed(expected)]
        )
        for item in map(_plain, output):
            message = _opaque(item) if item.get("type") in CALL_OUTPUTS else message_of(item)
            parts = tuple(with_tokens(part, encoding) for part in message.parts)
            events.append(MessageAppended(message=message.model_copy(update={"parts": parts})))
        if not events:
            return True  # nothing replaced by nothing
        try:
            session.append_events(events)
        except ConcurrencyError:  # another writer came between the read and this append
            return False
        return True

    def _items(self) -> list[Any]:
        return [item_of(message) for message in self._messages()]

    def _entries(self) -> list[tuple[str, Any]]:
        """(message id, item) of each item, oldest first: what `AdvancedAgentsSession` reads
        turns from."""
        return [(message.id, item_of(message)) for message in self._messages()]

    def _messages(self) -> list[LiveMessage]:
        session = self.session
        session.refresh()
        # every output as it was appended, however the context shows it now
        return list(session.context(restore_pruned=True).messages)

    def _add_new(self, items: list[Any]) -> None:
        with self._writing:
            self._add_fresh(items)

    def _add_fresh(self, items: list[Any]) -> None:
        fresh = []
        for item in [_plain(item) for item in items]:  # all checked before any is counted
            key = _fingerprint(item)
            if self._added_early[key] > 0:
                self._added_early[key] -= 1
            else:
                fresh.append(item)
        self._add(fresh)

    def _add_unstored(self, given: list[Any]) -> None:
        """What the run's input holds beyond the stored items (counted: a repeated message is
        new the second time), stored now and remembered for the Runner's own `add_items`."""
        with self._writing:
            self._add_unstored_now(given)

    def _add_unstored_now(self, given: list[Any]) -> None:
        stored = Counter(_fingerprint(item) for item in self._items())
        fresh = []
        for item in map(_plain, given):
            key = _fingerprint(item)
            if stored[key] > 0:
                stored[key] -= 1
            else:
                fresh.append(item)
        self._add(fresh)
        self._added_early.update(_fingerprint(item) for item in fresh)

    def _add(self, items: list[dict[str, Any]]) -> None:
        session = self.session
        for item in items:
            retried(session, functools.partial(self._add_one, session, item))

    @staticmethod
    def _add_one(session: Session, item: dict[str, Any]) -> None:
        if item.get("type") not in CALL_OUTPUTS:
            session.append_message(message_of(item))
            return
        output = item.get("output")
        verbatim = (
            item
            if not isinstance(output, str)
            else {key: value for key, value in item.items() if key != "output"}
        )
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        envelope = Native(api=OPENAI_RESPONSES, value=verbatim)
        call_id = item.get("call_id")
        try:
            if not isinstance(call_id, str) or not call_id:
                raise NotInContext("an output with no call id")
            part = session.tool_result_part(call_id, text)
        except NotInContext:
            # no call of this session waits for it: kept as it came, shown to no model
            session.append_message(_opaque(item))
        else:
            session.append_message(Message(role="tool", parts=(part,), native=envelope))


class Branched(Protocol):
    """A session of several branches (`AdvancedAgentsSession`): `context_filter` works on the
    `AgentsSession` of its current branch."""

    _face: AsyncSessionStore

    def _current_session(self) -> AgentsSession: ...


def context_filter(session: AgentsSession | Branched) -> Any:
    """A `RunConfig(call_model_input_filter=...)` that hands the model the session's live
    context (the current branch's, for an `AdvancedAgentsSession`): the items of the run not
    stored yet are added first (so a tool's 300 KB output is stored whole and shown truncated),
    then the context is kept in its window (`before_llm_call`) and rendered for the Responses
    API."""

    async def keep_in_window(data: CallModelData[Any]) -> ModelInputData:
        def managed() -> list[Any]:
            target = session if isinstance(session, AgentsSession) else session._current_session()
            target._add_unstored(list(data.model_data.input))
            target.session.before_llm_call()
            return target.session.context().to_responses()

        items = await session._face.run_sync(managed)
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return keep_in_window


def message_of(item: dict[str, Any]) -> Message:
    """One SDK item other than a tool's output as a message, the item kept verbatim (a tool's
    output is a tool result: `AgentsSession._add`). An item that is neither an input message
    nor a Responses output item sessionstore can read is kept as it came (`AGENTS_ITEM`)."""
    kind = item.get("type", "message")
    role = item.get("role")
    if kind == "message" and role in INPUT_ROLES:
        text = _content_text(item.get("content"))
        native = Native(api=OPENAI_RESPONSES, value=item)
        return Message(role=INPUT_ROLES[role], parts=(TextPart(text=text),), native=native)
    if kind == "message" and role == "assistant" and isinstance(item.get("content"), str):
        # an easy input message: valid input, sent back as it came
        part = TextPart(text=item["content"], native=Native(api=OPENAI_RESPONSES, value=item))
        return Message(role="assistant", parts=(part,))
    if not isinstance(item.get("type"), str):
        return _opaque(item)
    try:
        return responses_message({"output": [item]})
    except InvalidArgument:  # a type it models, without the fields it reads
        return _opaque(item)


def _opaque(item: dict[str, Any]) -> Message:
    """An item kept verbatim and shown to no model (`AGENTS_ITEM`)."""
    part = NativePart(native=Native(api=AGENTS_ITEM, value=item))
    return Message(role="user", parts=(part,))


def item_of(message: Message | LiveMessage) -> Any:
    """The SDK item a message was recorded from (`message_of`'s inverse)."""
    envelope = message.native.value if message.native is not None else None
    part = message.parts[0]
    if isinstance(part, ToolResultPart | LiveToolResult) and isinstance(envelope, dict):
        return envelope if "output" in envelope else {**envelope, "output": part.output}
    if message.role in ("user", "system") and isinstance(envelope, dict):
        return envelope
    native = getattr(part, "native", None)
    if native is not None:
        return native.value
    if message.role in ("user", "system") and isinstance(part, TextPart):
        # written by sessionstore itself (a compaction's summary): an input message
        return {"role": "user" if message.role == "user" else "developer", "content": part.text}
    raise InvalidArgument(f"message {message.id} was not recorded from an Agents SDK item")


def _plain(item: Any) -> dict[str, Any]:
    """An item as its JSON dict (the SDK passes dicts, and sometimes its pydantic models);
    `InvalidArgument` for one that is not JSON (the SDK's own sessions refuse it too)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, dict):
        raise InvalidArgument(f"an Agents SDK item is a dict, not {type(item).__name__}")
    try:
        json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"an Agents SDK item must be JSON: {exc}") from None
    return item


def _fingerprint(item: Any) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            entry.get("text", "")
            for entry in content
            if isinstance(entry, dict) and isinstance(entry.get("text"), str)
        )
    return ""
