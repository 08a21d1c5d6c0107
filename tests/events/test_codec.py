"""Decoding stored payloads from their JSON text gives exactly what decoding the parsed object
gives, and refuses what does not fit the same way."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.events import (
    InvalidEvent,
    Message,
    MessageAppended,
    OutputsPruned,
    TextPart,
    ToolResultPart,
    decode_payload,
    decode_payload_json,
    encode_payload,
)


@given(text=st.text(), output=st.text(), tokens=st.integers(0, 10**6))
def test_the_json_path_decodes_as_the_object_path_does(text: str, output: str, tokens: int) -> None:
    message = Message(
        role="tool",
        parts=(ToolResultPart(call_id="c1", output=output, tokens=tokens),),
    )
    for payload in (
        MessageAppended(message=message),
        MessageAppended(message=Message(role="user", parts=(TextPart(text=text),))),
        OutputsPruned(part_ids=("p1",), placeholder=text, tokens_freed=tokens),
    ):
        try:
            data, stored = encode_payload(payload)
        except InvalidEvent:
            continue  # text our canonical form refuses (a NUL, a lone surrogate) is never stored
        from_text = decode_payload_json(payload.type, 1, stored.decode("utf-8"))
        assert from_text == decode_payload(payload.type, 1, data) == payload


def test_the_json_path_refuses_what_does_not_fit() -> None:
    stored = json.dumps({"message": {"role": "robot", "parts": []}})
    with pytest.raises(InvalidEvent, match="stored MessageAppended v1 does not fit the model"):
        decode_payload_json("MessageAppended", 1, stored)
