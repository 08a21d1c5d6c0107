"""Truncation of one tool output: exact shown text, counts, UTF-8 safety, and never a longer
text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.context._truncate import truncate, truncated_view
from sessionstore.events import Direction

TEN_LINES = "".join(f"line {i}\n" for i in range(10))  # 70 bytes


def notice(lines: int, size: int, where: str) -> str:
    return (
        f"[{lines:,} lines ({size:,} bytes) {where} this were cut; the full output is kept: "
        "restore with part id p1]"
    )


def test_an_output_within_both_limits_is_not_truncated() -> None:
    assert (
        truncated_view(TEN_LINES, max_lines=10, max_bytes=70, direction="head", part_id="p1")
        is None
    )


def test_head_keeps_the_first_lines_then_the_notice() -> None:
    cut = truncated_view(TEN_LINES, max_lines=3, max_bytes=1000, direction="head", part_id="p1")
    assert cut is not None
    assert cut.shown == "line 0\nline 1\nline 2\n" + notice(7, 49, "after")
    assert (cut.omitted_lines, cut.omitted_bytes) == (7, 49)
    assert (cut.max_lines, cut.max_bytes, cut.direction) == (3, 1000, "head")


def test_tail_keeps_the_last_lines_after_the_notice() -> None:
    cut = truncated_view(TEN_LINES, max_lines=2, max_bytes=1000, direction="tail", part_id="p1")
    assert cut is not None
    assert cut.shown == notice(8, 56, "before") + "\nline 8\nline 9\n"


def test_the_byte_limit_keeps_whole_lines() -> None:
    cut = truncated_view(TEN_LINES, max_lines=2000, max_bytes=20, direction="head", part_id="p1")
    assert cut is not None
    assert cut.shown == "line 0\nline 1\n" + notice(8, 56, "after")


@pytest.mark.parametrize(("direction", "kept"), [("head", "éé"), ("tail", "éé")])
def test_a_long_line_is_cut_between_characters(direction: str, kept: str) -> None:
    cut = truncated_view("é" * 10, max_lines=5, max_bytes=5, direction=direction, part_id="p1")  # type: ignore[arg-type]
    assert cut is not None
    assert kept in cut.shown and "\ufffd" not in cut.shown
    assert (cut.omitted_lines, cut.omitted_bytes) == (0, 16)


@given(
    text=st.text(st.characters(codec="utf-8"), max_size=300),
    max_lines=st.integers(1, 20),
    max_bytes=st.integers(1, 200),
    direction=st.sampled_from(["head", "tail"]),
)
def test_the_shown_part_is_a_whole_character_slice_within_the_limits(
    text: str, max_lines: int, max_bytes: int, direction: Direction
) -> None:
    cut = truncated_view(
        text, max_lines=max_lines, max_bytes=max_bytes, direction=direction, part_id="p"
    )
    if cut is None:
        assert len(text.encode()) <= max_bytes and text.count("\n") <= max_lines
        return
    kept_bytes = len(text.encode()) - cut.omitted_bytes
    shown_lines = cut.shown.split("\n")
    body = "\n".join(shown_lines[:-1]) if direction == "head" else "\n".join(shown_lines[1:])
    assert kept_bytes <= max_bytes
    assert text.startswith(body) if direction == "head" else text.endswith(body)


def reference_view(text: str, max_lines: int, max_bytes: int, direction: str) -> str:
    """The definition, spelled out: every line split off, then as many whole lines as fit."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    ordered = lines if direction == "head" else lines[::-1]
    kept: list[str] = []
    size = 0
    for line in ordered[:max_lines]:
        if size + len(line.encode()) > max_bytes:
            break
        kept.append(line)
        size += len(line.encode())
    if not kept:
        data = ordered[0].encode()
        piece = data[:max_bytes] if direction == "head" else data[-max_bytes:]
        kept = [piece.decode("utf-8", errors="ignore")]
    return "".join(kept if direction == "head" else kept[::-1])


@settings(max_examples=400)
@given(
    text=st.lists(
        st.sampled_from(["a", "é", "漢", "😀", "\n", "\n\n", "xyz" * 5]), max_size=60
    ).map("".join),
    max_lines=st.integers(1, 12),
    max_bytes=st.integers(1, 40),
    direction=st.sampled_from(["head", "tail"]),
)
def test_only_the_lines_that_can_be_shown_are_split_and_the_view_is_the_definition(
    text: str, max_lines: int, max_bytes: int, direction: Direction
) -> None:
    cut = truncated_view(
        text, max_lines=max_lines, max_bytes=max_bytes, direction=direction, part_id="p"
    )
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if cut is None:
        assert lines <= max_lines and len(text.encode()) <= max_bytes
        return
    view = reference_view(text, max_lines, max_bytes, direction)
    assert view in cut.shown
    assert cut.omitted_bytes == len(text.encode()) - len(view.encode())


def test_an_output_just_over_the_byte_limit_is_kept_whole() -> None:
    # the case: 51,266 bytes against 51,200 gave a 51,316-byte "truncated" view
    output = "".join(f"{n:07d} " + "x" * 91 + "\n" for n in range(512)) + "y" * 66
    assert len(output.encode()) == 51_266
    view = truncated_view(output, max_lines=2000, max_bytes=51_200, direction="head", part_id="p")
    assert view is not None and len(view.shown.encode()) > 51_266
    assert truncate(output, max_lines=2000, max_bytes=51_200, direction="head", part_id="p") is None


def test_an_output_well_over_the_limit_is_still_truncated() -> None:
    output = "line\n" * 30_000  # 150,000 bytes
    cut = truncate(output, max_lines=2000, max_bytes=51_200, direction="tail", part_id="p")
    assert cut is not None and cut.shown.endswith("line\n" * 2000)
    assert len(cut.shown.encode()) < len(output.encode())


@settings(max_examples=300)
@given(
    line=st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=120),
    lines=st.integers(1, 60),
    extra=st.text(st.characters(codec="utf-8"), max_size=200),
    max_lines=st.integers(1, 60),
    max_bytes=st.integers(1, 4_000),
    direction=st.sampled_from(["head", "tail"]),
)
def test_truncation_never_makes_an_output_longer(
    line: str, lines: int, extra: str, max_lines: int, max_bytes: int, direction: Direction
) -> None:
    """Outputs near the limits (a few lines or bytes over, or far over): the view is shorter
    than the output, or there is none and the output is shown whole; when the view is
    shorter, it is the same as `truncated_view`'s."""
    output = (line + "\n") * lines + extra
    cut = truncate(
        output, max_lines=max_lines, max_bytes=max_bytes, direction=direction, part_id="p"
    )
    view = truncated_view(
        output, max_lines=max_lines, max_bytes=max_bytes, direction=direction, part_id="p"
    )
    if cut is None:
        assert view is None or len(view.shown.encode()) >= len(output.encode())
    else:
        assert cut == view
        assert len(cut.shown.encode()) < len(output.encode())
