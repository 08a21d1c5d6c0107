"""sessionstore: an append-only, event-sourced store for LLM agent sessions.

from sessionstore import SessionStore, ToolCall
store = SessionStore()                  # $SESSIONSTORE_URL, else ./sessions.db
s = store.create_session(model="gpt-4o", context_window=128_000, title="fix bug")
s.append_user("the test fails")
s.append_assistant("", tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])
s.append_tool_result("c1", output="...")
messages = s.context().to_openai()

The same, awaited (each call runs in a worker thread; see `sessionstore.aio._async`):
async with AsyncSessionStore() as store:
    s = await store.create_session(model="gpt-4o", context_window=128_000)
    await s.append_user("the test fails")
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # what type checkers and editors see; at run time `__getattr__` loads it
    from sessionstore.aio import (
        AsyncSession,
        AsyncSessionStore,
    )
    from sessionstore.context import (
        AnthropicCompactSummarizer,
        CompactionPlan,
        CompactionProposal,
        CompactionRefused,
        ExtractiveSummarizer,
        Measure,
        ModelSummarizer,
        OpenAIChatSummarizer,
        OpenAICompactSummarizer,
        PrunePlan,
        Summarizer,
        SummaryAnchors,
    )
    from sessionstore.events import (
        ChainReport,
        CompactionError,
        CompressionConfig,
        ConcurrencyError,
        DatabaseUnavailable,
        IdempotencyError,
        ImportRefused,
        InvalidArgument,
        InvalidCheckpoint,
        InvalidEvent,
        InvalidReplayPoint,
        InvalidSearchQuery,
        InvalidSessionId,
        NewEvent,
        NotInContext,
        PayloadTooLarge,
        RecordedEvent,
        SchemaMismatch,
        SessionExists,
        SessionStoreError,
        ToolLimits,
        UnknownEncoding,
        UnknownEventType,
        UnknownSession,
        UnsupportedSchemaVersion,
        Usage,
    )
    from sessionstore.log import (
        Checkpoint,
        SearchHit,
        SessionHead,
        VerifyReport,
    )
    from sessionstore.projections import (
        ArtifactTrail,
        Context,
        LiveMessage,
        LiveToolResult,
        TimelineRow,
        ToolMap,
    )
    from sessionstore.session import (
        ContextCheck,
        Session,
        SessionStore,
        ToolCall,
    )
    from sessionstore.storage import (
        SessionInfo,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "sessionstore.aio": (
        "AsyncSession",
        "AsyncSessionStore",
    ),
    "sessionstore.context": (
        "AnthropicCompactSummarizer",
        "CompactionPlan",
        "CompactionProposal",
        "CompactionRefused",
        "ExtractiveSummarizer",
        "Measure",
        "ModelSummarizer",
        "OpenAIChatSummarizer",
        "OpenAICompactSummarizer",
        "PrunePlan",
        "Summarizer",
        "SummaryAnchors",
    ),
    "sessionstore.events": (
        "ChainReport",
        "CompactionError",
        "CompressionConfig",
        "ConcurrencyError",
        "DatabaseUnavailable",
        "IdempotencyError",
        "ImportRefused",
        "InvalidArgument",
        "InvalidCheckpoint",
        "InvalidEvent",
        "InvalidReplayPoint",
        "InvalidSearchQuery",
        "InvalidSessionId",
        "NewEvent",
        "NotInContext",
        "PayloadTooLarge",
        "RecordedEvent",
        "SchemaMismatch",
        "SessionExists",
        "SessionStoreError",
        "ToolLimits",
        "UnknownEncoding",
        "UnknownEventType",
        "UnknownSession",
        "UnsupportedSchemaVersion",
        "Usage",
    ),
    "sessionstore.log": (
        "Checkpoint",
        "SearchHit",
        "SessionHead",
        "VerifyReport",
    ),
    "sessionstore.projections": (
        "ArtifactTrail",
        "Context",
        "LiveMessage",
        "LiveToolResult",
        "TimelineRow",
        "ToolMap",
    ),
    "sessionstore.session": (
        "ContextCheck",
        "Session",
        "SessionStore",
        "ToolCall",
    ),
    "sessionstore.storage": ("SessionInfo",),
}
"""Where each public name lives: imported on first use, so `sessionstore --version` or one
light command does not pay for SQLAlchemy, pydantic's models and tiktoken it never touches."""

_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "AnthropicCompactSummarizer",
    "ArtifactTrail",
    "AsyncSession",
    "AsyncSessionStore",
    "ChainReport",
    "Checkpoint",
    "CompactionError",
    "CompactionPlan",
    "CompactionProposal",
    "CompactionRefused",
    "CompressionConfig",
    "ConcurrencyError",
    "Context",
    "ContextCheck",
    "DatabaseUnavailable",
    "ExtractiveSummarizer",
    "IdempotencyError",
    "ImportRefused",
    "InvalidArgument",
    "InvalidCheckpoint",
    "InvalidEvent",
    "InvalidReplayPoint",
    "InvalidSearchQuery",
    "InvalidSessionId",
    "LiveMessage",
    "LiveToolResult",
    "Measure",
    "ModelSummarizer",
    "NewEvent",
    "NotInContext",
    "OpenAIChatSummarizer",
    "OpenAICompactSummarizer",
    "PayloadTooLarge",
    "PrunePlan",
    "RecordedEvent",
    "SchemaMismatch",
    "SearchHit",
    "Session",
    "SessionExists",
    "SessionHead",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
    "Summarizer",
    "SummaryAnchors",
    "TimelineRow",
    "ToolCall",
    "ToolLimits",
    "ToolMap",
    "UnknownEncoding",
    "UnknownEventType",
    "UnknownSession",
    "UnsupportedSchemaVersion",
    "Usage",
    "VerifyReport",
]


def __getattr__(name: str) -> typing.Any:
    """A public name, imported from its home on first use (PEP 562) and kept here after."""
    if name == "__version__":
        value: typing.Any = _version()
    elif name in _HOME_OF:
        value = getattr(importlib.import_module(_HOME_OF[name]), name)
    else:
        raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("sessionstore")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
