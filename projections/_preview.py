"""The preview a long tool field is cut to (`PartsPreviewed`): one function, used by the fold
that shows it and the plan that sizes it, so both agree to the character.

A tool result's preview is the head of what the model was shown of it, then the notice on a
line of its own. A tool call's preview must still be a JSON object (Anthropic's `tool_use`
takes only an object as `input`, and every API parses arguments as JSON), so it is
`{"_preview": <the head of the arguments text>, "_note": <the notice>}`.
"""

from __future__ import annotations

import json

NOTICE = (
    "[{omitted} characters cut to a preview; the original is kept: restore with part id {part_id}]"
)
"""The notice a `PartsPreviewed` event stores by default."""


def preview(
    text: str, chars: int, notice: str, part_id: str, *, arguments: bool, tail: int = 0
) -> str:
    """What the model is shown of `text` cut to its first `chars` characters, then `notice`
    (none when it is empty: a redacted part's placeholder is shown alone), then, for a tool
    result, its last `tail` characters on lines of their own (arguments take no tail: their
    preview is one JSON string)."""
    head = text[:chars]
    end = text[max(len(text) - tail, len(head)) :] if tail and not arguments else ""
    if not notice:
        return json.dumps({"_preview": head}, ensure_ascii=False) if arguments else head
    omitted = len(text) - len(head) - len(end)
    note = notice.replace("{part_id}", part_id).replace("{omitted}", f"{omitted:,}")
    if arguments:
        return json.dumps({"_preview": head, "_note": note}, ensure_ascii=False)
    shown = head + ("" if head.endswith("\n") or not head else "\n") + note
    return shown + "\n" + end if end else shown
