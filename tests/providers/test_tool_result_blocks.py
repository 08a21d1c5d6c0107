"""Tool results as content blocks: text and images, in any provider's shape, kept as blocks;
each render sends them as its API allows (checked with the SDKs' request types), and a
truncated or pruned result shows only its text."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstore import InvalidArgument, Session, SessionStore, ToolCall
from sessionstore.context._tokens import count
from sessionstore.events import FilePart, OutputsPruned, TextPart, ToolResultPart
from sessionstore.projections import FILE_TOKENS, LiveToolResult
from tests.providers.request_types import check_anthropic, check_chat, check_responses

PNG = "iVBORw0KGgoAAAANSUhEUg=="
JPEG = "/9j/4AAQSkZJRg=="
SCREEN = "https://example.com/shots/screen.png"

BLOCKS: list[Any] = [
    TextPart(id="b1", text="Clicked Save."),
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    {"type": "text", "text": "The dialog closed.", "cache_control": {"type": "ephemeral"}},
    {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}", "detail": "low"}},
    {"type": "input_image", "image_url": SCREEN, "detail": "high"},
    {"type": "input_text", "text": ""},
]
TEXT = "Clicked Save.\n\nThe dialog closed.\n\n"


def with_call(store: SessionStore, call_id: str = "c1", **config: Any) -> Session:
    s = store.create_session(model="gpt-4o")
    if config:
        s.configure(**config)
    s.append_user("save the file")
    s.append_assistant(tool_calls=[ToolCall(id=call_id, name="computer", input={"do": "save"})])
    return s


def result_of(s: Session) -> LiveToolResult:
    (part,) = [p for m in s.context().messages for p in m.parts if isinstance(p, LiveToolResult)]
    return part


def test_blocks_are_kept_and_the_output_is_their_text(store: SessionStore) -> None:
    s = with_call(store)
    message = s.append_tool_result("c1", output=BLOCKS)

    part = message.parts[0]
    assert isinstance(part, ToolResultPart)
    assert part.output == TEXT
    assert part.blocks is not None
    assert [(type(b).__name__, b.tokens) for b in part.blocks] == [
        ("TextPart", 3),
        ("FilePart", FILE_TOKENS),
        ("TextPart", 4),
        ("FilePart", FILE_TOKENS),
        ("FilePart", FILE_TOKENS),
        ("TextPart", 0),
    ]
    images = [b for b in part.blocks if isinstance(b, FilePart)]
    assert [(i.media_type, i.data, i.url) for i in images] == [
        ("image/png", PNG, None),
        ("image/jpeg", JPEG, None),
        ("image/png", None, SCREEN),
    ]
    assert part.tokens == 7 + 3 * FILE_TOKENS
    shown = result_of(store.session(s.id))  # read back from the database
    assert (shown.status, shown.output, shown.blocks, shown.tokens) == (
        "original",
        TEXT,
        part.blocks,
        7 + 3 * FILE_TOKENS,
    )


def test_each_render_sends_the_blocks_its_api_takes(store: SessionStore) -> None:
    s = with_call(store)
    s.append_tool_result("c1", output=BLOCKS)
    context = s.context()

    anthropic = context.to_anthropic()
    assert anthropic["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [
                {"type": "text", "text": "Clicked Save."},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "text", "text": "The dialog closed."},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG},
                },
                {"type": "image", "source": {"type": "url", "url": SCREEN}},
            ],
        }
    ]
    responses = context.to_responses()
    assert responses[2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "Clicked Save."},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
            {"type": "input_text", "text": "The dialog closed."},
            {
                "type": "input_image",
                "image_url": f"data:image/jpeg;base64,{JPEG}",
                "detail": "auto",
            },
            {"type": "input_image", "image_url": SCREEN, "detail": "auto"},
        ],
    }
    moved = {"type": "text", "text": "[image: sent in the user message after the tool results]"}
    assert context.to_openai()[2:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "Clicked Save."},
                moved,
                {"type": "text", "text": "The dialog closed."},
                moved,
                moved,
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Images from the result of tool call c1:]"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}},
                {"type": "image_url", "image_url": {"url": SCREEN}},
            ],
        },
    ]
    check_anthropic(anthropic)
    check_responses(responses)
    check_chat(context.to_openai())


def test_chat_images_follow_all_the_tool_messages_of_the_turn(store: SessionStore) -> None:
    s = store.create_session(model="gpt-4o")
    s.append_user("two screenshots")
    s.append_assistant(
        tool_calls=[
            ToolCall(id="c1", name="shot", input={}),
            ToolCall(id="c2", name="shot", input={}),
            ToolCall(id="c3", name="shot", input={}),
        ]
    )
    s.append_tool_result("c1", output=[{"type": "image_url", "image_url": {"url": SCREEN}}])
    s.append_tool_result("c2", output="no screen")
    s.append_tool_result("c3", output=[{"type": "image_url", "image_url": {"url": SCREEN}}])
    s.append_user("which is newer?")

    rendered = s.context().to_openai()

    check_chat(rendered)
    assert [(m["role"], m.get("tool_call_id")) for m in rendered] == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("tool", "c3"),
        ("user", None),
        ("user", None),
    ]
    assert [b.get("text") for b in rendered[5]["content"]] == [
        "[Images from the result of tool call c1:]",
        None,
        "[Images from the result of tool call c3:]",
        None,
    ]


def test_a_truncated_result_shows_only_its_text_until_restored(store: SessionStore) -> None:
    s = with_call(store, max_lines=2)
    lines = [{"type": "text", "text": f"line {n}\nline {n}b"} for n in range(12)]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    message = s.append_tool_result("c1", output=[*lines, image])
    part = message.parts[0]
    assert isinstance(part, ToolResultPart) and part.truncation is not None
    notice = (
        f"[33 lines (179 bytes) after this were cut; the full output is kept: restore with part id "
        f"{part.id}]"
    )

    truncated = result_of(s)
    assert (truncated.status, truncated.output, truncated.blocks) == (
        "truncated",
        f"line 0\nline 0b\n{notice}",
        None,
    )
    assert truncated.tokens == part.tokens == count(truncated.output, "cl100k_base")
    assert part.truncation.output_tokens == 12 * 8 + FILE_TOKENS
    assert s.context().to_anthropic()["messages"][2]["content"][0]["content"] == truncated.output
    assert s.context().to_responses()[2]["output"] == truncated.output
    assert s.context().to_openai()[2]["content"] == truncated.output
    assert len(s.context().to_openai()) == 3  # no image to carry

    s.restore([part.id])

    restored = result_of(s)
    assert (restored.status, restored.blocks, restored.tokens) == (
        "restored",
        part.blocks,
        12 * 8 + FILE_TOKENS,
    )
    assert [
        b["type"] for b in s.context().to_anthropic()["messages"][2]["content"][0]["content"]
    ] == [*["text"] * 12, "image"]
    assert s.context().tokens == 3 + 6 + 12 * 8 + FILE_TOKENS


def test_a_pruned_result_shows_its_placeholder_and_a_restore_brings_the_blocks_back(
    store: SessionStore,
) -> None:
    s = with_call(store)
    message = s.append_tool_result("c1", output=BLOCKS)
    part_id = message.parts[0].id
    s.append_events([OutputsPruned(part_ids=(part_id,), placeholder="[pruned]", tokens_freed=0)])

    pruned = result_of(s)
    assert (pruned.status, pruned.output, pruned.blocks) == ("pruned", "[pruned]", None)
    for rendered in (
        s.context().to_anthropic()["messages"][2]["content"][0]["content"],
        s.context().to_responses()[2]["output"],
        s.context().to_openai()[2]["content"],
    ):
        assert rendered == "[pruned]"
    assert len(s.context().to_openai()) == 3
    full = s.context(restore_pruned=True)
    assert result_of_context(full).blocks is not None

    s.restore([part_id])

    assert result_of(s).blocks == message.parts[0].blocks  # type: ignore[union-attr]
    check_chat(s.context().to_openai())


def result_of_context(context: Any) -> LiveToolResult:
    (part,) = [p for m in context.messages for p in m.parts if isinstance(p, LiveToolResult)]
    return part


def test_a_result_of_only_an_image_is_valid_everywhere(store: SessionStore) -> None:
    s = with_call(store)
    s.append_tool_result("c1", output=[{"type": "input_image", "image_url": SCREEN}])

    context = s.context()
    assert result_of(s).output == ""
    check_anthropic(context.to_anthropic())
    check_responses(context.to_responses())
    check_chat(context.to_openai())
    assert context.tokens == 3 + 6 + FILE_TOKENS


@pytest.mark.parametrize(
    ("output", "message"),
    [
        pytest.param(
            {"type": "text", "text": "x"},
            r"output must be a str or a list of content blocks \(text and images\), got dict",
            id="one-block",
        ),
        pytest.param([5], r"content blocks \(text and images\); output\[0\] is int 5", id="an-int"),
        pytest.param(
            [{"type": "document", "source": {}}],
            r"output\[0\]: a tool result block must be text or an image, got",
            id="a-document",
        ),
        pytest.param(
            [{"type": "text", "text": None}],
            r"output\[0\]: 'text' must be a str, got None",
            id="text-none",
        ),
        pytest.param(
            [{"type": "image", "source": {"type": "file", "file_id": "f"}}],
            r"output\[0\]: an image's source must be base64 data or a URL",
            id="a-file-id",
        ),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "data:image/png,raw"}}],
            r"output\[0\]: a data URL must be data:<media type>;base64,<data>",
            id="not-base64",
        ),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "data:application/pdf;base64,AA=="}}],
            r"output\[0\]: a tool result takes images, not application/pdf",
            id="a-pdf",
        ),
        pytest.param(
            [FilePart(media_type="text/plain", data="aGk=")],
            r"output\[0\]: a tool result takes images, not text/plain",
            id="a-text-file",
        ),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,AA=="}}],
            r"output\[0\]: an image sent as data must be PNG, JPEG, GIF or WebP \(what every "
            r"provider takes\), not image/svg\+xml",
            id="an-svg",
        ),
        pytest.param(
            [{"type": "input_image", "image_url": ""}],
            r"output\[0\]: an image's url is empty",
            id="empty-url",
        ),
    ],
)
def test_a_bad_block_is_a_typed_error_and_writes_nothing(
    store: SessionStore, output: Any, message: str
) -> None:
    s = with_call(store)
    version = s.version

    with pytest.raises(InvalidArgument, match=message):
        s.append_tool_result("c1", output=output)

    assert store.version(s.id) == version
