"""What a message shows from the moment it is appended: a tool result cut to its tool's limits,
a user message cut to its token budget.

Both are decided once, when the part is made, and recorded in it (`Truncation`) next to the
full text, which stays in the log: `Session.restore` shows it again. Every place that makes such
a part (`Session.append_tool_result`, `Session.append_user`, a framework's transcript turned
into messages) calls these, so a part is cut the same way whichever door it came in by.
"""

from __future__ import annotations

from sessionstore.context._policies import usable_window
from sessionstore.context._tokens import count, longest_token
from sessionstore.context._truncate import size_and_lines, truncate
from sessionstore.events import (
    CompressionConfig,
    FilePart,
    Native,
    Part,
    SessionStarted,
    TextPart,
    ToolResultPart,
    check_text,
    new_id,
)


def truncated_result(
    config: CompressionConfig,
    call_id: str,
    name: str | None,
    text: str,
    *,
    is_error: bool = False,
    blocks: tuple[TextPart | FilePart, ...] | None = None,
    native: Native | None = None,
) -> ToolResultPart:
    """The result part of tool `name`'s output `text`, truncated by the tool's limits in
    `config` (`CompressionConfig.limits_for`): its `output` is `text` whole, its `truncation`
    what the model is shown, when the text is over a limit. Its tokens are not counted.

    `UnicodeEncodeError` for a text that is not valid UTF-8 (a lone surrogate): each caller
    names that as a refusal of its own input."""
    max_lines, max_bytes, direction = config.limits_for(name)
    part_id = new_id()
    cut = truncate(
        text,
        max_lines=max_lines,
        max_bytes=max_bytes,
        direction=direction,
        part_id=part_id,
    )
    return ToolResultPart(
        id=part_id,
        call_id=call_id,
        name=name,
        output=text,
        is_error=is_error,
        truncation=cut,
        blocks=blocks,
        native=native,
    )


def shortened_user_text(part: Part, config: CompressionConfig, header: SessionStarted) -> Part:
    """A user text part over `max_user_message_tokens` (scaled to the window) with its
    truncated view: the head of the text that fits, and a notice; the original stays in
    the part and `restore` brings it back. Other parts, and texts that fit, as they are
    (counted later, with the rest).

    Only what the model is shown is tokenised. A token stands for 1 to `longest_token`
    bytes, so a text of at most `limit` bytes fits and one of more than `limit *
    longest_token` bytes does not, whatever it holds: only a text between the two is
    counted whole (at most 1 MB at the default limit) to tell. One over is cut by bytes
    first, and the view alone is counted (tiktoken took 10 to 20 s on 50 MB, minutes on
    one long word); the original's count is then left to `restore`, which shows it."""
    if not isinstance(part, TextPart) or part.truncation is not None:
        return part
    limit = config.budgets(usable_window(header)).max_user_message_tokens
    encoding = header.encoding
    measured = size_and_lines(part.text)  # once: each cut below reads only the head it shows
    if part.tokens is None:
        size = measured[0]
        if size <= limit:
            return part
        if size <= limit * longest_token(encoding):
            part = part.model_copy(update={"tokens": count(part.text, encoding)})
    if part.tokens is not None and part.tokens <= limit:
        return part
    max_bytes = limit * 4  # about four bytes a token; shrunk until the view fits
    while True:
        try:
            cut = truncate(
                part.text,
                max_lines=config.max_lines,
                max_bytes=max_bytes,
                direction="head",
                part_id=part.id,
                noun="message",
                measured=measured,
            )
        except UnicodeEncodeError:  # the refusal an append of the text would make
            check_text(part.text, "text")  # names the offset in the text, not in a line
            raise
        if cut is None:
            return part  # the view would not be shorter
        tokens = count(cut.shown, encoding)
        if tokens <= limit or max_bytes == 1:
            break
        max_bytes = max(1, max_bytes * limit // (tokens + 1))
    truncation = cut.model_copy(update={"output_tokens": part.tokens})
    return part.model_copy(update={"truncation": truncation, "tokens": tokens})
