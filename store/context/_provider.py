"""What context management must know of a provider's own compaction.

A provider's compaction item (`sessionstore.projections._provider_compaction`) is the summary of
everything before it, and only the provider can read what it holds (OpenAI's is encrypted,
Anthropic's is signed): the next request must send it back unchanged, with nothing the provider
dropped before it. So for the policies and strategies here:
- **nothing before the boundary, and not the item itself, is pruned, dropped or summarized**:
  the fold already took out everything before it (only the system prompt stays), and the
  message holding the item is shown to every plan as pinned, which every plan keeps. Our own
  compactions after it replace only what came after it, and their summary goes after it;
- **token accounting restarts from the provider's figure**: the fold counts from the
  `tokens_after` the compaction recorded (the usage the provider reported after compacting,
  `ContextFold.usage_base`), so `measure` starts there, not from our count of what was
  dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

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
