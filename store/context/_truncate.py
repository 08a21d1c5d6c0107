"""Truncation of one tool output (or user message), decided when it is appended.

The model is shown at most `max_lines` lines and `max_bytes` bytes of UTF-8 (never half a
character), from the head or the tail, and a one-line notice saying how much was cut and how to
get it back. The full text stays in the event next to the shown text.

A truncation never makes the text longer: a text just over a limit (51,266 bytes against
51,200) would be shown as its first 51,200 bytes plus a notice, more than the original; it is
then shown whole.
"""

from __future__ import annotations

from sessionstore.events import Direction, Truncation, utf8_size


def truncate(
    output: str,
    *,
    max_lines: int,
    max_bytes: int,
    direction: Direction,
    part_id: str,
    noun: str = "output",
    measured: tuple[int, int] | None = None,
) -> Truncation | None:
    """The truncated view of `output` (`truncated_view`), or `None` when it fits both limits
    or when the view, with its notice, would not be shorter in bytes than `output`: a
    truncation never makes a text longer."""
    measured = measured or size_and_lines(output)
    cut = truncated_view(
        output,
        max_lines=max_lines,
        max_bytes=max_bytes,
        direction=direction,
        part_id=part_id,
        noun=noun,
        measured=measured,
    )
    if cut is None or utf8_size(cut.shown) >= measured[0]:
        return None
    return cut


def size_and_lines(output: str) -> tuple[int, int]:
    """(UTF-8 bytes, lines) of `output`: what a cut says it omitted is counted from them. A
    caller that cuts one text again smaller passes them in, and pays for them once."""
    lines = output.count("\n") + (0 if output.endswith("\n") or not output else 1)
    return utf8_size(output), lines


def truncated_view(
    output: str,
    *,
    max_lines: int,
    max_bytes: int,
    direction: Direction,
    part_id: str,
    noun: str = "output",
    measured: tuple[int, int] | None = None,
) -> Truncation | None:
    """The view of `output` cut to the limits, with its notice, or `None` when it fits both.
    Only the lines that can be shown are split off and encoded, so a 100 MB output costs a
    count of its newlines (`size_and_lines`, or `measured` when the caller has it), not a copy of
    each line, and a 100 MB line is encoded only as far as it can be shown. `noun` names what
    the notice says is kept ("output", "message")."""
    total_bytes, total_lines = measured or size_and_lines(output)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return None
    ordered = _first_lines(output, max_lines, max_bytes, reverse=direction == "tail")
    kept: list[str] = []
    size = 0
    for line in ordered:
        if size + len(line) > max_bytes:  # a byte a character at least: it cannot fit
            break
        line_bytes = len(line.encode("utf-8"))
        if size + line_bytes > max_bytes:
            break
        kept.append(line)
        size += line_bytes
    if not kept:  # one line longer than max_bytes: show the part of it that fits
        kept = [_cut(ordered[0], max_bytes, direction)]
    if direction == "tail":
        kept.reverse()
    shown = "".join(kept)
    omitted_lines = total_lines - len(kept)
    omitted_bytes = total_bytes - len(shown.encode("utf-8"))
    where = "after this" if direction == "head" else "before this"
    notice = (
        f"[{omitted_lines:,} lines ({omitted_bytes:,} bytes) {where} were cut; the full {noun} "
        f"is kept: restore with part id {part_id}]"
    )
    if direction == "head":
        text = shown + ("" if shown.endswith("\n") else "\n") + notice
    else:
        text = notice + "\n" + shown
    return Truncation(
        shown=text,
        direction=direction,
        max_lines=max_lines,
        max_bytes=max_bytes,
        omitted_lines=omitted_lines,
        omitted_bytes=omitted_bytes,
    )


def _first_lines(text: str, max_lines: int, max_bytes: int, *, reverse: bool) -> list[str]:
    """Up to `max_lines` lines (with their newlines) from the start of `text`, or from its
    end in reverse order, stopping once they hold more than `max_bytes` characters (each is
    at least a byte, so no line past that could be shown)."""
    lines: list[str] = []
    chars = 0
    if not reverse:
        start = 0
        while start < len(text) and len(lines) < max_lines and chars <= max_bytes:
            end = text.find("\n", start)
            end = len(text) if end < 0 else end + 1
            lines.append(text[start:end])
            chars += end - start
            start = end
        return lines
    end = len(text)
    while end > 0 and len(lines) < max_lines and chars <= max_bytes:
        start = text.rfind("\n", 0, end - 1) + 1 if end > 1 else 0
        lines.append(text[start:end])
        chars += end - start
        end = start
    return lines


def _cut(line: str, max_bytes: int, direction: Direction) -> str:
    """At most `max_bytes` bytes of `line` from its start (head) or end (tail), whole
    characters only: the bytes of a character split by the cut are dropped."""
    # the bytes kept come from as many characters at most (each is a byte or more)
    if direction == "head":
        piece = line[:max_bytes].encode("utf-8")[:max_bytes]
    else:
        piece = line[-max_bytes:].encode("utf-8")[-max_bytes:]
    return piece.decode("utf-8", errors="ignore")
