"""What a message looks like once some of its content is redacted: each redacted part keeps its
id, kind, call id and token counts, and says `[redacted: <reason>]` wherever it held content.

The same placeholder is what reading a message whose bodies were deleted gives back
(`sessionstore.events._bodies.join_bodies` with the placeholder for each deleted digest), so a live
context folded before the redaction and a replay after it show the same thing.
"""

from __future__ import annotations

from sessionstore.events._messages import (
    FilePart,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

REDACTED_API = "sessionstore.redacted"


def redacted(message: Message, part_ids: frozenset[str], placeholder: str) -> Message:
    """`message` with the content of the parts in `part_ids` replaced by `placeholder`."""
    if not any(part.id in part_ids for part in message.parts):
        return message
    parts = tuple(
        _redacted(part, placeholder) if part.id in part_ids else part for part in message.parts
    )
    update: dict[str, object] = {"parts": parts}
    if message.native is not None:  # the envelope's body goes with any of its parts
        update["native"] = Native(api=REDACTED_API, value=placeholder)
    return message.model_copy(update=update)


def _redacted(part: Part, placeholder: str) -> Part:
    update: dict[str, object] = {}
    if isinstance(part, TextPart | ReasoningPart):
        update["text"] = placeholder if part.text else part.text
        if isinstance(part, TextPart) and part.truncation is not None:  # its view too
            update["truncation"] = part.truncation.model_copy(update={"shown": placeholder})
    elif isinstance(part, ToolCallPart):
        update["arguments"] = placeholder
    elif isinstance(part, ToolResultPart):
        if part.output:
            update["output"] = placeholder
        if part.truncation is not None:
            update["truncation"] = part.truncation.model_copy(update={"shown": placeholder})
        if part.blocks is not None:
            update["blocks"] = tuple(_redacted(block, placeholder) for block in part.blocks)
    elif isinstance(part, FilePart):  # its content, where it is, and what it is called
        for name in ("data", "url", "filename"):
            if getattr(part, name):
                update[name] = placeholder
    elif isinstance(part, NativePart) and part.text:  # the stand-in other renders show
        update["text"] = placeholder
    if getattr(part, "native", None) is not None:
        update["native"] = Native(api=REDACTED_API, value=placeholder)
    assert not isinstance(part, NativePart) or "native" in update
    return part.model_copy(update=update)
