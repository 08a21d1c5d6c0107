"""sessionstore as Google ADK's session service: `SessionStoreService(store)`.

```python
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from sessionstore.integrations.adk import SessionStoreService, context_callback

service = SessionStoreService(store, context_window=1_000_000)
agent = LlmAgent(name="helper", model=model, before_model_callback=context_callback(service))
runner = Runner(app_name="weather", agent=agent, session_service=service)
```

One ADK session is one sessionstore session, whose id is derived from (app name, user id, ADK
session id) (ADK ids are unique per app and user only); its title holds the three as JSON, its
metadata `app` and `user` (a name that is not a label, over 128 characters say, is listed by
its hash), so `list_sessions` is one SQL-filtered `SessionStore.sessions` query.

Every appended `Event` is kept verbatim (its JSON, as ADK's `DatabaseSessionService` stores it)
and `get_session` gives back `Event`s equal to those appended, read from the log, not from the
live context (a pruned or compacted context does not change what ADK reads back), ordered as
`DatabaseSessionService` orders them, by (timestamp, id). As there, an event id is unique in a
session (appending it again is `IdempotencyError`), and `last_update_time` is the timestamp of
the last event appended (of the session's creation before any).

`get_session` reads the log from its newest event back, and stops where its config is met:
`num_recent_events=n` when it holds the n latest and has read past an event older than all of
them, `after_timestamp` at the first event before it, and at the session's creation in any
case. So the cost follows what is asked for, not the session's length; an event appended after
others whose timestamps are later than its own by more than those others' span is the one case
where this differs from sorting the whole log (ADK's `Runner` appends events as it makes them).

- an event with content is a message: user text is a user message; model text, thoughts (with
  their signatures) and function calls an assistant message with tool calls. Each ADK part is
  its part's `native` (a body: purged and redactable), the rest of the event the message's;
- function responses are one tool message whose results are tool results, so truncation,
  pruning and restore apply to them (the event is kept without the responses they hold);
- an event without content (state only, a transfer, an escalation) is a record: in the log,
  never in the context. So is an event the context cannot take (a response to no pending call).

State follows `DatabaseSessionService`: `temp:` keys are never stored; session keys are the
session's state, set by a `StateChanged` in the same transaction as the event; `user:` keys
live in one sessionstore session per (app, user), `app:` keys in one per app, merged with the
prefixes into every session read. A delta is written to the session first (where the stale
check is), then to the user's, then to the app's: three transactions, not one.

ADK builds each model request from the session's events itself; `context_callback(service)`,
an `LlmAgent(before_model_callback=...)`, shows the model each function response as the
session's live context does: truncated, or its prune placeholder (pruning when the context
overflows `context_window`). Compaction is ADK's own (`EventsCompactionConfig`): an event
with `actions.compaction` is kept as a record, and is a compaction of the live context too
(`compaction_of`), so the context, and what `context_callback` measures and prunes, is what ADK
sends.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, NamedTuple

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.errors import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.platform import uuid as platform_uuid
    from google.adk.sessions import Session as AdkSession
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.state import State
    from google.genai import types
    from pydantic_core import to_jsonable_python
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.adk needs Google ADK: pip install 'sessionstore[adk]'"
    ) from exc

from sessionstore.aio import AsyncSessionStore
from sessionstore.context import with_tokens
from sessionstore.events import (
    ContextCompacted,
    IdempotencyError,
    InvalidArgument,
    InvalidEvent,
    Message,
    MessageAppended,
    Native,
    NativePart,
    NotInContext,
    Part,
    PayloadTooLarge,
    ReasoningPart,
    RecordAppended,
    RecordedEvent,
    SessionExists,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownSession,
    Usage,
)
from sessionstore.integrations._sessions import async_face, retried
from sessionstore.projections import LiveToolResult
from sessionstore.session import LABEL_LENGTH, Session, SessionStore

ADK = "adk"
"""`Native.api` of what ADK handed us."""
SESSION_TAG = "adk.session"
DELETED_TAG = "adk.deleted"
USER_STATE_TAG = "adk.user-state"
APP_STATE_TAG = "adk.app-state"
EVENT_RECORD = "adk.event"
CREATED_RECORD = "adk.session"
"""Opens each life of an ADK session (a deleted one can be created again): `get_session` reads
the events after the last one."""
LIFE_TAG = "adk.life:"
"""Tags a session created again after a delete with a new life (a random id), so the event ids
of its earlier life do not count as used (the first life has no such tag)."""
EVENT_IDS = uuid.UUID("5f0c3c8e-7d1a-4e55-9a57-2f6b1c9d0e41")
"""The namespace of the sessionstore event ids derived from ADK event ids (`_event_key`)."""
RESULT_MARK = "sessionstore:result"
"""In a stored event, a function response `{"result": <the tool result's output>}`."""
JSON_MARK = "sessionstore:json"
"""In a stored event, a function response that is the tool result's output parsed as JSON."""
_SEEN_BY_ADK = frozenset(
    {"MessageAppended", "RecordAppended", "StateChanged", "MetadataChanged", "ContentRedacted"}
)
"""Events that change what `get_session` returns; the others (pruning, restores) do not make
an ADK session object stale."""
_FIRST_READ = 32
"""Events `get_session` reads first from the newest back; each further read doubles."""


class Scoped(NamedTuple):
    """A state (delta) split as ADK stores it: `app:` and `user:` keys without their prefix."""

    app: dict[str, Any]
    user: dict[str, Any]
    session: dict[str, Any]


def scoped(state: Mapping[str, Any]) -> Scoped:
    """`state` as JSON (as `DatabaseSessionService` stores it), by scope, without `temp:`."""
    values = to_jsonable_python(dict(state), fallback=str, inf_nan_mode="null")
    split = Scoped({}, {}, {})
    for key, value in values.items():
        if key.startswith(State.APP_PREFIX):
            split.app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            split.user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            split.session[key] = value
    return split


def merged(app: Mapping[str, Any], user: Mapping[str, Any], session: Mapping[str, Any]) -> Any:
    """The state ADK sees: the session's, then the app's and the user's with their prefixes."""
    state = copy.deepcopy(dict(session))
    state.update({State.APP_PREFIX + key: value for key, value in app.items()})
    state.update({State.USER_PREFIX + key: value for key, value in user.items()})
    return state


def _digest(*names: str) -> str:
    return hashlib.sha256(json.dumps(list(names), ensure_ascii=False).encode()).hexdigest()


def session_id_of(app_name: str, user_id: str, session_id: str) -> str:
    """The sessionstore id of an ADK session: the same whatever the names hold."""
    return f"adk-{_digest(app_name, user_id, session_id)[:40]}"


def label(name: str) -> str:
    """An app or user name as sessionstore lists it: itself, or its hash when it is not a
    label (empty, over 128 characters, unprintable)."""
    if 0 < len(name) <= LABEL_LENGTH and name.isprintable():
        return name
    return f"sha256:{_digest(name)}"


class SessionStoreService(BaseSessionService):
    """ADK's `BaseSessionService` over a `SessionStore` (or an `AsyncSessionStore`). `create`
    are keyword arguments of `SessionStore.create_session` for each new session (`model`,
    `context_window`, `compression`)."""

    def __init__(self, store: SessionStore | AsyncSessionStore, **create: Any) -> None:
        self._face = async_face(store)
        self._store = self._face.sync
        self._create = create
        self._handles: dict[str, Session] = {}
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    def session(self, app_name: str, user_id: str, session_id: str) -> Session:
        """The sessionstore session of an ADK session (`UnknownSession` if there is none)."""
        return self._handle(session_id_of(app_name, user_id, session_id))

    # BaseSessionService

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        return await self._face.run_sync(self._create_session, app_name, user_id, state, session_id)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        return await self._face.run_sync(self._get_session, app_name, user_id, session_id, config)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await self._face.run_sync(self._list_sessions, app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._face.run_sync(self._delete_session, app_name, user_id, session_id)

    async def close(self) -> None:
        """Let go of the sessionstore sessions this service holds (their folded contexts), as
        `DatabaseSessionService.close()` lets go of what it owns. The store is the caller's
        and stays open; the service can be used again, and resumes each session from it."""
        with self._guard:
            self._handles.clear()

    async def __aenter__(self) -> SessionStoreService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._face.run_sync(self._state_of, _user_state_id(app_name, user_id))

    async def append_event(self, session: AdkSession, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await self._face.run_sync(self._append_event, session, event)
        return self._commit_event_to_session(session, event)

    # the work, on the store's workers (`AsyncSessionStore.run_sync`)

    def _create_session(
        self, app_name: str, user_id: str, state: dict[str, Any] | None, session_id: str | None
    ) -> AdkSession:
        _check_names(app_name, user_id, session_id)
        adk_id = session_id if session_id is not None else platform_uuid.new_uuid()
        deltas = scoped(state or {})
        ours = session_id_of(app_name, user_id, adk_id)
        with self._lock(ours):
            try:
                handle = self._store.create_session(
                    session_id=ours,
                    title=json.dumps([app_name, user_id, adk_id], ensure_ascii=False),
                    app=label(app_name),
                    user=label(user_id),
                    tags=(SESSION_TAG,),
                    **self._create,
                )
                self._handles[ours] = handle
            except SessionExists:
                handle = self._fresh(ours)
                if DELETED_TAG not in handle.header.tags:
                    raise AlreadyExistsError(f"Session with id {adk_id} already exists.") from None
                handle.update_state(remove=[k for k in handle.state() if k not in deltas.session])
                # created again after a delete: a new life, whose event ids start unused
                handle.update_metadata(tags=[SESSION_TAG, LIFE_TAG + uuid.uuid4().hex])
            identity = {"app_name": app_name, "user_id": user_id, "id": adk_id}
            handle.append_record(
                CREATED_RECORD, Native(api=ADK, value=identity), state=deltas.session
            )
        self._update_scoped(app_name, user_id, deltas)
        read = self._read(ours, GetSessionConfig(num_recent_events=0))
        return self._adk_session(ours, app_name, user_id, adk_id, read)

    def _get_session(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> AdkSession | None:
        _check_names(app_name, user_id, session_id)
        ours = session_id_of(app_name, user_id, session_id)
        try:
            handle = self._fresh(ours)
        except UnknownSession:
            return None
        if DELETED_TAG in handle.header.tags:
            return None
        return self._adk_session(ours, app_name, user_id, session_id, self._read(ours, config))

    def _list_sessions(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        _check_names(app_name, "" if user_id is None else user_id, None)
        user = None if user_id is None else label(user_id)
        infos = self._store.sessions(app=label(app_name), user=user, tag=SESSION_TAG)
        app_state = self._state_of(_app_state_id(app_name))
        user_states: dict[str, dict[str, Any]] = {}
        sessions = []
        for info in infos:
            names = json.loads(info.title)
            if names[0] != app_name or (user_id is not None and names[1] != user_id):
                continue  # another name with the same hash: never in practice, checked anyway
            owner, adk_id = names[1], names[2]
            if owner not in user_states:
                user_states[owner] = self._state_of(_user_state_id(app_name, owner))
            state = merged(app_state, user_states[owner], self._store.session(info.id).state())
            last = self._read(info.id, GetSessionConfig(num_recent_events=0)).last_update_time
            listed = AdkSession(
                id=adk_id, app_name=app_name, user_id=owner, state=state, last_update_time=last
            )
            listed._storage_update_marker = str(info.version)
            sessions.append(listed)
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    def _delete_session(self, app_name: str, user_id: str, session_id: str) -> None:
        """Delete for good what ADK can read: every body is purged (`SessionStore.purge`), the
        state emptied, the session tagged deleted. Each step is a no-op once done, so a
        delete that was interrupted finishes when called again."""
        _check_names(app_name, user_id, session_id)
        ours = session_id_of(app_name, user_id, session_id)
        with self._lock(ours):
            try:
                handle = self._fresh(ours)
            except UnknownSession:
                return
            handle.update_metadata(tags=[DELETED_TAG])
            self._store.purge(ours, reason="ADK delete_session")
            handle.refresh()
            handle.update_state(remove=list(handle.state()))

    def _append_event(self, session: AdkSession, event: Event) -> None:
        ours = session_id_of(session.app_name, session.user_id, session.id)
        deltas = scoped(event.actions.state_delta if event.actions else {})
        with self._lock(ours):
            try:
                handle = self._fresh(ours)
            except UnknownSession:
                raise SessionNotFoundError(f"Session {session.id} not found.") from None
            if DELETED_TAG in handle.header.tags:
                raise SessionNotFoundError(f"Session {session.id} not found.")

            def write() -> None:  # again when another process appended since: look again
                self._check_not_stale(handle, session)
                self._write(handle, event, deltas.session)

            retried(handle, write)
            session._storage_update_marker = str(handle.version)
            session.last_update_time = event.timestamp  # as DatabaseSessionService stamps it
        self._update_scoped(session.app_name, session.user_id, deltas)

    def _check_not_stale(self, handle: Session, session: AdkSession) -> None:
        """`StaleSessionError` when the stored session changed since `session` was read, as
        `DatabaseSessionService` decides it: by the revision marker when the session came
        from this service, else by its last event."""
        marker = session._storage_update_marker
        if marker is not None and marker.isdigit():
            newer = self._store.read(handle.id, int(marker) + 1)
            if any(recorded.type in _SEEN_BY_ADK for recorded in newer):
                raise StaleSessionError(_STALE)
            return
        read = self._read(handle.id, GetSessionConfig(num_recent_events=1))
        if read.last_update_time > session.last_update_time:
            last = read.events[-1].id if read.events else None
            if last != (session.events[-1].id if session.events else None):
                raise StaleSessionError(_STALE)

    def _write(self, handle: Session, event: Event, state: dict[str, Any]) -> None:
        """The event as a message (or, if the context cannot take it, a record) and the
        session's part of its state delta, in one transaction. Its sessionstore event id is
        derived from its ADK id, so the store's unique (session, event id) refuses an ADK id
        used already in this life of the session, as `DatabaseSessionService`'s key does
        (the message and part ids are new on each try: never the same content)."""
        value = event.model_dump(mode="json", exclude_none=True)
        key = _event_key(handle, event.id)
        try:
            message = message_of(handle, event, value)
            if message is not None:
                try:
                    handle.append_message(message, state=state, event_id=key)
                    return
                except PayloadTooLarge:
                    raise
                except (InvalidEvent, NotInContext):
                    pass  # a call id used already, say: kept as a record
            record = Native(api=ADK, value=value)
            compaction = compaction_of(handle, event)
            then = [compaction] if compaction is not None else []
            handle.append_record(EVENT_RECORD, record, state=state, event_id=key, then=then)
        except IdempotencyError:
            raise IdempotencyError(
                handle.id, event.id, "an ADK event with this id is in the session already"
            ) from None

    def _update_scoped(self, app_name: str, user_id: str, deltas: Scoped) -> None:
        if deltas.user:
            self._update_state(_user_state_id(app_name, user_id), deltas.user, app_name, user_id)
        if deltas.app:
            self._update_state(_app_state_id(app_name), deltas.app, app_name, None)

    def _update_state(
        self, ours: str, values: dict[str, Any], app_name: str, user_id: str | None
    ) -> None:
        """Set keys of an app's or a user's state session (created on first use); another
        process's change in between is caught up with and the change tried again."""
        with self._lock(ours):
            try:
                handle = self._fresh(ours)
            except UnknownSession:
                try:
                    handle = self._store.create_session(
                        session_id=ours,
                        title=json.dumps([app_name, user_id], ensure_ascii=False),
                        app=label(app_name),
                        user=None if user_id is None else label(user_id),
                        tags=(APP_STATE_TAG if user_id is None else USER_STATE_TAG,),
                    )
                except SessionExists:
                    handle = self._store.session(ours)
                self._handles[ours] = handle
            retried(handle, lambda: handle.update_state(values))

    # reading

    def _read(self, ours: str, config: GetSessionConfig | None) -> _Read:
        """The ADK events of the session's current life that `config` asks for, ordered by
        (timestamp, id), read from the newest back only as far as it needs (see the module);
        with the seq read up to and the last update time."""
        want = None if config is None else config.num_recent_events
        after = None if config is None else config.after_timestamp
        head = self._store.version(ours)
        found: list[tuple[float, str, RecordedEvent]] = []
        last: float | None = None
        high, size = head, _FIRST_READ
        while high >= 1:
            low = max(1, high - size + 1)
            for recorded in reversed(self._store.read(ours, low, high)):
                value = _event_value(recorded)
                if value is None:
                    continue
                if value is _CREATED:
                    last = recorded.recorded_at.timestamp() if last is None else last
                    high = 0
                    break
                stamp = (_timestamp(value), str(value.get("id", "")))
                last = stamp[0] if last is None else last
                if want == 0 or (after and stamp[0] < after):
                    high = 0
                    break
                found.append((*stamp, recorded))
                if (
                    want is not None
                    and len(found) > want
                    and stamp[0] < heapq.nlargest(want, found)[-1][0]
                ):
                    high = 0  # older than the `want` latest: they are found
                    break
            else:
                high, size = low - 1, size * 2
        found.sort(key=lambda entry: entry[:2])
        chosen = found if want is None else found[-want:] if want else []
        events = [_event_of(recorded) for _, _, recorded in chosen]
        if last is None:  # no record of its creation (never in practice)
            last = self._store.session_info(ours).updated_at.timestamp()
        return _Read(events, head, last)

    def _state_of(self, ours: str) -> dict[str, Any]:
        try:
            return self._fresh(ours).state()
        except UnknownSession:
            return {}

    def _adk_session(
        self, ours: str, app_name: str, user_id: str, session_id: str, read: _Read
    ) -> AdkSession:
        state = merged(
            self._state_of(_app_state_id(app_name)),
            self._state_of(_user_state_id(app_name, user_id)),
            self._state_of(ours),
        )
        session = AdkSession(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=state,
            events=read.events,
            last_update_time=read.last_update_time,
        )
        session._storage_update_marker = str(read.seen)
        return session

    def _fresh(self, ours: str) -> Session:
        handle = self._handle(ours)
        handle.refresh()
        return handle

    def _handle(self, ours: str) -> Session:
        with self._guard:
            handle = self._handles.get(ours)
        if handle is None:
            handle = self._store.session(ours)
            with self._guard:
                handle = self._handles.setdefault(ours, handle)
        return handle

    def _lock(self, ours: str) -> threading.RLock:
        """One lock per stored session: appends to it from this process take turns, as
        `DatabaseSessionService`'s per-session lock makes them."""
        with self._guard:
            return self._locks.setdefault(ours, threading.RLock())

    # the model's view

    def _shown_outputs(self, app_name: str, user_id: str, session_id: str) -> dict[str, str]:
        """For each tool result the model is not shown in full (truncated or pruned), by call
        id, what it is shown; pruning first when the context overflows its window."""
        handle = self._fresh(session_id_of(app_name, user_id, session_id))
        if handle.measure().overflowing:
            handle.prune(reason="overflow at before_llm_call")
        return {
            part.call_id: part.output
            for message in handle.context().messages
            for part in message.parts
            if isinstance(part, LiveToolResult)
            and part.status in ("truncated", "previewed", "pruned")
        }


_STALE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


class _Read(NamedTuple):
    """What `get_session` read: the events, the seq it read up to (the session object's
    revision marker) and the session's last update time."""

    events: list[Event]
    seen: int
    last_update_time: float


_CREATED: dict[str, Any] = {}
"""`_event_value` of the record that opens a life of the session."""


def _event_value(recorded: RecordedEvent) -> dict[str, Any] | None:
    """The ADK event JSON a stored event holds (`_CREATED` for the record of a creation);
    `None` for the rest (state changes, prunes, redacted envelopes)."""
    payload = recorded.payload
    if isinstance(payload, RecordAppended):
        native = payload.record.parts[0].native
        if payload.record.kind == CREATED_RECORD:
            return _CREATED
        if payload.record.kind == EVENT_RECORD and native.api == ADK:
            return native.value if isinstance(native.value, dict) else None
    elif isinstance(payload, MessageAppended):
        envelope = payload.message.native
        if envelope is not None and envelope.api == ADK and isinstance(envelope.value, dict):
            return envelope.value
    return None


def _event_of(recorded: RecordedEvent) -> Event:
    payload = recorded.payload
    if isinstance(payload, MessageAppended):
        return event_of(payload.message)
    assert isinstance(payload, RecordAppended)
    return Event.model_validate(payload.record.parts[0].native.value)


def _timestamp(value: dict[str, Any]) -> float:
    stamp = value.get("timestamp")
    return float(stamp) if isinstance(stamp, int | float) else 0.0


def _event_key(handle: Session, adk_event_id: str) -> str:
    """The sessionstore event id of the ADK event `adk_event_id` in this life of the session:
    the same on every try, so the store refuses the second."""
    life = next((tag for tag in handle.header.tags if tag.startswith(LIFE_TAG)), "")
    name = json.dumps([handle.id, life, adk_event_id], ensure_ascii=False)
    return str(uuid.uuid5(EVENT_IDS, name))


def _user_state_id(app_name: str, user_id: str) -> str:
    return f"adk-user-{_digest(app_name, user_id)[:40]}"


def _app_state_id(app_name: str) -> str:
    return f"adk-app-{_digest(app_name)[:40]}"


def _check_names(app_name: object, user_id: object, session_id: object) -> None:
    for name, value in (("app_name", app_name), ("user_id", user_id)):
        if not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a str, got {type(value).__name__}")
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidArgument(f"session_id must be a str or None, got {type(session_id).__name__}")


def message_of(handle: Session, event: Event, value: dict[str, Any]) -> Message | None:
    """The message an event with content is, with the event (`value`, its JSON) as the
    message's native; `None` when it has no content or answers a call that is not pending."""
    content = event.content
    if content is None or not content.parts:
        return None
    blocks: list[dict[str, Any]] = value["content"]["parts"]
    if any(part.function_response is not None for part in content.parts):
        return _results_message(handle, blocks, value)
    role = "assistant" if content.role == "model" else "user"
    parts: list[Part] = []
    for part, block in zip(content.parts, blocks, strict=True):
        native = Native(api=ADK, value=block)  # each block a body: purged and redactable
        call = part.function_call
        if call is not None and call.id and call.name and role == "assistant":
            arguments = json.dumps(block["function_call"].get("args", {}), ensure_ascii=False)
            parts.append(
                ToolCallPart(call_id=call.id, name=call.name, arguments=arguments, native=native)
            )
        elif part.text is not None and part.thought and role == "assistant":
            parts.append(ReasoningPart(text=part.text, native=native))
        elif part.text is not None:
            parts.append(TextPart(text=part.text, native=native))
        else:  # inline data, code and its result, a call we cannot follow: as ADK gave it
            parts.append(NativePart(native=native))
    usage = _usage(event) if role == "assistant" else None
    # the envelope is stored inline in the event: what was said is in the parts, not here
    envelope = {**value, "content": {k: v for k, v in value["content"].items() if k != "parts"}}
    return Message(
        role=role, parts=tuple(parts), usage=usage, native=Native(api=ADK, value=envelope)
    )


def compaction_of(handle: Session, event: Event) -> ContextCompacted | None:
    """ADK's compaction (`actions.compaction`) as a compaction of the live context: the live
    messages whose events' timestamps fall in its range leave, and its `compacted_content`
    stands in for them where ADK puts it, at the range's end, so the context is what ADK sends
    the model (its request builder drops the events in the range and adds the summary as the
    agent's turn). `None` when it has no content or covers no live message."""
    compaction = event.actions.compaction if event.actions else None
    if compaction is None or compaction.compacted_content is None:
        return None
    content = compaction.compacted_content
    blocks = [part.model_dump(mode="json", exclude_none=True) for part in content.parts or ()]
    texts = [block for block in blocks if isinstance(block.get("text"), str)]
    if not texts:
        return None
    start, end = compaction.start_timestamp, compaction.end_timestamp
    live = handle.context().messages
    stamps = [_stamp(message.native) for message in live]
    replaced = [
        m
        for m, stamp in zip(live, stamps, strict=True)
        if m.role != "system" and stamp is not None and start <= stamp <= end
    ]
    if not replaced:
        return None
    encoding = handle.header.encoding
    parts = tuple(
        with_tokens(TextPart(text=block["text"], native=Native(api=ADK, value=block)), encoding)
        for block in texts
    )
    summary = Message(role="assistant" if content.role == "model" else "user", parts=parts)
    after = [m for m, stamp in zip(live, stamps, strict=True) if stamp is not None and stamp > end]
    summary_tokens = sum(part.tokens or 0 for part in parts)
    before = handle.tokens
    return ContextCompacted(
        summary=summary,
        first_kept_message_id=after[0].id if after else summary.id,  # else the summary goes last
        replaced_message_ids=tuple(m.id for m in replaced),
        tokens_before=before,
        tokens_after=before - sum(m.tokens for m in replaced) + summary_tokens,
        reason="provider",
        summarizer=ADK,
        why=f"ADK compacted the events from {start} to {end}",
    )


def _stamp(native: Native | None) -> float | None:
    """The timestamp of the ADK event a message was recorded from."""
    if native is None or native.api != ADK or not isinstance(native.value, dict):
        return None
    stamp = native.value.get("timestamp")
    return float(stamp) if isinstance(stamp, int | float) else None


def _results_message(
    handle: Session, blocks: list[dict[str, Any]], value: dict[str, Any]
) -> Message | None:
    """Function responses as one tool message: each response the output of a tool result,
    the event without them as the message's native."""
    kept = copy.deepcopy(value)
    results = []
    for block in kept["content"]["parts"]:
        response = block.get("function_response")
        if response is None:
            continue  # another part beside the responses: kept only in the event
        call_id = response.get("id")
        if not call_id:
            return None
        body = response.get("response")
        if isinstance(body, dict) and list(body) == ["result"] and isinstance(body["result"], str):
            output, response["response"] = body["result"], RESULT_MARK
        else:
            output, response["response"] = json.dumps(body, ensure_ascii=False), JSON_MARK
        try:
            results.append(handle.tool_result_part(call_id, output, name=response.get("name")))
        except NotInContext:
            return None
    if len({part.call_id for part in results}) != len(results):
        return None
    return Message(role="tool", parts=tuple(results), native=Native(api=ADK, value=kept))


def event_of(message: Message) -> Event:
    """The event a message was recorded from (`message_of`'s inverse)."""
    assert message.native is not None and isinstance(message.native.value, dict)
    value: dict[str, Any] = copy.deepcopy(message.native.value)
    if message.role != "tool":
        value["content"]["parts"] = [_block(part) for part in message.parts]
        return Event.model_validate(value)
    outputs = {p.call_id: p.output for p in message.parts if isinstance(p, ToolResultPart)}
    for block in value.get("content", {}).get("parts", ()):
        response = block.get("function_response")
        if response is None or response.get("id") not in outputs:
            continue
        output = outputs[response["id"]]
        if response.get("response") == RESULT_MARK:
            response["response"] = {"result": output}
        elif response.get("response") == JSON_MARK:
            response["response"] = json.loads(output)
    return Event.model_validate(value)


def _block(part: Part) -> Any:
    """The ADK part a part was recorded from; a redacted one is its text (which says so)."""
    native = getattr(part, "native", None)
    if isinstance(native, Native) and native.api == ADK:
        return native.value
    return {"text": getattr(part, "text", "")}


def _usage(event: Event) -> Usage | None:
    meta = event.usage_metadata
    if meta is None:
        return None
    cached = meta.cached_content_token_count or 0
    return Usage(
        input=max((meta.prompt_token_count or 0) - cached, 0),
        output=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read=cached,
    )


ModelCallback = Callable[[CallbackContext, LlmRequest], Awaitable[LlmResponse | None]]


def context_callback(service: SessionStoreService) -> ModelCallback:
    """A `before_model_callback` that shows the model each function response as the session's
    live context does: a 300 KB output truncated, a pruned one as its placeholder (`{"result":
    <what the context shows>}`). ADK builds the request from the session's events, with its
    own rules (branches, other agents' turns, instructions): only the responses change."""

    async def show_live_context(
        callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        session = callback_context.session
        shown = await service._face.run_sync(
            service._shown_outputs, session.app_name, session.user_id, session.id
        )
        if shown:
            ids = _response_ids(session.events)
            llm_request.contents = [_shown(content, shown, ids) for content in llm_request.contents]
        return None

    return show_live_context


def _response_ids(events: Iterable[Event]) -> list[tuple[str, str | None, Any]]:
    """Every function response of the session's events: (id, name, response), to find the id
    of a response ADK sent the model without it (it strips the ids it made up)."""
    return [
        (response.id, response.name, response.response)
        for event in events
        for response in event.get_function_responses()
        if response.id
    ]


def _shown(
    content: types.Content, shown: dict[str, str], ids: list[tuple[str, str | None, Any]]
) -> types.Content:
    """`content` with the function responses the context does not show in full replaced by
    what it shows (new objects: the session's events are not touched)."""
    if not content.parts or not any(part.function_response for part in content.parts):
        return content
    parts = []
    for part in content.parts:
        response = part.function_response
        call_id = None if response is None else response.id or _matching_id(response, ids)
        if response is None or call_id not in shown:
            parts.append(part)
            continue
        cut = response.model_copy(update={"response": {"result": shown[call_id]}})
        parts.append(part.model_copy(update={"function_response": cut}))
    return content.model_copy(update={"parts": parts})


def _matching_id(
    response: types.FunctionResponse, ids: list[tuple[str, str | None, Any]]
) -> str | None:
    for position, (call_id, name, body) in enumerate(ids):
        if name == response.name and (body is response.response or body == response.response):
            del ids[position]  # two equal responses: each id once, in order
            return call_id
    return None
