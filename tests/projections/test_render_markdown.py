"""The Markdown transcript's fences and redaction marks: no content can close its own fenced
block, whatever backticks it holds; a redaction placeholder is told from text that only
mentions one."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sessionstore.projections._render_markdown import fence, is_redaction

texts = st.text(alphabet=st.sampled_from(["`", "a", "\n", " ", "~"]), max_size=60)


@given(texts)
def test_no_line_of_the_content_closes_its_fence(content: str) -> None:
    block = fence(content, "json")
    opening, *body, closing = block.split("\n")
    marks = closing
    assert set(marks) == {"`"} and len(marks) >= 3
    assert opening == marks + "json"
    assert "\n".join(body) == content.removesuffix("\n")
    # CommonMark closes a backtick fence on a line of at least as many backticks, indented
    # by at most three spaces, with nothing after them but spaces
    closer = re.compile(rf" {{0,3}}`{{{len(marks)},}} *")
    assert not any(closer.fullmatch(line) for line in body)


def test_the_fence_is_three_backticks_or_one_more_than_the_longest_run() -> None:
    assert fence("plain") == "```\nplain\n```"
    assert fence("a ``` b\n") == "````\na ``` b\n````"
    assert fence("``````", "text") == "```````text\n``````\n```````"
    assert fence("") == "```\n```"


def test_only_a_whole_placeholder_reads_as_a_redaction() -> None:
    assert is_redaction("[redacted: a leaked key]")
    assert not is_redaction("see [redacted: a leaked key]")
    assert not is_redaction("[redacted: one]\n[redacted: two]")
    assert not is_redaction("[redacted: unfinished")
