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

import importlib.metadata as _metadata

from sessionstore.aio import AsyncSession, AsyncSessionStore
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
from sessionstore.log import Checkpoint, SessionHead, VerifyReport
from sessionstore.projections import (
    ArtifactTrail,
    Context,
    LiveMessage,
    LiveToolResult,
    TimelineRow,
    ToolMap,
)
from sessionstore.session import ContextCheck, Session, SessionStore, ToolCall
from sessionstore.storage import SessionInfo

try:
    __version__ = _metadata.version("sessionstore")
except _metadata.PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"

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
