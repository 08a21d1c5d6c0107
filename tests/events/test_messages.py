from __future__ import annotations

import pytest
from pydantic import ValidationError

from sessionstore.events import (
    FilePart,
    Message,
    MessageAppended,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
    Usage,
    decode_payload,
    encode_payload,
)


def test_tool_call_input_is_kept_as_canonical_argument_text() -> None:
    call = ToolCallPart.from_input(
        call_id="c1", name="grep", input={"pattern": "TODO", "max": 1e20}
    )
    assert call.arguments == '{"max":1e+20,"pattern":"TODO"}'
    assert call.input == {"pattern": "TODO", "max": 1e20}


def test_malformed_arguments_from_a_model_are_kept_verbatim() -> None:
    call = ToolCallPart(call_id="c1", name="grep", arguments='{"pattern": "TODO"')
    assert call.arguments == '{"pattern": "TODO"'
    assert call.input is None


def test_a_tool_result_shows_its_truncated_view_and_keeps_the_original() -> None:
    cut = Truncation(
        shown="line 1\n[... 2 lines cut]",
        direction="head",
        max_lines=1,
        max_bytes=51_200,
        omitted_lines=2,
        omitted_bytes=14,
    )
    result = ToolResultPart(call_id="c1", output="line 1\nline 2\nline 3", truncation=cut)
    assert result.shown == "line 1\n[... 2 lines cut]"
    assert result.output == "line 1\nline 2\nline 3"
    assert ToolResultPart(call_id="c1", output="whole").shown == "whole"


@pytest.mark.parametrize(
    ("role", "part", "message"),
    [
        ("user", ToolResultPart(call_id="c", output="x"), "user message cannot hold a tool_result"),
        ("tool", TextPart(text="x"), "tool message cannot hold a text part"),
        ("system", ReasoningPart(text="x"), "system message cannot hold a reasoning"),
        ("user", ToolCallPart(call_id="c", name="n"), "user message cannot hold a tool_call"),
    ],
)
def test_each_role_holds_only_its_kinds_of_part(role: str, part: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Message(role=role, parts=(part,))


def test_usage_belongs_to_assistant_messages_and_part_ids_are_unique() -> None:
    with pytest.raises(ValidationError, match="only assistant messages carry usage"):
        Message(role="user", parts=(TextPart(text="x"),), usage=Usage(input=1))
    with pytest.raises(ValidationError, match="part ids must be unique"):
        Message(role="user", parts=(TextPart(id="p", text="a"), TextPart(id="p", text="b")))
    with pytest.raises(ValidationError, match="at least 1 item"):
        Message(role="user", parts=())


def test_a_file_part_has_exactly_one_source() -> None:
    with pytest.raises(ValidationError, match="exactly one of url or data"):
        FilePart(media_type="image/png")
    with pytest.raises(ValidationError, match="exactly one of url or data"):
        FilePart(media_type="image/png", url="https://x/y.png", data="aGk=")
    assert FilePart(media_type="image/png", data="aGk=").data == "aGk="


def test_models_are_frozen() -> None:
    part = TextPart(text="x")
    with pytest.raises(ValidationError, match="frozen"):
        part.text = "y"  # type: ignore[misc]


def test_a_full_assistant_message_round_trips_through_its_stored_form() -> None:
    message = Message(
        role="assistant",
        parts=(
            ReasoningPart(text="look first", tokens=3),
            TextPart(text="reading", tokens=1),
            ToolCallPart.from_input(call_id="c1", name="read", input={"path": "a.py"}, tokens=9),
        ),
        usage=Usage(input=1200, output=40, cache_read=1000, cache_write=0),
    )
    data, payload_json = encode_payload(MessageAppended(message=message))

    assert "type" not in data  # the envelope holds the type
    assert decode_payload("MessageAppended", 1, data) == MessageAppended(message=message)
    assert payload_json.startswith(b'{"message":{"id":"')
