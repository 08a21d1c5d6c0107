"""A response that holds the provider's own compaction, cut where the provider put it.

When the OpenAI Responses API or the Anthropic Messages API compacts a conversation itself
(see `sessionstore.projections._provider_compaction`), its response holds one compaction item
or block, and the next request must send that item back unchanged, then what follows it, and
nothing from before it. So a response that holds one is recorded as up to three pieces:
- `dropped`: what the response said before the item (rare: a compaction happens before the
  model answers), which the provider dropped too;
- `summary`: the item alone, verbatim, as the summary of a `ContextCompacted` that replaces
  every earlier message (its encrypted or signed content byte for byte; the part is the one the
  response parser made, so its `native` is the block as the API sent it). An Anthropic block is
  an assistant turn's content, so that summary is an assistant message; a Responses item is
  an input item of its own, and its summary is a user message, as the Codex importer records
  Codex's compactions;
- `rest`: what the response holds after the item (the answer, the tool calls), with the
  response's id, envelope and usage; `None` when the response is the compaction alone
  (Anthropic's compaction on demand, `pause_after_compaction`), whose summary then keeps the
  envelope.

The newest compaction item of a response is the boundary; an older one in the same response
was dropped with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from sessionstore.events import ANTHROPIC, Message, Usage
from sessionstore.projections import is_provider_compaction


@dataclass(frozen=True, slots=True)
class CompactedResponse:
    """A response cut at its compaction item (see the module)."""

    dropped: Message | None
    summary: Message
    rest: Message | None
    api: str

    @property
    def reported_tokens(self) -> int | None:
        """What the provider reported the compacted context to be: the response's prompt and
        answer after compacting (the usage of a response counts the context the model read,
        which was the compacted one; Anthropic leaves the compaction's own cost out of it and
        reports it under `iterations`). `None` when the response is the compaction alone:
        its usage is the compaction's cost, not the size of what it left."""
        if self.rest is None or self.rest.usage is None:
            return None
        return last_iteration(self.rest.usage) or reported(self.rest.usage)


def reported(usage: Usage) -> int:
    """The context a response's usage describes, prompt and answer: what the fold counts from
    (`ContextFold.usage_base`)."""
    return usage.input + usage.cache_read + usage.cache_write + usage.output


def last_iteration(usage: Usage) -> int | None:
    """The context the last sampling iteration read and wrote, when the usage lists its
    iterations (Anthropic: the top-level counts add up every `message` iteration of a server
    tool loop, and the context is the last one's); `None` without them."""
    for entry in reversed(usage.iterations or ()):
        if isinstance(entry, dict) and entry.get("type") == "message":
            counts = [
                entry.get(key)
                for key in (
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                    "output_tokens",
                )
            ]
            return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))
    return None


def split_at_compaction(message: Message) -> CompactedResponse | None:
    """`message` (a response as `anthropic_message` or `responses_message` made it) cut at its
    newest compaction item; `None` when it holds none."""
    found = [n for n, part in enumerate(message.parts) if is_provider_compaction(part)]
    if not found:
        return None
    at = found[-1]
    item = message.parts[at]
    assert item.native is not None
    api = item.native.api
    before, after = message.parts[:at], message.parts[at + 1 :]
    dropped = Message(role="assistant", parts=before) if before else None
    role = "assistant" if api == ANTHROPIC else "user"
    if after:
        rest = message.model_copy(update={"parts": after})
        summary = Message(role=role, parts=(item,))
        return CompactedResponse(dropped, summary, rest, api)
    usage = message.usage if role == "assistant" else None
    summary = Message(id=message.id, role=role, parts=(item,), usage=usage, native=message.native)
    return CompactedResponse(dropped, summary, None, api)
