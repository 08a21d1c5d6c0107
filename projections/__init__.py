"""Pure folds over a session's events: the live context, its renders (to each API, to a
Markdown transcript, and to an HTML page), the audit timeline, the artifact trail.

No I/O: everything a fold needs (token counts, the text the model was shown, times) was
recorded in the events, so replay gives the same context whatever code replays it.
"""

from sessionstore.projections._artifacts import (
    ArtifactFold,
    ArtifactTrail,
    CommandRun,
    ErrorSeen,
    FileArtifact,
    TodoItem,
    UserRequest,
    artifact_trail,
    is_injected_native,
    is_injected_text,
)
from sessionstore.projections._context import Context, context_of, fold_events
from sessionstore.projections._diff import ContextDiff, OutputChange, diff_contexts
from sessionstore.projections._fold import (
    PROJECTION,
    PROJECTION_VERSION,
    Change,
    ContextFold,
    EventRef,
    PlainMessage,
    PruneMark,
    always_kept,
    plain_message,
)
from sessionstore.projections._live import (
    FILE_TOKENS,
    LiveMessage,
    LiveToolResult,
    ShownMessage,
    estimate_tokens,
    native_text,
    stored_tokens,
)
from sessionstore.projections._outcomes import decisive_lines
from sessionstore.projections._preview import NOTICE, preview
from sessionstore.projections._provider_compaction import (
    compaction_item,
    compaction_text,
    is_provider_compaction,
    is_provider_summary,
)
from sessionstore.projections._render import CONTINUED, INTERRUPTED, api_messages
from sessionstore.projections._render_anthropic import to_anthropic
from sessionstore.projections._render_markdown import history_markdown, markdown_of
from sessionstore.projections._render_openai import to_openai
from sessionstore.projections._render_responses import to_responses
from sessionstore.projections._snapshot import parse_snapshot
from sessionstore.projections._summary import (
    DECISION,
    SUMMARY_MARKER,
    StructuredSummary,
    merge,
    summary_from_trail,
)
from sessionstore.projections._summary_text import (
    NOTES_SHARE,
    parse_summary,
    render_summary,
    requests_tokens,
    shorten,
)
from sessionstore.projections._timeline import TimelineRow, describe, timeline
from sessionstore.projections._tool_map import (
    CLAUDE_CODE,
    CODEX,
    DEFAULT_TOOLS,
    OPENAI_STYLE,
    OPENCODE,
    PI,
    ToolMap,
    ToolSpec,
    intent_of,
)
from sessionstore.projections._view_index import IndexRow, index_page
from sessionstore.projections._view_model import (
    MARK_KINDS,
    CurveMark,
    LiveVersion,
    SessionView,
    mark_kind,
    session_view,
)
from sessionstore.projections._view_page import SessionLink, check_prices, view_page

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "CONTINUED",
    "DECISION",
    "DEFAULT_TOOLS",
    "FILE_TOKENS",
    "INTERRUPTED",
    "MARK_KINDS",
    "NOTES_SHARE",
    "NOTICE",
    "OPENAI_STYLE",
    "OPENCODE",
    "PI",
    "PROJECTION",
    "PROJECTION_VERSION",
    "SUMMARY_MARKER",
    "ArtifactFold",
    "ArtifactTrail",
    "Change",
    "CommandRun",
    "Context",
    "ContextDiff",
    "ContextFold",
    "CurveMark",
    "ErrorSeen",
    "EventRef",
    "FileArtifact",
    "IndexRow",
    "LiveMessage",
    "LiveToolResult",
    "LiveVersion",
    "OutputChange",
    "PlainMessage",
    "PruneMark",
    "SessionLink",
    "SessionView",
    "ShownMessage",
    "StructuredSummary",
    "TimelineRow",
    "TodoItem",
    "ToolMap",
    "ToolSpec",
    "UserRequest",
    "always_kept",
    "api_messages",
    "artifact_trail",
    "check_prices",
    "compaction_item",
    "compaction_text",
    "context_of",
    "decisive_lines",
    "describe",
    "diff_contexts",
    "estimate_tokens",
    "fold_events",
    "history_markdown",
    "index_page",
    "intent_of",
    "is_injected_native",
    "is_injected_text",
    "is_provider_compaction",
    "is_provider_summary",
    "mark_kind",
    "markdown_of",
    "merge",
    "native_text",
    "parse_snapshot",
    "parse_summary",
    "plain_message",
    "preview",
    "render_summary",
    "requests_tokens",
    "session_view",
    "shorten",
    "stored_tokens",
    "summary_from_trail",
    "timeline",
    "to_anthropic",
    "to_openai",
    "to_responses",
    "view_page",
]
