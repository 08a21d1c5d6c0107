"""What context management must know of a provider's own compaction.

A provider's compaction item (`sessionstore.projections._provider_compaction`) is the summary of
everything before it, and only the provider can read what it holds (OpenAI's is encrypted,
Anthropic's is signed): the next request must send it back unchanged, with nothing the provider
dropped before it. So for the policies and strategies here:
- **nothing before the boundary, and not the item itself, is pruned, dropped or summarized**:
  the fold already took out everything before it (only the system prompt stays), and the
  message holding the item is shown to every plan as pinned, which every plan keeps. Our own
  compactions after it replace only what came after it, and their summary goes after it;
- **a summarizer that asks a provider for its compaction item** (`compacts_everything`) has
  the plan widened to everything before the boundary but the system prompt, pins included:
  the item stands for all of it, and nothing of it may be sent before the item;
- **token accounting restarts from the provider's figure**: the fold counts from the
  `tokens_after` the compaction recorded (the usage the provider reported after compacting,
  `ContextFold.usage_base`), so `measure` starts there, not from our count of what was
  dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sessionstore.context._policies import CompactionPlan
from sessionstore.projections import LiveMessage, is_provider_compaction


def planned(messages: Sequence[LiveMessage]) -> tuple[LiveMessage, ...]:
    """The live messages as the plans see them: a message holding a provider's compaction item
    is pinned, so no plan replaces, prunes or drops it."""
    return tuple(
        message.model_copy(update={"pinned": True})
        if not message.pinned and any(is_provider_compaction(p) for p in message.parts)
        else message
        for message in messages
    )


def compacts_everything(summarizer: Callable[..., object]) -> bool:
    """Whether `summarizer` asks a provider for its own compaction item
    (`compacts_everything_before = True`): the provider's item stands for everything before
    it, so the compaction must replace that, pins included."""
    return getattr(summarizer, "compacts_everything_before", False) is True


def widened(plan: CompactionPlan, messages: Sequence[LiveMessage]) -> CompactionPlan:
    """`plan` replacing every message before its boundary but the system prompt: what a
    provider's compaction item stands for (the provider is shown them all, and the next request
    may send nothing of them before the item)."""
    ids = [m.id for m in messages]
    boundary = (
        ids.index(plan.first_kept_message_id) if plan.first_kept_message_id in ids else len(ids)
    )
    replaced = tuple(m for m in messages[:boundary] if m.role != "system")
    return CompactionPlan(plan.first_kept_message_id, replaced)
