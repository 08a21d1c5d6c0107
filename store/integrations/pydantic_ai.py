"""sessionstore under a Pydantic AI `Agent`: `SessionHistory(session)`, or its parts,
`history_processor(session)` and `model_messages(session)`.

```python
from pydantic_ai import Agent
from sessionstore.integrations.pydantic_ai import SessionHistory, model_messages

agent = Agent(model, capabilities=[SessionHistory(session)])
agent.run_sync("Why did the build fail?")
agent.run_sync("And now?", message_history=model_messages(session))  # resume, here or elsewhere
```

`session` is a `Session` or an `AsyncSession` (then `model_messages` is awaited). Pydantic AI
keeps a run's messages in memory and hands them to the model as they are; since v2 a history
processor is the `ProcessHistory` capability (the `history_processors=` argument is gone).
`history_processor(session)` is one: on each model request it stores the messages of the run
the session does not hold yet (a 300 KB tool return is stored whole, as a tool result), runs
`before_llm_call()` (pruning, compaction) and hands the model the session's live context, so
the tool return reaches it truncated in that very request. What it returns becomes the run's
history, so `result.all_messages()` shows the context as the model saw it; `model_messages(
session)` gives every stored message with its original content, for `message_history=` on the
next run or in another process. `SessionHistory(session)` is `ProcessHistory(history_processor(
session))` that also stores the run's last messages (its final answer) when the run ends:
without it, `await processor.save(result.all_messages())` does.

A message counts as stored when its pydantic-ai JSON equals that of a stored message (its
original, or as the live context shows it, or as the processor last handed it over), counted
as a multiset: so a history passed back in, as stored or as a run left it, is not stored twice,
and a message repeated by a later run is new (pydantic-ai stamps every message and part with
its time). The conversions are `sessionstore.integrations._pydantic_ai_messages`'s (`messages_of`,
`model_messages_of`): each message and part is kept verbatim and comes back deep-equal.

A tool return that answers no call waiting for one (a history fragment that starts with the
returns, a second return for one call), which pydantic-ai's own type adapter accepts, is kept
too, verbatim, in its request: not as a tool result (no call of the session waits for it), but
as a part of its request that pydantic-ai is handed back as it came and renders as it would.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, overload

try:
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.pydantic_ai needs Pydantic AI: "
        "pip install 'sessionstore[pydantic-ai]'"
    ) from exc

from sessionstore.aio import AsyncSession, async_session_of
from sessionstore.events import InvalidArgument, Message, ToolCallPart, ToolResultPart, described
from sessionstore.integrations._pydantic_ai_messages import (
    PYDANTIC_AI,
    dump_model_messages,
    messages_of,
    model_message_dicts,
    model_messages_of,
    unanswered,
)
from sessionstore.projections import LiveMessage, LiveToolResult
from sessionstore.session import Session

__all__ = [
    "PYDANTIC_AI",
    "SessionHistory",
    "SessionProcessor",
    "history_processor",
    "messages_of",
    "model_messages",
    "model_messages_of",
]

_R = TypeVar("_R")


class SessionProcessor:
    """A pydantic-ai history processor over one session (make one with `history_processor`).
    It remembers what it last handed the model, which a later call gets back as the run's
    history (with the cut outputs the model was shown)."""

    def __init__(self, session: Session | AsyncSession) -> None:
        if not isinstance(session, Session | AsyncSession):
            raise InvalidArgument(f"expected a Session or AsyncSession, got {described(session)}")
        self.session = session
        self._face = session if isinstance(session, AsyncSession) else async_session_of(session)
        self._handed: Counter[str] = Counter()
        self._lock = threading.Lock()

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """Store what the run added, keep the context in its window, hand the model the
        session's live context as pydantic-ai messages."""
        return await self._in_worker(lambda session: self._process(session, messages))

    async def save(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Store the messages the session does not hold yet (a run's final answer, which no
        model request follows: `save(result.all_messages())`); returns those stored."""
        return await self._in_worker(lambda session: self._store_unstored(session, messages))

    async def _in_worker(self, work: Callable[[Session], _R]) -> _R:
        """`work` on the store's workers, in its turn among the handle's calls: a cancelled
        model request either stored nothing or returns once stored (`AsyncSession.run_sync`)."""
        return await self._face.run_sync(work, self._face.sync)

    def _process(self, session: Session, messages: Sequence[ModelMessage]) -> list[ModelMessage]:
        self._store_unstored(session, messages)
        session.before_llm_call()
        live = model_message_dicts(session.context().messages)
        shown = _validated(live)
        with self._lock:
            self._handed = Counter(_fingerprint(data) for data in dump_model_messages(shown))
        return shown

    def _store_unstored(self, session: Session, given: Sequence[ModelMessage]) -> list[Message]:
        dumped = dump_model_messages(given)
        session.refresh()
        live = session.context()
        original = session.context(restore_pruned=True)
        with self._lock:
            known = self._handed.copy()
        known |= _fingerprints(original.messages)
        known |= _fingerprints(live.messages)
        fresh: list[Message] = []
        for data, model_message in zip(dumped, given, strict=True):
            key = _fingerprint(data)
            if known[key] > 0:
                known[key] -= 1
            else:
                fresh.extend(messages_of(model_message))
        fresh = _answers_kept(live.messages, fresh)
        stored = []
        for message in fresh:
            part = message.parts[0]
            if message.role == "tool" and isinstance(part, ToolResultPart):
                stored.append(
                    session.append_tool_result(
                        part.call_id,
                        part.output,
                        is_error=part.is_error,
                        name=part.name,
                        native=message.native,
                    )
                )
            else:
                stored.append(session.append_message(message))
        return stored


def history_processor(session: Session | AsyncSession) -> SessionProcessor:
    """A history processor (`ProcessHistory(history_processor(session))`) that stores a run's
    messages in `session` and hands the model its live context (see the module docstring)."""
    return SessionProcessor(session)


class SessionHistory(ProcessHistory[Any]):
    """The capability that runs `history_processor(session)` before each model request and
    stores the run's last messages (its final answer) when it ends."""

    def __init__(self, session: Session | AsyncSession) -> None:
        super().__init__(processor=history_processor(session))
        self.session_processor = self.processor
        assert isinstance(self.session_processor, SessionProcessor)

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        assert isinstance(self.session_processor, SessionProcessor)
        await self.session_processor.save(result.all_messages())
        return result


@overload
def model_messages(session: Session) -> list[ModelMessage]: ...
@overload
def model_messages(session: AsyncSession) -> Awaitable[list[ModelMessage]]: ...
def model_messages(
    session: Session | AsyncSession,
) -> list[ModelMessage] | Awaitable[list[ModelMessage]]:
    """The session's messages as pydantic-ai messages, every tool return with its original
    content (however the live context shows it): `message_history=` for the next run.
    Awaitable for an `AsyncSession`."""
    if isinstance(session, AsyncSession):

        async def read() -> list[ModelMessage]:
            context = await session.context(restore_pruned=True)
            return model_messages_of(context.messages)

        return read()
    if not isinstance(session, Session):
        raise InvalidArgument(f"expected a Session or AsyncSession, got {described(session)}")
    return model_messages_of(session.context(restore_pruned=True).messages)


def _validated(data: list[dict[str, Any]]) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_python(data)


def _fingerprints(messages: Sequence[LiveMessage]) -> Counter[str]:
    shown = model_messages_of(messages)
    return Counter(_fingerprint(data) for data in dump_model_messages(shown))


def _fingerprint(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _answers_kept(live: Sequence[LiveMessage], fresh: Sequence[Message]) -> list[Message]:
    """`fresh`, each tool return that answers no call waiting for one (in the session or
    before it in `fresh`) kept as the request part it came as (`unanswered`)."""
    waiting = {
        part.call_id for message in live for part in message.parts if isinstance(part, ToolCallPart)
    } - {
        part.call_id
        for message in live
        for part in message.parts
        if isinstance(part, LiveToolResult)
    }
    kept = []
    for message in fresh:
        result = message.parts[0] if message.role == "tool" else None
        if isinstance(result, ToolResultPart) and result.call_id not in waiting:
            kept.append(unanswered(message))
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                waiting.add(part.call_id)
            elif isinstance(part, ToolResultPart):
                waiting.discard(part.call_id)
        kept.append(message)
    return kept
