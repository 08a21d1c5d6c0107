"""Pure folds over a session's events: the live context, its renders, the audit timeline, the
artifact trail.

No I/O: everything a fold needs (token counts, the text the model was shown, times) was
recorded in the events, so replay gives the same context whatever code replays it.
"""

from projections._artifacts import (
    ArtifactFold,
    ArtifactTrail,
    CommandRun,
    ErrorSeen,
    FileArtifact,
    TodoItem,
    UserRequest,
    artifact_trail,
)
from projections._context import Context, context_of, fold_events
from projections._diff import ContextDiff, OutputChange, diff_contexts
from projections._fold import PROJECTION, PROJECTION_VERSION, Change, ContextFold, PruneMark
from projections._live import (
    FILE_TOKENS,
    LiveMessage,
    LiveToolResult,
    estimate_tokens,
    native_text,
)
from projections._outcomes import decisive_lines
from projections._render import CONTINUED, INTERRUPTED, api_messages
from projections._render_anthropic import to_anthropic
from projections._render_openai import to_openai
from projections._render_responses import to_responses
from projections._timeline import TimelineRow, describe, timeline
from projections._tool_map import (
    CLAUDE_CODE,
    CODEX,
    DEFAULT_TOOLS,
    OPENAI_STYLE,
    OPENCODE,
    PI,
    ToolMap,
    ToolSpec,
)

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "CONTINUED",
    "DEFAULT_TOOLS",
    "FILE_TOKENS",
    "INTERRUPTED",
    "OPENAI_STYLE",
    "OPENCODE",
    "PI",
    "PROJECTION",
    "PROJECTION_VERSION",
    "ArtifactFold",
    "ArtifactTrail",
    "Change",
    "CommandRun",
    "Context",
    "ContextDiff",
    "ContextFold",
    "ErrorSeen",
    "FileArtifact",
    "LiveMessage",
    "LiveToolResult",
    "OutputChange",
    "PruneMark",
    "TimelineRow",
    "TodoItem",
    "ToolMap",
    "ToolSpec",
    "UserRequest",
    "api_messages",
    "artifact_trail",
    "context_of",
    "decisive_lines",
    "describe",
    "diff_contexts",
    "estimate_tokens",
    "fold_events",
    "native_text",
    "timeline",
    "to_anthropic",
    "to_openai",
    "to_responses",
]
