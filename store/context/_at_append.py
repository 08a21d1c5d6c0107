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
    Direction,
    FilePart,
    Native,
    Part,
    SessionStarted,
    TextPart,
    ToolResultPart,
    Truncation,
    check_text,
    new_id,
    utf8_size,
)


def truncated_result(
    config: CompressionConfig,
    call_id: str,
    name: str | None,
    text: str,
    *,
    header: SessionStarted,
    is_error: bool = False,
    blocks: tuple[TextPart | FilePart, ...] | None = None,
    native: Native | None = None,
) -> ToolResultPart:
    """The result part of tool `name`'s output `text`, truncated by the tool's limits in
    `config` (`CompressionConfig.limits_for`) and to its share of the session's window
    (`output_ratio` of `header`'s usable window, in tokens): its `output` is `text` whole, its
    `truncation` what the model is shown, when the text is over a limit. When the token
    share decided, the view's count is recorded in `tokens`; otherwise it is not counted.

    The share is what keeps a small window whole: at 32k, three parallel 30 KB reads under
    the byte limit alone took 24,000 tokens of a usable 28,672. As for a user message, only
    the view is ever tokenised (`_within`, `_shrunk`).

    `UnicodeEncodeError` for a text that is not valid UTF-8 (a lone surrogate): each caller
    names that as a refusal of its own input."""
    max_lines, max_bytes, direction = config.limits_for(name)
    part_id = new_id()
    measured = size_and_lines(text)
    cut = truncate(
        text,
        max_lines=max_lines,
        max_bytes=max_bytes,
        direction=direction,
        part_id=part_id,
        measured=measured,
    )
    limit = config.budgets(usable_window(header)).output_tokens
    tokens = None
    if limit is not None:
        view = cut.shown if cut is not None else text
        fits, tokens = _within(view, limit, header.encoding, None if cut else measured[0])
        if not fits:
            cap = min(max_bytes, limit * 4)
            shrunk, tokens = _shrunk(
                text, limit, header.encoding, max_lines, cap, direction, part_id, "output", measured
            )
            cut = shrunk if shrunk is not None else cut
            if shrunk is None:
                tokens = None  # the view would not be shorter: the earlier one stands, uncounted
    return ToolResultPart(
        id=part_id,
        call_id=call_id,
        name=name,
        output=text,
        tokens=tokens if blocks is None else None,  # blocks are counted with the part
        is_error=is_error,
        truncation=cut,
        blocks=blocks,
        native=native,
    )


def shortened_user_text(part: Part, config: CompressionConfig, header: SessionStarted) -> Part:
    """A user text part over `max_user_message_tokens` (scaled to the window) with its
    truncated view: the head of the text that fits, and a notice; the original stays in
    the part and `restore` brings it back. Other parts, and texts that fit, as they are
    (counted later, with the rest)."""
    if not isinstance(part, TextPart) or part.truncation is not None:
        return part
    limit = config.budgets(usable_window(header)).max_user_message_tokens
    measured = size_and_lines(part.text)  # once: each cut below reads only the head it shows
    if part.tokens is None:
        fits, tokens = _within(part.text, limit, header.encoding, measured[0])
        if tokens is not None:
            part = part.model_copy(update={"tokens": tokens})
        if fits:
            return part
    elif part.tokens <= limit:
        return part
    try:
        cut, tokens = _shrunk(
            part.text,
            limit,
            header.encoding,
            config.max_lines,
            limit * 4,
            "head",
            part.id,
            "message",
            measured,
        )
    except UnicodeEncodeError:  # the refusal an append of the text would make
        check_text(part.text, "text")  # names the offset in the text, not in a line
        raise
    if cut is None:
        return part  # the view would not be shorter
    truncation = cut.model_copy(update={"output_tokens": part.tokens})
    return part.model_copy(update={"truncation": truncation, "tokens": tokens})


def _within(text: str, limit: int, encoding: str, size: int | None) -> tuple[bool, int | None]:
    """Whether `text` (of `size` UTF-8 bytes, measured when not given) is at most `limit`
    tokens, and its count when it had to be taken.

    A token stands for 1 to `longest_token` bytes, so a text of at most `limit` bytes fits
    and one of more than `limit * longest_token` bytes does not, whatever it holds: only a
    text between the two is counted whole (at most 1 MB at the default limits) to tell
    (tiktoken took 10 to 20 s on 50 MB, minutes on one long word)."""
    size = utf8_size(text) if size is None else size
    if size <= limit:
        return True, None
    if size > limit * longest_token(encoding):
        return False, None
    tokens = count(text, encoding)
    return tokens <= limit, tokens


def _shrunk(
    text: str,
    limit: int,
    encoding: str,
    max_lines: int,
    max_bytes: int,
    direction: Direction,
    part_id: str,
    noun: str,
    measured: tuple[int, int],
) -> tuple[Truncation | None, int]:
    """`text` cut by bytes (about four a token to start with, never more than `max_bytes`)
    until its view, notice included, is at most `limit` tokens, and the view's count; only
    views are counted. (None, 0) when no view would be shorter than `text`."""
    while True:
        cut = truncate(
            text,
            max_lines=max_lines,
            max_bytes=max_bytes,
            direction=direction,
            part_id=part_id,
            noun=noun,
            measured=measured,
        )
        if cut is None:
            return None, 0
        tokens = count(cut.shown, encoding)
        if tokens <= limit or max_bytes == 1:
            return cut, tokens
        max_bytes = max(1, max_bytes * limit // (tokens + 1))
