"""Pure folds over a session's events: the live context, its renders, the audit timeline.

No I/O: everything a fold needs (token counts, the text the model was shown, times) was
recorded in the events, so replay gives the same context whatever code replays it.
"""

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
from projections._render import CONTINUED, INTERRUPTED, api_messages
from projections._render_anthropic import to_anthropic
from projections._render_openai import to_openai
from projections._render_responses import to_responses
from projections._timeline import TimelineRow, describe, timeline

__all__ = [
    "CONTINUED",
    "FILE_TOKENS",
    "INTERRUPTED",
    "PROJECTION",
    "PROJECTION_VERSION",
    "Change",
    "Context",
    "ContextDiff",
    "ContextFold",
    "LiveMessage",
    "LiveToolResult",
    "OutputChange",
    "PruneMark",
    "TimelineRow",
    "api_messages",
    "context_of",
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
