"""Truncation of one tool output, decided when it is appended.

The model is shown at most `max_lines` lines and `max_bytes` bytes of UTF-8 (never half a
character), from the head or the tail, and a one-line notice saying how much was cut and how to
get it back. The full output stays in the event next to the shown text.
"""

from __future__ import annotations

from events import Direction, Truncation


def truncate(
    output: str, *, max_lines: int, max_bytes: int, direction: Direction, part_id: str
) -> Truncation | None:
    """The truncated view of `output`, or `None` when it fits both limits."""
    lines = _lines(output)
    total_bytes = len(output.encode("utf-8"))
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return None
    ordered = lines if direction == "head" else lines[::-1]
    kept: list[str] = []
    size = 0
    for line in ordered[:max_lines]:
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
    omitted_lines = len(lines) - len(kept)
    omitted_bytes = total_bytes - len(shown.encode("utf-8"))
    where = "after this" if direction == "head" else "before this"
    notice = (
        f"[{omitted_lines:,} lines ({omitted_bytes:,} bytes) {where} were cut; the full output "
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


def _lines(text: str) -> list[str]:
    """Lines with their newline; a final line without one counts too."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _cut(line: str, max_bytes: int, direction: Direction) -> str:
    """At most `max_bytes` bytes of `line` from its start (head) or end (tail), whole
    characters only: the bytes of a character split by the cut are dropped."""
    data = line.encode("utf-8")
    piece = data[:max_bytes] if direction == "head" else data[-max_bytes:]
    return piece.decode("utf-8", errors="ignore")
