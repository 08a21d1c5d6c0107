"""sessionstore as LangChain's chat history and as an agent's context:
`SessionStoreChatMessageHistory(session_id, store)` and `SessionStoreMiddleware(history)`.

```python
from langchain.agents import create_agent
from sessionstore.integrations.langchain import (
    SessionStoreChatMessageHistory,
    SessionStoreMiddleware,
)

history = SessionStoreChatMessageHistory("support-42", store, model="gpt-4o")
agent = create_agent(model, tools, middleware=[SessionStoreMiddleware(history)])
agent.invoke({"messages": [("user", "Why did the build fail?")]})
```

Each LangChain message is one message of the session, and the message itself is kept verbatim
(its `message_to_dict` JSON as `Native(api="langchain")`), so it comes back deep-equal: ids,
`additional_kwargs`, `response_metadata`, `usage_metadata`, content blocks (Anthropic thinking
with its signature). Beside it, sessionstore's own view, which the policies, token counts and
summaries read (`message_of`):
- `HumanMessage` is a user message, `SystemMessage` a system one (their text);
- `AIMessage` is an assistant message: its text, its reasoning (thinking blocks), and each of
  its `tool_calls` as a call whose arguments are the text the model wrote when the message
  holds it (an OpenAI `additional_kwargs` call, a chunk's `tool_call_chunks`), else their JSON;
  `usage_metadata` as the usage (its `input_tokens` count the cache too: they are split);
- `ToolMessage` is the tool result of its `tool_call_id`, appended by `append_tool_result`, so
  truncation, pruning and restore apply to it (the message is kept without its text content);
  one that no pending call waits for, which LangChain's own histories take too, is kept whole
  as a message of its own and comes back as it came (`unanswered`);
- in content lists, an image or file block with a URL or base64 data is a file part, and a
  block of another kind a native part (the view of a block; the block itself is in the message).

`base_message_of` gives the message back. A tool result the model is shown cut (truncated, or
pruned to a placeholder) comes back as its `ToolMessage` carrying the text shown, so the model
sees the cut; the history's `messages` are the originals.

LangChain's agent keeps its messages in the graph's state and sends them to the model as they
are: the session's truncation, pruning and compaction reach the model only through
`SessionStoreMiddleware`, whose `before_model` records the state's messages not stored yet,
keeps the context in its window (`before_llm_call`) and replaces the state's messages with the
live context. With it the session is the agent's memory: a run needs only its new messages.
Messages are known by their ids, as LangChain's `add_messages` reducer knows them, so a message
is stored once however many model calls and runs (or a checkpointer) hand it back, and a
cleared conversation stays cleared. A chain that reads the history itself
(`RunnableWithMessageHistory` reads `messages`, the originals) gets the model's view from
`history.model_messages()`. (LangChain marks `BaseChatMessageHistory` and
`RunnableWithMessageHistory` deprecated in favour of LangGraph's persistence; the middleware
is the way in for agents.)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.langchain needs LangChain: pip install 'sessionstore[langchain]'"
    ) from exc

from sessionstore.aio import AsyncSessionStore
from sessionstore.events import InvalidArgument, described
from sessionstore.integrations._langchain_messages import (
    LANGCHAIN,
    base_message_of,
    message_of,
    record_messages,
    shown_messages,
    state_ids,
)
from sessionstore.integrations._sessions import async_face, retried, session_on_first_use
from sessionstore.session import Session, SessionStore

__all__ = [
    "LANGCHAIN",
    "SessionStoreChatMessageHistory",
    "SessionStoreMiddleware",
    "base_message_of",
    "message_of",
]


class SessionStoreChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history kept in a `SessionStore` (or an `AsyncSessionStore`). The
    sessionstore session is created on first use with `create` (keyword arguments of
    `SessionStore.create_session`), and resumed as it is when it exists.

    `messages` are the live context's messages as they were added (a compaction's summary in
    place of what it replaced, every tool output in full); `clear()` empties the live context by
    a `SessionCleared` event, and replay still shows what was there. The async methods run on the
    store's workers (`AsyncSessionStore.run_sync`), so the event loop never waits on the
    database, and one that is cancelled or times out either wrote nothing or returns."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore | AsyncSessionStore,
        **create: Any,
    ) -> None:
        super().__init__()
        if not isinstance(store, SessionStore | AsyncSessionStore):
            raise InvalidArgument(f"store must be a SessionStore, got {described(store)}")
        self.session_id = session_id
        self._face = async_face(store)
        self._store = self._face.sync
        self._create = create
        self._handle: Session | None = None
        self._lock = threading.RLock()
        self._seen: set[str] = set()  # state ids of messages this history saw live

    @property
    def session(self) -> Session:
        """The sessionstore session underneath (created on first use)."""
        with self._lock:
            if self._handle is None:
                self._handle = session_on_first_use(self._store, self.session_id, self._create)
            return self._handle

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # LangChain: an attribute
        live = self.session.context(restore_pruned=True).messages
        return [base_message_of(message) for message in live]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append the messages in order; all are checked first, so a message that cannot be
        recorded raises `InvalidArgument` before any is written."""
        with self._lock:
            record_messages(self.session, list(messages))

    def clear(self) -> None:
        session = self.session
        retried(session, lambda: session.clear(reason="clear"))

    async def aget_messages(self) -> list[BaseMessage]:
        return await self._face.run_sync(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self._face.run_sync(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await self._face.run_sync(self.clear)

    def model_messages(self) -> list[BaseMessage]:
        """What to send the model now: the context is kept in its window first
        (`before_llm_call`: pruning, then compaction, when it overflows), then the live context
        as the model is shown it (a truncated output cut, a pruned one as its placeholder).
        Every message has an id, unique among them: a message that was added without one gets
        its sessionstore id (what the agent's state keys messages by)."""
        with self._lock:
            session = self.session
            session.before_llm_call()
            return shown_messages(session)

    def _add_unstored(self, given: Sequence[BaseMessage]) -> None:
        """Record the messages of an agent's state that the session does not hold yet.

        A message is known by its id, LangChain's own key (its `add_messages` reducer gives
        every message of the state one): the state holds what `model_messages` returned, under
        the same ids, plus what the run added since. Ids this history has seen in the live
        context stay known after they leave it, so a checkpointer's state that still holds
        messages of a cleared (or popped, reverted) context does not bring them back."""
        with self._lock:
            session = self.session
            known = self._seen | set(state_ids(session.context().messages))
            fresh = []
            for message in given:
                if message.id is None or message.id not in known:
                    fresh.append(message)
                    if message.id is not None:
                        known.add(message.id)
            # known only once recorded: a failed batch can come again
            record_messages(session, fresh)
            self._seen = known


class SessionStoreMiddleware(AgentMiddleware):
    """An agent middleware (`create_agent(..., middleware=[SessionStoreMiddleware(history)])`)
    that hands the model the session's live context.

    Before each model call it records the state's messages the session does not hold yet (a
    tool's 300 KB output is stored whole), keeps the context in its window and replaces the
    state's messages with `history.model_messages()`, so the model sees the output truncated
    and, later, pruned or compacted. After each model call and at the end of the run it records
    what the run added, so a run needs only its new messages: the session is the memory."""

    def __init__(self, history: SessionStoreChatMessageHistory) -> None:
        super().__init__()
        if not isinstance(history, SessionStoreChatMessageHistory):
            raise InvalidArgument(
                f"history must be a SessionStoreChatMessageHistory, got {described(history)}"
            )
        self.history = history

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        return self._managed(state["messages"])

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        return await self.history._face.run_sync(self._managed, list(state["messages"]))

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self.history._add_unstored(state["messages"])

    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        await self.history._face.run_sync(self.history._add_unstored, list(state["messages"]))

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self.history._add_unstored(state["messages"])  # a tool that returned directly

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        await self.history._face.run_sync(self.history._add_unstored, list(state["messages"]))

    def _managed(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        history = self.history
        with history._lock:
            history._add_unstored(messages)
            shown = history.model_messages()
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *shown]}
