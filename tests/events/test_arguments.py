"""Models callers build by hand raise `InvalidArgument`; validating stored data does not."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sessionstore.events import (
    CompressionConfig,
    InvalidArgument,
    InvalidEvent,
    Message,
    ToolLimits,
    Usage,
    decode_payload,
)
from sessionstore.events._brief import brief, described


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Usage(input=-1), "Usage: input: Input should be greater than or equal to 0"),
        (lambda: CompressionConfig(trigger_ratio=5), "CompressionConfig: trigger_ratio: Input"),
        (lambda: ToolLimits(direction="up"), "ToolLimits: direction: Input should be 'head'"),
    ],
)
def test_a_bad_value_in_a_constructor_is_an_invalid_argument(build: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        build()


def test_validating_data_still_raises_pydantics_error_and_skips_the_constructor() -> None:
    """Decoding stored events must not run the constructor (it is slower, and its error would
    be wrapped in pydantic's): pydantic honours `__pydantic_base_init__`."""
    with pytest.raises(ValidationError):
        Usage.model_validate({"input": -1})
    with pytest.raises(ValidationError, match=r"usage\.input"):
        Message.model_validate(
            {"role": "assistant", "parts": [{"type": "text", "text": "x"}], "usage": {"input": -1}}
        )
    assert not Usage.__pydantic_custom_init__
    assert not CompressionConfig.__pydantic_custom_init__


def test_a_stored_event_with_a_bad_usage_is_an_invalid_event() -> None:
    stored = {
        "message": {
            "id": "m",
            "role": "assistant",
            "parts": [{"type": "text", "id": "p", "text": "x"}],
            "usage": {"input": -1},
        }
    }
    with pytest.raises(InvalidEvent, match=r"message\.usage\.input: Input should be greater"):
        decode_payload("MessageAppended", 1, stored)


def deep(depth: int) -> object:
    value: object = {}
    for _ in range(depth):
        value = {"a": value}
    return value


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(5, "5", id="int"),
        pytest.param("abc", "'abc'", id="str"),
        pytest.param(b"abc", "b'abc'", id="bytes"),
        pytest.param(None, "None", id="none"),
        pytest.param(deep(10_000), "{'a': {'a': {...}}}", id="10000-deep-dict"),
        pytest.param("x" * 10_000_000, "'" + "x" * 27 + "..." + "x" * 28 + "'", id="10-MB-str"),
        pytest.param(b"y" * 1_000, "b'" + "y" * 60 + "...'", id="1-KB-bytes"),
        pytest.param(10**5000, "<int>", id="int-too-long-to-print"),
        pytest.param([1, 2, 3, 4, 5, 6], "[1, 2, 3, 4, ...]", id="long-list"),
    ],
)
def test_brief_shows_any_value_in_a_few_characters(value: object, shown: str) -> None:
    assert brief(value) == shown
    assert len(brief(value)) <= 80


def test_brief_survives_a_repr_that_raises() -> None:
    assert brief(BadRepr()).startswith("<BadRepr instance at 0x")


def test_described_names_the_type() -> None:
    assert described(None) == "None"
    assert described(b"x") == "bytes b'x'"
    assert described(True) == "bool True"
