"""The Markdown transcript's fences and redaction marks: no content can close its own fenced
block, whatever backticks it holds (checked with a CommonMark parser reading the transcript);
a redaction placeholder is told from text that only mentions one."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from sessionstore.events import (
    ContentRedacted,
    FilePart,
    Message,
    MessagePinned,
    Native,
    NativePart,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    Preview,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
)
from sessionstore.projections import fold_events, history_markdown, markdown_of
from sessionstore.projections._render_markdown import closed, fence, is_redaction
from tests.projections.log import Log
from tests.projections.test_summary import check_golden

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


outputs = st.text(
    alphabet=st.sampled_from(["`", "~", "a", " ", "\n", "#", ">", "-", "<"]), max_size=80
)


@given(st.lists(outputs, min_size=1, max_size=4), st.booleans())
def test_each_call_and_output_is_one_fenced_block_holding_it_exactly(
    shown: list[str], history: bool
) -> None:
    log = Log()
    for n, output in enumerate(shown):
        call = ToolCallPart.from_input(id=f"a{n}.c", call_id=f"c{n}", name="bash", input=[output])
        log.message(Message(id=f"a{n}", role="assistant", parts=(call,)))
        result = ToolResultPart(id=f"t{n}.r", call_id=f"c{n}", name="bash", output=output)
        log.message(Message(id=f"t{n}", role="tool", parts=(result,)))
    transcript = history_markdown(log.events) if history else markdown_of(fold_events(log.events))
    blocks = [t.content for t in MarkdownIt("commonmark").parse(transcript) if t.type == "fence"]
    expected = []
    for output in shown:
        expected.append(json.dumps([output], indent=2) + "\n")
        expected.append(output if output.endswith("\n") or not output else output + "\n")
    assert blocks == expected


def every_status() -> Log:
    """A log whose live context shows each way a part can be shown: a truncated user text (in a
    pinned message, with a file) and a restored one, a provider's own block, a call cut to a
    preview, reasoning cleared by a prune, an output pruned then restored, one previewed."""
    log = Log(title="every status")
    cut = Truncation(
        shown="Long text, cut.", direction="head", max_lines=1, max_bytes=100, omitted_lines=9,
        omitted_bytes=900,
    )  # fmt: skip
    image = FilePart(
        id="u1.f", media_type="image/png", filename="shot.png", url="https://example.com/a.png"
    )
    long_text = TextPart(id="u1.t", text="Long text, " + "word " * 200, truncation=cut)
    log.message(Message(id="u1", role="user", parts=(long_text, image)))
    restored = TextPart(
        id="u2.t", text="Another long text", truncation=cut.model_copy(update={"shown": "Another"})
    )
    log.message(Message(id="u2", role="user", parts=(restored,)))
    log.add(MessagePinned(message_id="u1"))
    server = Native(api="anthropic.messages", value={"type": "server_tool_use"})
    log.message(
        Message(
            id="a1",
            role="assistant",
            parts=(
                ReasoningPart(id="a1.r", text="Read it first."),
                NativePart(id="a1.n", native=server, text="web search: tz"),
                ToolCallPart(
                    id="a1.c", call_id="c1", name="read", arguments='{"path":"' + "p" * 300 + '"}'
                ),
            ),
        )
    )
    log.message(
        Message(id="t1", role="tool", parts=(ToolResultPart(id="t1.r", call_id="c1", output="x"),))
    )
    grep = ToolCallPart(id="a2.c", call_id="c2", name="grep", arguments='{"q":"y"}')
    log.message(Message(id="a2", role="assistant", parts=(grep,)))
    found = ToolResultPart(id="t2.r", call_id="c2", name="grep", output="y" * 100)
    log.message(Message(id="t2", role="tool", parts=(found,)))
    log.add(
        OutputsPruned(
            part_ids=("t1.r", "a1.r"), placeholder="[pruned {part_id}]", tokens_freed=10,
            reason="old",
        )
    )  # fmt: skip
    log.add(OutputsRestored(part_ids=("t1.r", "u2.t")))
    log.add(
        PartsPreviewed(
            previews={"t2.r": Preview(chars=5, tokens=3), "a1.c": Preview(chars=20, tokens=3)},
            notice="[cut {omitted} characters]",
            tokens_freed=40,
        )
    )
    return log


def test_each_way_a_part_is_shown_reads_as_the_golden_file() -> None:
    log = every_status()
    check_golden("statuses_live.md", markdown_of(fold_events(log.events)))
    check_golden("statuses_history.md", history_markdown(log.events))


def test_redacted_parts_read_as_their_placeholder_outside_any_fence() -> None:
    log = Log(title="redacted")
    thinking = ReasoningPart(id="a1.r", text="The key is sk-1.")
    call = ToolCallPart(id="a1.c", call_id="c1", name="bash", arguments='{"cmd":"echo sk-1"}')
    log.message(Message(id="a1", role="assistant", parts=(thinking, call)))
    result = ToolResultPart(id="t1.r", call_id="c1", name="bash", output="sk-1")
    log.message(Message(id="t1", role="tool", parts=(result,)))
    log.add(ContentRedacted(part_ids=("a1.r", "a1.c", "t1.r"), digests=("0" * 64,), reason="a key"))
    transcript = markdown_of(fold_events(log.events))
    assert transcript.split("\n\n")[2:] == [
        "## Assistant",
        "_Thinking:_ [redacted: a key]",
        "**Tool call** `bash` · `c1`: [redacted: a key]",
        "## Tool",
        "**Tool result** of `bash` · `c1`: [redacted: a key]\n",
    ]


@given(st.lists(texts, min_size=1, max_size=4))
def test_a_text_that_leaves_a_fence_open_never_swallows_the_messages_after_it(
    said: list[str],
) -> None:
    log = Log()
    for n, words in enumerate(said):
        log.message(Message(id=f"a{n}", role="assistant", parts=(TextPart(text=words or "."),)))
        log.message(Message(id=f"u{n}", role="user", parts=(TextPart(text="Go on."),)))
    transcript = markdown_of(fold_events(log.events))
    tokens = MarkdownIt("commonmark").parse(transcript)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Session s1"] + ["Assistant", "User"] * len(said)


def test_an_open_fence_is_closed_with_its_own_marks() -> None:
    assert closed("Here:\n```python\nx = 1") == "Here:\n```python\nx = 1\n```"
    assert closed("~~~~\n```\nstill code") == "~~~~\n```\nstill code\n~~~~"
    assert closed("```\ncode\n```") == "```\ncode\n```"
    assert closed("inline ``` is no fence") == "inline ``` is no fence"
    assert closed("``` a`b\nnot a fence") == "``` a`b\nnot a fence"
