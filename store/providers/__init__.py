"""What the providers' SDKs return, as sessionstore messages, losslessly.

One module per API: each turns a response (the SDK's own object or its dict) into one assistant
`Message` whose parts keep every block or item verbatim (`sessionstore.events.Native`) beside the
normalised view, and whose `native` keeps the envelope (ids, model, stop reason, raw usage); and
what a response says the provider did to the context itself (its own compaction, Anthropic's
context editing), for the session to record. Pure: no I/O.
"""

from sessionstore.providers._anthropic import anthropic_message, anthropic_part
from sessionstore.providers._compaction import CompactedResponse, reported, split_at_compaction
from sessionstore.providers._context_edits import (
    CLEARED_PLACEHOLDER,
    ClearedByProvider,
    applied_edits,
    cleared_parts,
)
from sessionstore.providers._openai_chat import chat_message, tool_call_part
from sessionstore.providers._openai_responses import responses_message

__all__ = [
    "CLEARED_PLACEHOLDER",
    "ClearedByProvider",
    "CompactedResponse",
    "anthropic_message",
    "anthropic_part",
    "applied_edits",
    "chat_message",
    "cleared_parts",
    "reported",
    "responses_message",
    "split_at_compaction",
    "tool_call_part",
]
