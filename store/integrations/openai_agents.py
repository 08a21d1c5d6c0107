"""sessionstore as the OpenAI Agents SDK's session: `AgentsSession(session_id, store)`.

```python
from agents import Runner, RunConfig
from store.integrations.openai_agents import AgentsSession, context_filter

session = AgentsSession("support-42", store)
await Runner.run(agent, "hi", session=session, run_config=RunConfig(
    call_model_input_filter=context_filter(session)))
```

Each SDK item is one message of the session, and the item itself is kept verbatim, so
`get_items()` returns exactly what `add_items()` was given (the SDK fingerprints its items to
dedupe them on resume: the JSON values must match, not the key order):
- what the model produced (an assistant `message`, `reasoning`, `function_call`, hosted tool
  items) is recorded as `append_openai_response` records a response's output items, each item
  in its part's `native`;
- a user, system or developer message is a text message, the item in the message's `native`;
- a `function_call_output` is the tool result of its call, so truncation, pruning and restore
  apply to it like to any other (the item, without its `output`, in the message's `native`).

The Runner keeps the items of a run in memory and sends them to the model as they are: the
session's truncation, pruning and compaction reach the model only through
`context_filter(session)`, a `call_model_input_filter` that records what the run added and
replaces the model's input with the session's live context (`Context.to_responses()`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from typing import Any

try:
    from agents.memory.session import SessionABC
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "store.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'sessionstore[openai-agents]'"
    ) from exc

from events import OPENAI_RESPONSES, Message, Native, TextPart, ToolResultPart
from projections import LiveMessage, LiveToolResult
from store._async import AsyncSessionStore
from store._errors import InvalidArgument
from store._providers._openai_responses import responses_message
from store._session import Session
from store._store import SessionStore
from store.integrations._sessions import session_on_first_use

INPUT_ROLES = {"user": "user", "system": "system", "developer": "system"}
CALL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


class AgentsSession(SessionABC):
    """An Agents SDK session kept in a `SessionStore` (or an `AsyncSessionStore`). The
    sessionstore session is created on first use with `create` (keyword arguments of
    `SessionStore.create_session`), and resumed as it is when it exists."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore | AsyncSessionStore,
        **create: Any,
    ) -> None:
        self.session_id = session_id
        self.session_settings = None
        self._store = store.sync if isinstance(store, AsyncSessionStore) else store
        self._create = create
        self._handle: Session | None = None
        self._lock = threading.Lock()
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
        items = await asyncio.to_thread(self._items)
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        await asyncio.to_thread(self._add_new, items)

    async def pop_item(self) -> Any | None:
        popped = await asyncio.to_thread(lambda: self.session.pop())
        return None if popped is None else item_of(popped)

    async def clear_session(self) -> None:
        await asyncio.to_thread(lambda: self.session.clear(reason="clear_session"))

    def _items(self) -> list[Any]:
        session = self.session
        session.refresh()
        # every output as it was appended, however the context shows it now
        return [item_of(message) for message in session.context(restore_pruned=True).messages]

    def _add_new(self, items: list[Any]) -> None:
        fresh = []
        for item in map(_plain, items):
            key = _fingerprint(item)
            if self._added_early[key] > 0:
                self._added_early[key] -= 1
            else:
                fresh.append(item)
        self._add(fresh)

    def _add_unstored(self, given: list[Any]) -> None:
        """What the run's input holds beyond the stored items (counted: a repeated message is
        new the second time), stored now and remembered for the Runner's own `add_items`."""
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
            if item.get("type") in CALL_OUTPUTS:
                output = item.get("output")
                verbatim = (
                    item
                    if not isinstance(output, str)
                    else {key: value for key, value in item.items() if key != "output"}
                )
                text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
                envelope = Native(api=OPENAI_RESPONSES, value=verbatim)
                session.append_tool_result(_text(item, "call_id"), text, native=envelope)
            else:
                session.append_message(message_of(item))


def context_filter(session: AgentsSession) -> Any:
    """A `RunConfig(call_model_input_filter=...)` that hands the model the session's live
    context: the items of the run not stored yet are added first (so a tool's 300 KB output is
    stored whole and shown truncated), then the context is kept in its window
    (`before_llm_call`) and rendered for the Responses API."""

    async def keep_in_window(data: CallModelData[Any]) -> ModelInputData:
        def managed() -> list[Any]:
            session._add_unstored(list(data.model_data.input))
            session.session.before_llm_call()
            return session.session.context().to_responses()

        items = await asyncio.to_thread(managed)
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return keep_in_window


def message_of(item: dict[str, Any]) -> Message:
    """One SDK item other than a tool's output as a message, the item kept verbatim (a tool's
    output is a tool result: `AgentsSession._add`)."""
    kind = item.get("type", "message")
    role = item.get("role")
    if kind == "message" and role in INPUT_ROLES:
        text = _content_text(item.get("content"))
        native = Native(api=OPENAI_RESPONSES, value=item)
        return Message(role=INPUT_ROLES[role], parts=(TextPart(text=text),), native=native)
    return responses_message({"output": [item]})


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
    """An item as its JSON dict (the SDK passes dicts, and sometimes its pydantic models)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, dict):
        raise InvalidArgument(f"an Agents SDK item is a dict, not {type(item).__name__}")
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


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"an Agents SDK {item.get('type')} item has no {key!r}")
    return value
