"""What the providers' SDKs return, as sessionstore messages, losslessly.

One module per API: each turns a response (the SDK's own object or its dict) into one assistant
`Message` whose parts keep every block or item verbatim (`sessionstore.events.Native`) beside the
normalised view, and whose `native` keeps the envelope (ids, model, stop reason, raw usage). Pure:
no I/O.
"""

from sessionstore.providers._anthropic import anthropic_message, anthropic_part
from sessionstore.providers._openai_chat import chat_message, tool_call_part
from sessionstore.providers._openai_responses import responses_message

__all__ = [
    "anthropic_message",
    "anthropic_part",
    "chat_message",
    "responses_message",
    "tool_call_part",
]
