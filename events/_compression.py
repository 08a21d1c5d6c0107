"""How a session keeps its context inside the window: every knob in one model.

Stored as a plain object in `SessionStarted.compression` (and replaced by `CompressionChanged`),
so each session carries its own settings and an audit can tell which ones were in force.
Defaults follow the field's practice (OpenCode, pi, neovate-code).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from events._arguments import ArgumentModel

Direction = Literal["head", "tail"]

MAX_ATTEMPTS = 100


class ToolLimits(ArgumentModel):
    """Truncation limits for one tool's outputs (`None` keeps the session's own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_lines: int | None = Field(default=None, gt=0)
    max_bytes: int | None = Field(default=None, gt=0)
    direction: Direction | None = None


class CompressionConfig(ArgumentModel):
    """Truncation, overflow, pruning and compaction settings of one session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # truncation of each tool output, when it is appended
    max_lines: int = Field(default=2000, gt=0)
    max_bytes: int = Field(default=51_200, gt=0)
    direction: Direction = "head"
    tools: dict[str, ToolLimits] = Field(default_factory=dict)

    # overflow: the context overflows past trigger_ratio of (window - output reserve)
    trigger_ratio: float = Field(default=0.8, gt=0, le=1)
    safety_margin: int = Field(default=2_000, ge=0)
    """Tokens added to the stored counts, which leave out per-message framing and tool schemas."""

    # pruning of old tool outputs
    protect_turns: int = Field(default=2, ge=0)
    protect_tokens: int = Field(default=40_000, ge=0)
    minimum_prune: int = Field(default=20_000, ge=0)
    protected_tools: tuple[str, ...] = ("skill", "task")

    # compaction of the head of the conversation
    keep_recent_turns: int = Field(default=2, ge=0)
    keep_recent_tokens: int = Field(default=20_000, ge=0)
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS)
    """Compactions one automatic check may try, each keeping less; bounded, as every attempt
    may pay for a summary and a check must end."""
    cooldown_events: int = Field(default=6, ge=0)
    """After a compaction that still left the context overflowing, automatic compaction waits
    this many events before trying again, instead of summarizing summaries on every call."""
    summary_tokens: int = Field(default=2_000, gt=0)
    """The length asked of the summarizer."""

    auto: bool = True
    """Whether `before_llm_call` / `after_tool_result` prune and compact by themselves."""

    def limits_for(self, tool: str | None) -> tuple[int, int, Direction]:
        """(max_lines, max_bytes, direction) for outputs of `tool`."""
        override = self.tools.get(tool or "", ToolLimits())
        return (
            override.max_lines or self.max_lines,
            override.max_bytes or self.max_bytes,
            override.direction or self.direction,
        )
