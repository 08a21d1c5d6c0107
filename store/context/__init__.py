"""Context management: what the model is shown, kept inside its window without losing the work.

Pure policies (measure, plan a prune, plan a compaction), the strategies that pick what to
shrink, truncation of one output, token counting with offline tiktoken, summarizers, the
confirmation hook for a proposed compaction, observability of each decision, the cuts a part
gets when it is appended (each output to its share of the window), the fit (tool fields cut
to previews, the newest step first, when the rest cannot get the context under the window),
what a provider's own compaction means to the plans, and `WindowKeeper`, which applies them to
a session through a narrow interface (`SessionView`: the fold, an append, the clock, token
counting, the settings and the summarizer).
"""

from sessionstore.context._at_append import shortened_user_text, truncated_result
from sessionstore.context._confirm import (
    CompactionProposal,
    CompactionRefused,
    Confirm,
    confirmed,
    oldest_turns,
    proposal_of,
    turns_to_drop,
)
from sessionstore.context._fit import floor_tokens, plan_fit
from sessionstore.context._observe import append_span, phase, strategy_of
from sessionstore.context._policies import (
    CompactionPlan,
    Measure,
    PrunePlan,
    attempt_limits,
    cooling_down,
    measure,
    plan_compaction,
    plan_prune,
    saves_enough,
)
from sessionstore.context._provider import compacts_everything, planned, widened
from sessionstore.context._strategies import guard_compaction, plan_strategy
from sessionstore.context._summarize import (
    AttributedSummary,
    CallerLoop,
    ExtractiveSummarizer,
    ProviderSummary,
    Summarizer,
    SummaryAnchors,
    accepts_anchors,
    marked_summary,
    run_summarizer,
)
from sessionstore.context._summarize_model import ModelSummarizer, OpenAIChatSummarizer
from sessionstore.context._summarize_provider import (
    AnthropicCompactSummarizer,
    OpenAICompactSummarizer,
)
from sessionstore.context._tokens import (
    count,
    load_encoding,
    longest_token,
    with_tokens,
)
from sessionstore.context._truncate import size_and_lines, truncate
from sessionstore.context._window import ContextCheck, SessionView, WindowKeeper, WindowMemory
from sessionstore.events import DEFAULT_ENCODING

__all__ = [
    "DEFAULT_ENCODING",
    "AnthropicCompactSummarizer",
    "AttributedSummary",
    "CallerLoop",
    "CompactionPlan",
    "CompactionProposal",
    "CompactionRefused",
    "Confirm",
    "ContextCheck",
    "ExtractiveSummarizer",
    "Measure",
    "ModelSummarizer",
    "OpenAIChatSummarizer",
    "OpenAICompactSummarizer",
    "ProviderSummary",
    "PrunePlan",
    "SessionView",
    "Summarizer",
    "SummaryAnchors",
    "WindowKeeper",
    "WindowMemory",
    "accepts_anchors",
    "append_span",
    "attempt_limits",
    "compacts_everything",
    "confirmed",
    "cooling_down",
    "count",
    "floor_tokens",
    "guard_compaction",
    "load_encoding",
    "longest_token",
    "marked_summary",
    "measure",
    "oldest_turns",
    "phase",
    "plan_compaction",
    "plan_fit",
    "plan_prune",
    "plan_strategy",
    "planned",
    "proposal_of",
    "run_summarizer",
    "saves_enough",
    "shortened_user_text",
    "size_and_lines",
    "strategy_of",
    "truncate",
    "truncated_result",
    "turns_to_drop",
    "widened",
    "with_tokens",
]
