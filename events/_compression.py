"""How a session keeps its context inside the window: every knob in one model.

Stored as a plain object in `SessionStarted.compression` (and replaced by `CompressionChanged`),
so each session carries its own settings and an audit can tell which ones were in force.
Defaults follow the field's practice (OpenCode, pi, neovate-code, Anthropic's context editing).

Budgets scale with the usable window (`context_window - output_reserve`): fixed budgets made for
a 128k window (protect 40k tokens of output, prune at least 20k) are larger than a whole 32k
window, so pruning never happened there and everything fell to compaction. Each budget is a
fraction of the usable window, capped at its absolute field (`Budgets`, `budgets(usable)`);
without a known window the absolute values apply. With the defaults and the default output
reserve (4,096), in tokens (`protect_tokens`, `minimum_prune`, `keep_recent_tokens`,
`max_user_message_tokens`, `safety_margin`, and one tool output's share, `output_ratio`, in
force; an output is also held to 2,000 lines and 51,200 bytes, about 13,000 tokens):

| window | usable | limit | protect | min. prune | keep recent | user message | margin | output |
|---|---|---|---|---|---|---|---|---|
| 8,192 | 4,096 | 3,276 | 1,024 | 409 | 614 | 1,024 | 204 | 409 |
| 32,768 | 28,672 | 22,937 | 7,168 | 2,867 | 4,300 | 7,168 | 1,433 | 2,867 |
| 65,536 | 61,440 | 49,152 | 15,360 | 6,144 | 9,216 | 8,000 | 2,000 | 6,144 |
| 128,000 | 123,904 | 99,123 | 30,976 | 12,390 | 18,585 | 8,000 | 2,000 | 12,390 |
| 200,000 | 195,904 | 156,723 | 40,000 | 19,590 | 20,000 | 8,000 | 2,000 | 19,590 |

Only fields with defaults are ever added, so every config stored by an older version still
parses (the model forbids unknown fields, not missing ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from sessionstore.events._arguments import ArgumentModel

Direction = Literal["head", "tail"]
Strategy = Literal[
    "incremental",
    "sliding_window",
    "importance",
    "adaptive",
    "selective",
    "tool_blocks",
    "key_events",
]
"""How an automatic check gets an overflowing context back under the limit
(`sessionstore.context`):
`incremental` prunes old outputs, then folds the head into the merged summary (the default);
`sliding_window` keeps the system prompt, pinned messages and the newest messages; `importance`
drops the lowest-scored blocks first; `adaptive` picks by pressure: below
`adaptive_drop_ratio` of the usable window long fields of older tool blocks are cut to
previews, then the incremental path runs (a prune, then the summary), above it the previews
and an importance drop come first; `selective` compacts by item type, following the
session's `selective` rules lowest priority first (by default: tool results beyond the newest
5 pruned, 10; skill prompts dropped, 20; assistant steps beyond the newest 5, 30; skill
metadata dropped, 40; user messages beyond the newest 5, 50; summaries, 80, and the system
prompt and memory, 100, never), and only when that cannot get under the limit does a summary
run; `tool_blocks` keeps the newest `tool_blocks_keep` tool blocks (an assistant message, its
calls and all their results) and drops older ones whole, and inside the kept ones cuts old long
fields to restorable previews; `key_events` keeps the blocks that carry user requests,
decisions, errors and file changes and summarizes the rest where they were."""

MAX_ATTEMPTS = 100


class ToolLimits(ArgumentModel):
    """Truncation limits for one tool's outputs (`None` keeps the session's own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_lines: int | None = Field(default=None, gt=0)
    max_bytes: int | None = Field(default=None, gt=0)
    direction: Direction | None = None


SelectiveKind = Literal[
    "tool_results", "skill_prompts", "assistant", "skill_metadata", "user", "summaries", "system"
]
"""The item types `selective` tells apart (`selective_kind` of
`sessionstore.context` sorts blocks):

- `tool_results`: tool outputs, pruned in place (a placeholder, the original restorable), as a
  prune does; older turns' reasoning is cleared with them. The call stays, so this is the one
  kind that leaves nothing out of the conversation's shape.
- `skill_prompts`: what loads a skill's instructions: a block whose assistant message calls a
  skill tool (`SKILL_TOOLS`, with its result), or an injected user message carrying the
  skill's body (Codex's and neovate-code's `<skill>` block, Claude Code's and neovate-code's
  "Base directory for this skill:" meta message).
- `skill_metadata`: the list of skills the agent may load (each one's name and description:
  neovate-code's `SkillMetadata`, shown as `<available_skills>`), when it reaches the model
  as an injected user message (Claude Code's `<system-reminder>` naming the skills available
  to the Skill tool, Codex's `<skills_instructions>`). Listed in the system prompt, it is the
  system prompt's.
- `assistant`: an assistant step (the message with its tool calls and all their results).
- `user`: a user message (the user's own, or another injected one).
- `summaries`: compaction summaries and the markers of earlier drops.
- `system`: the system prompt and pinned messages (the session's memory)."""

SelectiveAction = Literal["truncate", "drop", "never"]
"""`truncate`: the newest `keep` of the kind stay, older ones leave; `drop`: all of the kind
may leave; `never`: none leaves by this rule."""


class SelectiveRule(ArgumentModel):
    """How the `selective` strategy treats one kind of item, and when (lower `priority`
    first). What leaves: tool results are pruned to placeholders, every other kind leaves as
    whole blocks (a call never loses its result).

    `keep` is the newest items a `truncate` keeps; `None` (the default) takes the session's
    `selective_keep`, so configs stored before these rules existed, and a later
    `configure(selective_keep=...)`, keep their meaning.

    Whatever the rules say, some items never leave: the system prompt and pinned messages,
    the current tool loop's thinking with the request that started it, the newest block (the
    step the agent is on) and the results of the newest assistant message's calls. A `system`
    rule other than `never` therefore changes nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SelectiveKind
    action: SelectiveAction
    keep: int | None = Field(default=None, ge=0)
    priority: int


DEFAULT_SELECTIVE = (
    SelectiveRule(kind="tool_results", action="truncate", priority=10),
    SelectiveRule(kind="skill_prompts", action="drop", priority=20),
    SelectiveRule(kind="assistant", action="truncate", priority=30),
    SelectiveRule(kind="skill_metadata", action="drop", priority=40),
    SelectiveRule(kind="user", action="truncate", priority=50),
    SelectiveRule(kind="summaries", action="never", priority=80),
    SelectiveRule(kind="system", action="never", priority=100),
)
"""The default order, after neovate-code's selective stage: what is cheapest to lose goes first
(tool results are cut, system prompts never leave)."""


class CompressionConfig(ArgumentModel):
    """Truncation, overflow, pruning and compaction settings of one session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # truncation of each tool output, when it is appended
    max_lines: int = Field(default=2000, gt=0)
    max_bytes: int = Field(default=51_200, gt=0)
    direction: Direction = "head"
    tools: dict[str, ToolLimits] = Field(default_factory=dict)
    output_ratio: float = Field(default=0.1, gt=0, le=1)
    """The share of the usable window one tool output is shown with, in tokens, under the
    line and byte limits above (and a tool's own): 51,200 bytes is about 13,000 tokens, half
    of a 32k window, so three parallel reads of 30 KB filled it. No token cap when the window
    is unknown."""

    # overflow: the context overflows past trigger_ratio of (window - output reserve)
    trigger_ratio: float = Field(default=0.8, gt=0, le=1)
    safety_margin: int = Field(default=2_000, ge=0)
    """Cap on the tokens added to the stored counts, which leave out per-message framing and
    tool schemas (see `safety_margin_ratio`); unused once the provider reports usage."""
    safety_margin_ratio: float = Field(default=0.05, ge=0, le=1)
    """2,000 tokens were half of an 8k window's usable part: the margin scales too."""

    # pruning of old tool outputs (and of older turns' reasoning)
    protect_turns: int = Field(default=0, ge=0)
    """User turns whose outputs are all kept. 0 by default: an agentic turn (one prompt, then
    fifty tool calls) is one turn, and protecting it whole meant it could never be pruned;
    `keep_tool_results` protects the newest outputs instead, whatever turn they are in."""
    keep_tool_results: int = Field(default=5, ge=0)
    """The newest tool outputs kept (within `protect_tokens`), counted by tool use, inside the
    current turn too; the results of the newest assistant message's calls are always kept.
    Five: an agent's next step reads what its last few calls returned (the file read, the
    edit, the test run that checks it, a search), Anthropic's `clear_tool_uses` keeps three by
    default, and parallel calls of one step are kept apart from this count."""
    protect_tokens: int = Field(default=40_000, ge=0)
    """Cap on the tokens of output the kept results may hold (see `protect_ratio`)."""
    protect_ratio: float = Field(default=0.25, ge=0, le=1)
    minimum_prune: int = Field(default=20_000, ge=0)
    """Cap on the tokens a prune must free, unless it alone gets the context under the limit:
    each prune changes the prompt's prefix (a cache miss), so small ones are not worth it."""
    minimum_prune_ratio: float = Field(default=0.1, ge=0, le=1)
    protected_tools: tuple[str, ...] = ("skill", "task")

    # compaction of the head of the conversation
    keep_recent_turns: int = Field(default=2, ge=0)
    keep_recent_tokens: int = Field(default=20_000, ge=0)
    """Cap on the tokens compaction keeps at the end (see `keep_recent_ratio`)."""
    keep_recent_ratio: float = Field(default=0.15, ge=0, le=1)
    minimum_compaction_saving: float = Field(default=0.2, ge=0, lt=1)
    """A compaction whose summary saves less than this fraction of the tokens it replaces is not
    appended (2,480 tokens replaced by a 2,445-token summary helps nothing and loses detail)."""
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS)
    """Compactions one automatic check may try, each keeping less; bounded, as every attempt
    may pay for a summary and a check must end."""
    cooldown_events: int = Field(default=6, ge=0)
    """After a compaction that still left the context overflowing, automatic compaction waits
    this many events before trying again, instead of summarizing summaries on every call."""
    summary_tokens: int = Field(default=2_000, gt=0)
    """The length asked of the summarizer."""

    # user messages
    max_user_message_tokens: int = Field(default=8_000, gt=0)
    """Cap on the tokens a user message's text is shown with (see `user_message_ratio`): a
    longer one (a pasted `find .` listing) is shown truncated, head kept, its original in the
    event and restorable like a tool output."""
    user_message_ratio: float = Field(default=0.25, gt=0, le=1)

    # the strategy an automatic check uses (see `Strategy`)
    strategy: Strategy = "incremental"
    window_messages: int = Field(default=40, gt=0)
    """`sliding_window`: the newest messages kept (whole tool blocks, so a few more may stay)."""
    window_tokens: int | None = Field(default=None, gt=0)
    """`sliding_window`: a cap on the tokens the kept newest messages may hold, if set."""
    window_marker: bool = True
    """`sliding_window` and `importance`: a one-line marker where messages left, saying how
    many and how to see them again. Without it they leave silently (still in the log)."""
    strategy_target_ratio: float = Field(default=0.6, gt=0, le=1)
    """`sliding_window` and `importance` drop until the context is under this fraction of the
    usable window, so the next calls do not trigger again at once (each drop is a cache miss)."""

    tool_blocks_keep: int = Field(default=20, ge=0)
    """`tool_blocks`: the newest tool blocks kept; older ones leave whole."""
    preview_whole: int = Field(default=3, ge=0)
    """`tool_blocks` and `adaptive`: the newest tool blocks whose fields are never cut to a
    preview (the agent's next step reads them)."""
    preview_arguments_over: int = Field(default=500, gt=0)
    """A tool call's arguments longer than this many tokens are cut to a preview..."""
    preview_arguments_to: int = Field(default=200, gt=0)
    """...of this many tokens (the notice comes on top)."""
    preview_results_over: int = Field(default=600, gt=0)
    """A tool result longer than this many tokens is cut to a preview..."""
    preview_results_to: int = Field(default=200, gt=0)
    """...of this many tokens (the notice comes on top)."""

    adaptive_drop_ratio: float = Field(default=0.9, gt=0, le=1)
    """`adaptive`: the fraction of the usable window past which blocks are dropped by importance
    before any prune or summary; below it the light incremental path runs alone."""

    selective_keep: int = Field(default=5, ge=0)
    """`selective`: the newest items a `truncate` rule keeps when it names no `keep`."""
    selective: tuple[SelectiveRule, ...] = DEFAULT_SELECTIVE
    """`selective`: one rule per item kind (see `SelectiveRule`), walked lowest priority first
    (a tie in the order given); a kind without a rule never leaves by this strategy."""

    auto: bool = True
    """Whether `before_llm_call` / `after_tool_result` prune and compact by themselves."""

    @field_validator("selective")
    @classmethod
    def _one_rule_per_kind(cls, rules: tuple[SelectiveRule, ...]) -> tuple[SelectiveRule, ...]:
        seen: set[str] = set()
        for rule in rules:
            if rule.kind in seen:
                raise ValueError(f"one rule per kind: {rule.kind!r} has two")
            seen.add(rule.kind)
        return rules

    @field_validator("preview_arguments_to", "preview_results_to")
    @classmethod
    def _previews_shrink(cls, to: int, info: ValidationInfo) -> int:
        """A preview is shorter than what it cuts: otherwise a preview could be cut again."""
        over_field = str(info.field_name).replace("_to", "_over")
        over = info.data.get(over_field)
        if isinstance(over, int) and to >= over:
            raise ValueError(f"must be less than {over_field} ({over}), got {to}")
        return to

    def selective_rules(self) -> tuple[SelectiveRule, ...]:
        """The `selective` rules in the order they run (by priority, a tie in the order
        given), each `keep` resolved (`None` takes `selective_keep`)."""
        ordered = sorted(self.selective, key=lambda rule: rule.priority)
        return tuple(
            rule if rule.keep is not None else rule.model_copy(update={"keep": self.selective_keep})
            for rule in ordered
        )

    def budgets(self, usable: int | None) -> Budgets:
        """The token budgets in force for a usable window of `usable` tokens (window minus
        output reserve): each ratio of it, capped at its absolute field; the absolute values
        when the window is unknown."""

        def scaled(cap: int, ratio: float) -> int:
            return cap if usable is None else min(cap, int(usable * ratio))

        return Budgets(
            protect_tokens=scaled(self.protect_tokens, self.protect_ratio),
            minimum_prune=scaled(self.minimum_prune, self.minimum_prune_ratio),
            keep_recent_tokens=scaled(self.keep_recent_tokens, self.keep_recent_ratio),
            max_user_message_tokens=max(
                scaled(self.max_user_message_tokens, self.user_message_ratio), 1
            ),
            safety_margin=scaled(self.safety_margin, self.safety_margin_ratio),
            output_tokens=None if usable is None else max(int(usable * self.output_ratio), 1),
        )

    def limits_for(self, tool: str | None) -> tuple[int, int, Direction]:
        """(max_lines, max_bytes, direction) for outputs of `tool`."""
        override = self.tools.get(tool or "", ToolLimits())
        return (
            override.max_lines or self.max_lines,
            override.max_bytes or self.max_bytes,
            override.direction or self.direction,
        )


@dataclass(frozen=True, slots=True)
class Budgets:
    """The token budgets a session's policies use, for its window (`CompressionConfig.budgets`)."""

    protect_tokens: int
    minimum_prune: int
    keep_recent_tokens: int
    max_user_message_tokens: int
    safety_margin: int
    output_tokens: int | None = None
    """The most tokens one tool output is shown with (`output_ratio` of the usable window);
    `None` when the window is unknown (the line and byte limits alone apply)."""
