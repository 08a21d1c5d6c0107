"""sessionstore: an append-only, event-sourced store for LLM agent sessions.

from store import SessionStore, ToolCall
store = SessionStore()                  # $SESSIONSTORE_URL, else ./sessions.db
s = store.create_session(model="gpt-4o", context_window=128_000, title="fix bug")
s.append_user("the test fails")
s.append_assistant("", tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])
s.append_tool_result("c1", output="...")
messages = s.context().to_openai()

The same, awaited (each call runs in a worker thread; see `store._async`):
async with AsyncSessionStore() as store:
    s = await store.create_session(model="gpt-4o", context_window=128_000)
    await s.append_user("the test fails")
"""

import importlib.metadata as _metadata

from events import ChainReport, CompressionConfig, NewEvent, RecordedEvent, ToolLimits, Usage
from projections import ArtifactTrail, Context, LiveMessage, LiveToolResult, TimelineRow, ToolMap
from store._async import AsyncSession, AsyncSessionStore
from store._confirm import CompactionProposal, CompactionRefused
from store._errors import (
    CompactionError,
    ConcurrencyError,
    DatabaseUnavailable,
    IdempotencyError,
    ImportRefused,
    InvalidArgument,
    InvalidCheckpoint,
    InvalidEvent,
    InvalidReplayPoint,
    InvalidSessionId,
    NotInContext,
    PayloadTooLarge,
    SchemaMismatch,
    SessionExists,
    SessionStoreError,
    UnknownEncoding,
    UnknownEventType,
    UnknownSession,
    UnsupportedSchemaVersion,
)
from store._policies import CompactionPlan, Measure, PrunePlan
from store._rows import SessionInfo
from store._session import ContextCheck, Session
from store._store import SessionStore
from store._summarize import ExtractiveSummarizer, Summarizer, SummaryAnchors
from store._summarize_model import ModelSummarizer, OpenAIChatSummarizer
from store._tool_calls import ToolCall
from store._verify import Checkpoint, SessionHead, VerifyReport

try:
    __version__ = _metadata.version("sessionstore")
except _metadata.PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
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
