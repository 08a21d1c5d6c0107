"""sessionstore as LangGraph's checkpointer: `SessionStoreSaver(store)`.

```python
from langchain.agents import create_agent
from langchain.agents.middleware import after_model, before_model
from sessionstore.integrations.langgraph import SessionStoreSaver

saver = SessionStoreSaver(store, model="gpt-4o", context_window=128_000)
agent = create_agent(
    model,
    tools,
    checkpointer=saver,
    middleware=[before_model(saver.pre_model_hook), after_model(saver.post_model_hook)],
)
agent.invoke({"messages": [("user", "Why did the build fail?")]},
             {"configurable": {"thread_id": "support-42"}})
```

One LangGraph thread is one sessionstore session (`session_id_of(thread_id)`), created on its
first checkpoint. Each `put` is one `RecordAppended` event (a record `langgraph.checkpoint`)
and each `put_writes` another (`langgraph.writes`); LangGraph's own serializer (`serde`,
`JsonPlusSerializer` by default) writes every value, and its typed bytes are kept verbatim
(base64), so a checkpoint comes back exactly as it was put. As LangGraph's own savers do, a
checkpoint stores only the channels that changed (`new_versions`): the others are read from the
records that stored their versions. So the thread's log is its history: `get_state_history` is a
replay of the records, time travel (`checkpoint_id`) reads the checkpoint as it was put, and a
fork (a run from an older checkpoint, in any `checkpoint_ns`) is one more record whose parent is
that checkpoint; nothing is ever overwritten. What LangGraph deletes (`delete_thread`,
`delete_for_runs`, `prune`) is redacted for good (`Session.redact`, `SessionStore.purge`): the
bytes leave the database, the events and their hash chain stay.

The `messages` channel gets sessionstore's context management through the hooks:
`pre_model_hook` (a `create_react_agent(pre_model_hook=...)`, or LangChain's
`before_model(...)` middleware) records the state's messages the session does not hold yet
(each verbatim, as `sessionstore.integrations.langchain` maps them: a tool's 300 KB output is
stored whole), keeps the context in its window (truncation, pruning, compaction) and replaces the
state's messages with the live context, so the model, and the next checkpoint, hold what the
session shows. `post_model_hook` records what the model answered. The context follows LangGraph's
time travel: when a run resumes from an older checkpoint, the state no longer holds what the
session's live context holds, and the context continues in a sessionstore fork taken at the
point where the hook showed the model that state's messages (`SessionStore.fork`); the thread's
session records which fork holds its context now (`context_session`).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import hashlib
import json
import random
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

try:
    from langchain_core.messages import BaseMessage, RemoveMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        PendingWrite,
        get_checkpoint_id,
        get_checkpoint_metadata,
        writes_sort_key,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.config import get_config
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.langgraph needs LangGraph: pip install 'sessionstore[langgraph]'"
    ) from exc

from pydantic import JsonValue

from sessionstore.aio import AsyncSessionStore
from sessionstore.events import (
    ContentRedacted,
    InvalidArgument,
    Native,
    NativePart,
    Record,
    RecordAppended,
    RecordedEvent,
    UnknownSession,
    described,
)
from sessionstore.integrations._langchain_messages import (
    base_message_of,
    record_messages,
    shown_messages,
    state_ids,
)
from sessionstore.integrations._sessions import async_face, retried, session_on_first_use
from sessionstore.session import Session, SessionStore

__all__ = [
    "CHECKPOINT_RECORD",
    "CONTEXT_RECORD",
    "LANGGRAPH",
    "SHOWN_RECORD",
    "THREAD_TAG",
    "WRITES_RECORD",
    "SessionStoreSaver",
    "session_id_of",
]

LANGGRAPH = "langgraph"
"""`Native.api` of what LangGraph handed us."""
THREAD_TAG = "langgraph.thread"
"""Tags each thread's session, so `SessionStore.sessions(tag=THREAD_TAG)` lists the threads."""
CHECKPOINT_RECORD = "langgraph.checkpoint"
"""A `put`: the checkpoint without its values, its metadata, then each new channel value."""
WRITES_RECORD = "langgraph.writes"
"""A `put_writes`: one part per write, each naming its checkpoint, task and index."""
CONTEXT_RECORD = "langgraph.context"
"""The thread's messages context continues in another session (a fork) from here on."""
SHOWN_RECORD = "langgraph.shown"
"""The hook showed the model these state messages (their ids' hash), from this context point:
where a run resumed from an older checkpoint forks the context."""
_REDACTED_API = "sessionstore.redacted"


def session_id_of(thread_id: str) -> str:
    """The sessionstore id of a LangGraph thread: `langgraph:<thread id>`, or, for an id a
    session id cannot hold (long, unprintable), `langgraph#<its hash>`."""
    if thread_id.isprintable() and len(thread_id) <= 100:
        return f"langgraph:{thread_id}"
    return f"langgraph#{hashlib.sha256(thread_id.encode()).hexdigest()}"


# what the thread's log holds, folded into an index: where each value is, not the values


@dataclass
class _Saved:
    """One checkpoint: its own fields in memory (small), its channel values in the log."""

    thread_id: str
    ns: str
    id: str
    parent: str | None
    seq: int
    part_id: str
    checkpoint: JsonValue
    metadata: JsonValue


@dataclass(frozen=True)
class _Located:
    """Where one stored value is: the event and the part holding it."""

    seq: int
    part_id: str
    owner: str
    """The checkpoint the value was stored with."""


@dataclass(frozen=True)
class _Write:
    seq: int
    part_id: str
    task_id: str
    idx: int
    channel: str
    task_path: str


@dataclass(frozen=True)
class _Shown:
    session_id: str
    seq: int
    count: int
    digest: str
    part_id: str


@dataclass
class _Index:
    """A thread's log folded: its checkpoints by namespace and id, where each channel value
    and each write is, and where its messages context is. Built once from the log, then kept up
    with it event by event (`fold`), so a call reads only what is new."""

    seq: int = 0
    thread_id: str | None = None
    checkpoints: dict[str, dict[str, _Saved]] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str], builtins.list[_Located]] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], _Write]] = field(default_factory=dict)
    contexts: builtins.list[tuple[str, str]] = field(default_factory=list)
    """(session id, part id) of each context fork, oldest first: the last is the live one."""
    shown: builtins.list[_Shown] = field(default_factory=list)

    def fold(self, event: RecordedEvent) -> None:
        payload = event.payload
        self.seq = event.seq
        if isinstance(payload, ContentRedacted):
            self._forget(set(payload.part_ids))
            return
        if not isinstance(payload, RecordAppended):
            return
        record = payload.record
        values = [_value(part) for part in record.parts]  # None: a part redacted
        if record.kind == CHECKPOINT_RECORD:
            self._checkpoint(event.seq, record, values)
        elif record.kind == WRITES_RECORD:
            for part, value in zip(record.parts, values, strict=True):
                if value is not None:
                    self._write(event.seq, part.id, _mapping(value))
        elif values[0] is None:
            return
        elif record.kind == CONTEXT_RECORD:
            self.contexts.append((str(_mapping(values[0])["session_id"]), record.parts[0].id))
        elif record.kind == SHOWN_RECORD:
            shown = _mapping(values[0])
            self.shown.append(
                _Shown(
                    str(shown["session_id"]),
                    _integer(shown["seq"]),
                    _integer(shown["count"]),
                    str(shown["digest"]),
                    record.parts[0].id,
                )
            )

    def _checkpoint(
        self, seq: int, record: Record, values: builtins.list[JsonValue | None]
    ) -> None:
        """A `put`: its checkpoint, unless a prune redacted it, and each value it stored that
        is still there (a pruned checkpoint's value that a kept one reads stays)."""
        if values[0] is not None:
            head = _mapping(values[0])
            ns, checkpoint_id = str(head["checkpoint_ns"]), str(head["checkpoint_id"])
            parent = head["parent_checkpoint_id"]
            self.thread_id = str(head["thread_id"])
            self.checkpoints.setdefault(ns, {})[checkpoint_id] = _Saved(
                self.thread_id,
                ns,
                checkpoint_id,
                None if parent is None else str(parent),
                seq,
                record.parts[0].id,
                head["checkpoint"],
                head["metadata"],
            )
        for part, value in zip(record.parts[1:], values[1:], strict=True):
            if value is None:
                continue  # a value no kept checkpoint read, redacted by a prune
            blob = _mapping(value)
            ns, owner = str(blob["checkpoint_ns"]), str(blob["checkpoint_id"])
            key = (ns, str(blob["channel"]), _version_key(blob["version"]))
            self.blobs.setdefault(key, []).append(_Located(seq, part.id, owner))

    def _write(self, seq: int, part_id: str, write: Mapping[str, JsonValue]) -> None:
        key = (str(write["checkpoint_ns"]), str(write["checkpoint_id"]))
        task_id, idx = str(write["task_id"]), _integer(write["idx"])
        stored = self.writes.setdefault(key, {})
        if idx >= 0 and (task_id, idx) in stored:
            return  # as LangGraph's savers: a write sent again is kept once, the first
        channel, path = str(write["channel"]), str(write["task_path"])
        stored[(task_id, idx)] = _Write(seq, part_id, task_id, idx, channel, path)

    def _forget(self, part_ids: set[str]) -> None:
        """Drop what a redaction deleted: the checkpoints, values and writes it named."""
        for saved in self.checkpoints.values():
            for checkpoint_id in [k for k, v in saved.items() if v.part_id in part_ids]:
                del saved[checkpoint_id]
        for key, located in builtins.list(self.blobs.items()):
            kept = [blob for blob in located if blob.part_id not in part_ids]
            if kept:
                self.blobs[key] = kept
            else:
                del self.blobs[key]
        for checkpoint, writes in builtins.list(self.writes.items()):
            for inner in [k for k, v in writes.items() if v.part_id in part_ids]:
                del writes[inner]
            if not writes:
                del self.writes[checkpoint]
        self.contexts = [c for c in self.contexts if c[1] not in part_ids]
        self.shown = [s for s in self.shown if s.part_id not in part_ids]

    def saved(self) -> Iterator[_Saved]:
        for checkpoints in self.checkpoints.values():
            yield from checkpoints.values()

    def ancestors(self, ns: str, checkpoint_id: str) -> Iterator[str]:
        """`checkpoint_id` and its parents, nearest first, as far as the log still holds them."""
        seen: set[str] = set()
        current: str | None = checkpoint_id
        while current is not None and current not in seen:
            seen.add(current)
            yield current
            saved = self.checkpoints.get(ns, {}).get(current)
            current = saved.parent if saved is not None else None

    def blob(self, saved: _Saved, channel: str, version: JsonValue) -> _Located | None:
        """Where the value of `channel` at `version` for `saved` is: stored with it or with an
        ancestor. Versions are unique per channel with this saver's `get_next_version`; with
        another scheme two forks can store the same version, and the ancestor's is the one."""
        located = self.blobs.get((saved.ns, channel, _version_key(version)))
        if not located:
            return None
        if len(located) == 1:
            return located[0]
        owners = {blob.owner: blob for blob in located}
        for checkpoint_id in self.ancestors(saved.ns, saved.id):
            if checkpoint_id in owners:
                return owners[checkpoint_id]
        return located[-1]


def _value(part: object) -> JsonValue | None:
    """A record part's stored value; `None` when it was redacted."""
    if not isinstance(part, NativePart) or part.native.api == _REDACTED_API:
        return None
    return part.native.value


def _mapping(value: JsonValue) -> Mapping[str, JsonValue]:
    if not isinstance(value, dict):
        raise InvalidArgument(f"a LangGraph record part is not an object: {described(value)}")
    return value


def _integer(value: JsonValue) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"a LangGraph record holds {described(value)} for a number")
    return value


def _version_key(version: JsonValue) -> str:
    """A channel version as a key: 1, 1.0 and "1" are three versions."""
    return json.dumps(version)


def _prefix_digests(ids: Sequence[str]) -> builtins.list[str]:
    """The digest of each prefix of `ids` (the empty one first), each from the one before."""
    digests = [""]
    for message_id in ids:
        digests.append(hashlib.sha256(f"{digests[-1]}\n{message_id}".encode()).hexdigest())
    return digests


@dataclass
class _Thread:
    """What the saver holds of one thread: its index, its session handles, its lock."""

    session_id: str
    index: _Index = field(default_factory=_Index)
    lock: threading.RLock = field(default_factory=threading.RLock)
    handle: Session | None = None
    contexts: dict[str, Session] = field(default_factory=dict)


class SessionStoreSaver(BaseCheckpointSaver[str]):
    """LangGraph's `BaseCheckpointSaver` over a `SessionStore` (or an `AsyncSessionStore`):
    sync and async, for `graph.compile(checkpointer=...)`, `create_agent` and
    `create_react_agent`. `create` are keyword arguments of `SessionStore.create_session` for
    each thread's session (`model`, `context_window`, `compression`: what the hooks' context
    management works with); `serde` is LangGraph's serializer (`JsonPlusSerializer` when
    `None`, or an `EncryptedSerializer`).

    The async methods run on the store's workers (`AsyncSessionStore.run_sync`): the event loop
    never waits on the database, and a cancelled call either wrote nothing or returns."""

    def __init__(
        self,
        store: SessionStore | AsyncSessionStore,
        *,
        serde: SerializerProtocol | None = None,
        **create: Any,
    ) -> None:
        if not isinstance(store, SessionStore | AsyncSessionStore):
            raise InvalidArgument(f"store must be a SessionStore, got {described(store)}")
        super().__init__(serde=serde)
        self._face = async_face(store)
        self._store = self._face.sync
        tags = create.pop("tags", ())
        self._create = {"tags": (THREAD_TAG, *tags), **create}
        self._threads: dict[str, _Thread] = {}
        self._guard = threading.Lock()

    # the sessions underneath

    def session(self, thread_id: str) -> Session:
        """The thread's session: its checkpoints' records, and its messages context until a
        run resumed from an older checkpoint (then see `context_session`). `UnknownSession`
        before its first checkpoint."""
        thread = self._thread(thread_id)
        with thread.lock:
            return self._handle(thread, create=False)

    def context_session(self, thread_id: str) -> Session:
        """The session whose live context the hooks show the model for this thread: the
        thread's own, or the fork its context continues in since a run resumed from an older
        checkpoint."""
        thread = self._thread(thread_id)
        with thread.lock:
            self._catch_up(thread, create=False)
            return self._context(thread)

    # BaseCheckpointSaver, sync

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns = _thread_of(config), _ns_of(config)
        thread = self._thread(thread_id)
        with thread.lock:
            if not self._catch_up(thread, create=False):
                return None
            saved = thread.index.checkpoints.get(ns, {})
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id:
                found = saved.get(checkpoint_id)
            else:
                found = saved[max(saved)] if saved else None
            return None if found is None else self._tuple(thread, found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Newest first (by checkpoint id, as LangGraph's savers order them): every checkpoint
        of the thread (of every thread when `config` is `None`), of its `checkpoint_ns` when
        the config names one, matching each `filter` key of the metadata exactly."""
        for thread, saved in self._select(config, filter, before, limit):
            with thread.lock:
                yield self._tuple(thread, saved)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns = _thread_of(config), _ns_of(config)
        kept = checkpoint.copy()
        values: dict[str, Any] = kept.pop("channel_values")  # type: ignore[misc]
        head = {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id"),
            "checkpoint": self._typed(kept),
            "metadata": self._typed(get_checkpoint_metadata(config, metadata)),
        }
        blobs = [
            {
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
                "channel": channel,
                "version": version,
                "value": self._typed(values[channel]) if channel in values else None,
            }
            for channel, version in new_versions.items()
        ]
        thread = self._thread(thread_id)
        with thread.lock:
            self._append(thread, [_record(CHECKPOINT_RECORD, [head, *blobs])])
        return _config_of(thread_id, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Kept as LangGraph's savers keep them: a write sent again under the same task and
        index is kept once (the first), while an error, interrupt or resume replaces the last."""
        thread_id, ns = _thread_of(config), _ns_of(config)
        checkpoint_id = str(config["configurable"]["checkpoint_id"])
        thread = self._thread(thread_id)
        with thread.lock:
            self._catch_up(thread, create=False)
            stored = thread.index.writes.get((ns, checkpoint_id), {})
            parts: builtins.list[Mapping[str, JsonValue]] = []
            for index, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, index)
                if idx >= 0 and (task_id, idx) in stored:
                    continue
                parts.append(
                    {
                        "checkpoint_ns": ns,
                        "checkpoint_id": checkpoint_id,
                        "task_id": task_id,
                        "task_path": task_path,
                        "idx": idx,
                        "channel": channel,
                        "value": self._typed(value),
                    }
                )
            if parts:
                self._append(thread, [_record(WRITES_RECORD, parts)])

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread for good: its session (and every fork its context continued in)
        is purged (`SessionStore.purge`: every body redacted, the events and their hash chain
        kept) and its live context cleared. The thread can be used again: it starts empty."""
        thread = self._thread(str(thread_id))
        with thread.lock:
            if not self._catch_up(thread, create=False):
                return
            for session_id, _ in thread.index.contexts:
                self._purge(session_id)
            self._handle(thread, create=False).clear(reason="LangGraph delete_thread")
            self._purge(thread.session_id)
            thread.contexts.clear()
            self._catch_up(thread, create=False)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Redact every checkpoint whose metadata names one of `run_ids`, with its writes and
        the channel values no other checkpoint reads, in every thread of the store."""
        wanted = {str(run_id) for run_id in run_ids}
        if not wanted:
            return
        for thread in self._all_threads():
            with thread.lock:
                self._catch_up(thread, create=False)
                doomed = [
                    saved
                    for saved in thread.index.saved()
                    if self._metadata(saved).get("run_id") in wanted
                ]
                self._redact(thread, doomed, "LangGraph delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of the source thread, in order, into the target
        thread's session, in one transaction; then the source's live messages context, each
        message whole (a truncated or pruned output as it was given), so the copy's model sees
        what the source's saw, and the copy owes nothing to the source once made."""
        source = self._thread(str(source_thread_id))
        target = self._thread(str(target_thread_id))
        first, second = sorted([source, target], key=lambda t: t.session_id)
        with first.lock, second.lock:
            if not self._catch_up(source, create=False):
                return
            records = self._copies(source, str(target_thread_id))
            if not records:
                return
            live = self._context(source).context(restore_pruned=True).messages
            self._append(target, records)
            record_messages(self._handle(target, create=True), [base_message_of(m) for m in live])

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`"keep_latest"`: keep the newest checkpoint of each namespace of each thread, with
        its writes and the values it reads, and redact the rest; `"delete"`: `delete_thread`.
        (A `DeltaChannel`, beta in LangGraph, rebuilds from the writes of ancestors: keep those
        threads whole.)"""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgument(f"strategy must be 'keep_latest' or 'delete', not {strategy!r}")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            thread = self._thread(str(thread_id))
            with thread.lock:
                if not self._catch_up(thread, create=False):
                    continue
                doomed = []
                for checkpoints in thread.index.checkpoints.values():
                    newest = max(checkpoints, default=None)
                    doomed += [saved for key, saved in checkpoints.items() if key != newest]
                self._redact(thread, doomed, "LangGraph prune")

    def get_next_version(self, current: str | None, channel: None) -> str:
        """`<counter>.<random>`, as LangGraph's own savers make them: increasing, and unique,
        so two forks of one checkpoint never store the same version of a channel."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # BaseCheckpointSaver, async: the same calls on the store's workers

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._face.run_sync(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        selected = await self._face.run_sync(self._select, config, filter, before, limit)
        for thread, saved in selected:
            yield await self._face.run_sync(self._locked_tuple, thread, saved)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._face.run_sync(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._face.run_sync(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._face.run_sync(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._face.run_sync(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._face.run_sync(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._face.run_sync(self.prune, thread_ids, strategy=strategy)

    # the messages channel: sessionstore's context management, as hooks

    def pre_model_hook(self, state: Any, *_: object) -> dict[str, Any]:
        """Before each model call (`create_react_agent(pre_model_hook=saver.pre_model_hook)`,
        or `before_model(saver.pre_model_hook)` in LangChain's `create_agent`): record the
        state's new messages in the thread's context session, keep the context in its window
        and replace the state's messages with the live context as the model is shown it."""
        config = _running_config()
        shown = self._managed(config, builtins.list(state["messages"]), show=True)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *shown]}

    async def apre_model_hook(self, state: Any, *_: object) -> dict[str, Any]:
        """`pre_model_hook` for async runs, on the store's workers."""
        config = _running_config()
        messages = builtins.list(state["messages"])
        shown = await self._face.run_sync(self._managed, config, messages, show=True)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *shown]}

    def post_model_hook(self, state: Any, *_: object) -> None:
        """After a model call (`after_model(...)`, `after_agent(...)`, or a
        `create_react_agent(post_model_hook=...)`): record what the model answered, so the
        session holds the turn before the next run."""
        self._managed(_running_config(), builtins.list(state["messages"]), show=False)

    async def apost_model_hook(self, state: Any, *_: object) -> None:
        """`post_model_hook` for async runs, on the store's workers."""
        config, messages = _running_config(), builtins.list(state["messages"])
        await self._face.run_sync(self._managed, config, messages, show=False)

    # lifecycle

    def close(self) -> None:
        """Let go of what the saver holds (its indexes and session handles); the store is the
        caller's and stays open, and the saver can be used again: it reads each thread anew."""
        with self._guard:
            self._threads.clear()

    def __enter__(self) -> SessionStoreSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> SessionStoreSaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # the work

    def _thread(self, thread_id: str) -> _Thread:
        with self._guard:
            thread = self._threads.get(thread_id)
            if thread is None:
                thread = self._threads[thread_id] = _Thread(session_id_of(thread_id))
            return thread

    def _handle(self, thread: _Thread, *, create: bool) -> Session:
        if thread.handle is None:
            if create:
                create_session = {"title": thread.session_id, **self._create}
                thread.handle = session_on_first_use(self._store, thread.session_id, create_session)
            else:
                thread.handle = self._store.session(thread.session_id)
        return thread.handle

    def _catch_up(self, thread: _Thread, *, create: bool) -> bool:
        """Fold what the log holds past the index into it; whether the thread has a session."""
        try:
            head = self._store.version(thread.session_id)
        except UnknownSession:
            if not create:
                return False
            self._handle(thread, create=True)
            head = self._store.version(thread.session_id)
        if head > thread.index.seq:
            for event in self._store.read(thread.session_id, thread.index.seq + 1, head):
                thread.index.fold(event)
        return True

    def _append(self, thread: _Thread, records: builtins.list[Record]) -> None:
        """Append the records in one transaction after the head, whoever moved it."""
        self._catch_up(thread, create=True)
        handle = self._handle(thread, create=True)
        payloads = [RecordAppended(record=record) for record in records]
        # another process wrote to the thread: after its events
        recorded = retried(handle, lambda: handle.append_events(payloads))
        if recorded[0].seq == thread.index.seq + 1:
            for event in recorded:
                thread.index.fold(event)
        else:
            self._catch_up(thread, create=False)

    def _typed(self, value: Any) -> dict[str, JsonValue]:
        kind, data = self.serde.dumps_typed(value)
        return {"type": kind, "base64": base64.b64encode(data).decode("ascii")}

    def _loaded(self, typed: JsonValue) -> Any:
        stored = _mapping(typed)
        data = base64.b64decode(str(stored["base64"]))
        return self.serde.loads_typed((str(stored["type"]), data))

    def _metadata(self, saved: _Saved) -> dict[str, Any]:
        metadata: dict[str, Any] = self._loaded(saved.metadata)
        return metadata

    def _select(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> builtins.list[tuple[_Thread, _Saved]]:
        """The checkpoints `list` yields, in its order, from the indexes alone."""
        if config is not None:
            threads = [self._thread(_thread_of(config))]
            ns = config["configurable"].get("checkpoint_ns")
            only = get_checkpoint_id(config)
        else:
            threads, ns, only = self._all_threads(), None, None
        cursor = get_checkpoint_id(before) if before is not None else None
        chosen: builtins.list[tuple[_Thread, _Saved]] = []
        for thread in threads:
            with thread.lock:
                if not self._catch_up(thread, create=False):
                    continue
                for saved in thread.index.saved():
                    if ns is not None and saved.ns != ns:
                        continue
                    if (only and saved.id != only) or (cursor and saved.id >= cursor):
                        continue
                    if filter:
                        metadata = self._metadata(saved)
                        if not all(metadata.get(k) == v for k, v in filter.items()):
                            continue
                    chosen.append((thread, saved))
        chosen.sort(key=lambda pair: pair[1].id, reverse=True)
        return chosen if limit is None else chosen[: max(limit, 0)]

    def _all_threads(self) -> builtins.list[_Thread]:
        """Every thread of the store: the sessions tagged as threads (not their forks)."""
        threads = []
        for info in self._store.sessions(tag=THREAD_TAG):
            if info.parent_id is None and info.id.startswith(("langgraph:", "langgraph#")):
                handle = self._store.session(info.id)
                thread = self._thread_of_session(info.id, handle)
                threads.append(thread)
        return threads

    def _thread_of_session(self, session_id: str, handle: Session) -> _Thread:
        with self._guard:
            for thread in self._threads.values():
                if thread.session_id == session_id:
                    return thread
        # a thread this saver has not met: its id is in its checkpoints' records
        probe = _Thread(session_id, handle=handle)
        self._catch_up(probe, create=False)
        thread_id = probe.index.thread_id or session_id.removeprefix("langgraph:")
        with self._guard:
            return self._threads.setdefault(thread_id, probe)

    def _locked_tuple(self, thread: _Thread, saved: _Saved) -> CheckpointTuple:
        with thread.lock:
            return self._tuple(thread, saved)

    def _tuple(self, thread: _Thread, saved: _Saved) -> CheckpointTuple:
        """The checkpoint as it was put: its values read from the records that stored them."""
        index = thread.index
        checkpoint: Checkpoint = self._loaded(saved.checkpoint)
        located = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = index.blob(saved, channel, version)
            if blob is not None:
                located[channel] = blob
        writes = sorted(
            index.writes.get((saved.ns, saved.id), {}).values(),
            key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx),
        )
        seqs = {blob.seq for blob in located.values()} | {write.seq for write in writes}
        parts = self._parts(thread.session_id, seqs)
        values = {}
        for channel, blob in located.items():
            if blob.part_id in parts:  # else redacted since the index was read
                stored = _mapping(parts[blob.part_id])["value"]
                if stored is not None:  # None: a channel emptied at this version
                    values[channel] = self._loaded(stored)
        pending: builtins.list[PendingWrite] = [
            (w.task_id, w.channel, self._loaded(_mapping(parts[w.part_id])["value"]))
            for w in writes
            if w.part_id in parts
        ]
        checkpoint["channel_values"] = values
        parent = (
            _config_of(saved.thread_id, saved.ns, saved.parent)
            if saved.parent is not None
            else None
        )
        return CheckpointTuple(
            config=_config_of(saved.thread_id, saved.ns, saved.id),
            checkpoint=checkpoint,
            metadata=self._loaded(saved.metadata),
            parent_config=parent,
            pending_writes=pending,
        )

    def _parts(self, session_id: str, seqs: set[int]) -> dict[str, JsonValue]:
        """The values of the record parts of events `seqs`, by part id, in record order."""
        values: dict[str, JsonValue] = {}
        for event in self._events(session_id, seqs):
            assert isinstance(event.payload, RecordAppended)
            for part in event.payload.record.parts:
                value = _value(part)
                if value is not None:
                    values[part.id] = value
        return values

    def _events(self, session_id: str, seqs: set[int]) -> builtins.list[RecordedEvent]:
        """The records at `seqs`, in order: one read per run of neighbouring events."""
        events = []
        ordered = sorted(seqs)
        start = 0
        while start < len(ordered):
            end = start
            while end + 1 < len(ordered) and ordered[end + 1] - ordered[end] <= 4:
                end += 1
            for event in self._store.read(session_id, ordered[start], ordered[end]):
                if event.seq in seqs and isinstance(event.payload, RecordAppended):
                    events.append(event)
            start = end + 1
        return events

    def _redact(self, thread: _Thread, doomed: builtins.list[_Saved], reason: str) -> None:
        """Redact the checkpoints `doomed`, their writes, and the values they stored that no
        other checkpoint of the thread reads: one `ContentRedacted` event."""
        if not doomed:
            return
        index = thread.index
        gone = {(saved.ns, saved.id) for saved in doomed}
        read: set[str] = set()
        for saved in index.saved():
            if (saved.ns, saved.id) in gone:
                continue
            checkpoint: Checkpoint = self._loaded(saved.checkpoint)
            for channel, version in checkpoint["channel_versions"].items():
                blob = index.blob(saved, channel, version)
                if blob is not None:
                    read.add(blob.part_id)
        part_ids = [saved.part_id for saved in doomed]
        for (ns, _, _), located in index.blobs.items():
            part_ids += [
                blob.part_id
                for blob in located
                if (ns, blob.owner) in gone and blob.part_id not in read
            ]
        for key in gone:
            part_ids += [write.part_id for write in index.writes.get(key, {}).values()]
        self._handle(thread, create=False).redact(part_ids, reason=reason)
        self._catch_up(thread, create=False)

    def _purge(self, session_id: str) -> None:
        with contextlib.suppress(UnknownSession):  # a fork deleted by hand
            self._store.purge(session_id, reason="LangGraph delete_thread")

    def _copies(self, source: _Thread, target_thread_id: str) -> builtins.list[Record]:
        """The source's checkpoints and writes as new records, in log order, each holding the
        parts the index still holds (what a prune left)."""
        index = source.index
        live: set[str] = {saved.part_id for saved in index.saved()}
        live |= {blob.part_id for located in index.blobs.values() for blob in located}
        live |= {w.part_id for writes in index.writes.values() for w in writes.values()}
        seqs = {saved.seq for saved in index.saved()}
        seqs |= {w.seq for writes in index.writes.values() for w in writes.values()}
        records = []
        for event in self._events(source.session_id, seqs):
            assert isinstance(event.payload, RecordAppended)
            record = event.payload.record
            values = [_mapping(v) for p in record.parts if p.id in live for v in [_value(p)]]
            if record.kind == CHECKPOINT_RECORD and record.parts[0].id in live:
                head = {**values[0], "thread_id": target_thread_id}
                records.append(_record(CHECKPOINT_RECORD, [head, *values[1:]]))
            elif record.kind == WRITES_RECORD and values:
                records.append(_record(WRITES_RECORD, values))
        return records

    # the context the hooks keep

    def _context(self, thread: _Thread) -> Session:
        """The live context session: the last fork the thread's context continued in, or the
        thread's own session."""
        if not thread.index.contexts:
            return self._handle(thread, create=True)
        session_id = thread.index.contexts[-1][0]
        if session_id not in thread.contexts:
            thread.contexts[session_id] = self._store.session(session_id)
        return thread.contexts[session_id]

    def _managed(
        self, config: RunnableConfig, messages: builtins.list[BaseMessage], *, show: bool
    ) -> builtins.list[BaseMessage]:
        thread = self._thread(_thread_of(config))
        with thread.lock:
            self._catch_up(thread, create=True)
            context = self._following(thread, messages)
            known = set(state_ids(context.context().messages))
            fresh = []
            for message in messages:
                if message.id is None or message.id not in known:
                    fresh.append(message)
                    if message.id is not None:
                        known.add(message.id)
            record_messages(context, fresh)
            if not show:
                return []
            context.before_llm_call()
            shown = shown_messages(context)
            point: dict[str, JsonValue] = {
                "session_id": context.id,
                "seq": context.version,
                "count": len(shown),
                "digest": _prefix_digests([str(m.id) for m in shown])[-1],
            }
            self._append(thread, [_record(SHOWN_RECORD, [point])])
            return shown

    def _following(self, thread: _Thread, messages: builtins.list[BaseMessage]) -> Session:
        """The context session for a state holding `messages`: the live one when the state
        holds all of its live context (the run goes on from where the hook last showed it);
        otherwise (a run resumed from an older checkpoint, a state edited by hand) a fork of
        the context at the last point where the hook showed the model this state's first
        messages, recorded as the thread's context from now on. With no such point, the fork
        starts empty and records every message of the state."""
        context = self._context(thread)
        given = [str(m.id) for m in messages if m.id is not None]
        if set(state_ids(context.context().messages)) <= set(given):
            return context
        digests = _prefix_digests(given)
        source, at = thread.session_id, 1
        for shown in reversed(thread.index.shown):
            if shown.count < len(digests) and digests[shown.count] == shown.digest:
                source, at = shown.session_id, shown.seq
                break
        fork = self._store.fork(source, at=at)
        self._append(thread, [_record(CONTEXT_RECORD, [{"session_id": fork.id}])])
        thread.contexts[fork.id] = fork
        return fork


def _record(kind: str, values: builtins.list[Mapping[str, JsonValue]]) -> Record:
    return Record(
        kind=kind,
        parts=tuple(NativePart(native=Native(api=LANGGRAPH, value=dict(v))) for v in values),
    )


def _thread_of(config: RunnableConfig) -> str:
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise InvalidArgument(
            "a LangGraph checkpointer needs a thread: pass "
            '{"configurable": {"thread_id": ...}} in the config'
        )
    return str(configurable["thread_id"])


def _ns_of(config: RunnableConfig) -> str:
    return str(config["configurable"].get("checkpoint_ns") or "")


def _config_of(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _running_config() -> RunnableConfig:
    """The config of the graph step a hook runs in (its thread)."""
    try:
        return get_config()
    except RuntimeError:
        raise InvalidArgument(
            "the hook runs inside a LangGraph graph (a pre_model_hook, a middleware), with a "
            "thread_id in its config"
        ) from None
