"""The providers' own request types, as the oracle of what a render sends.

A pydantic `TypeAdapter` over the SDKs' `TypedDict`s is lenient in two ways that would hide a
bad render: an `Iterable[...]` field (every content list of the `openai` SDK) is validated
lazily, only when iterated, and a key the type does not know is dropped without a word. The
checks here iterate every lazy list and compare what the type kept with what was sent, so an
unknown key or a bad block fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam
from pydantic import TypeAdapter


@cache
def _adapter(kind: str) -> TypeAdapter[Any]:
    types: dict[str, Any] = {
        "anthropic": list[MessageParam],
        "chat": list[ChatCompletionMessageParam],
        "responses": ResponseInputParam,
    }
    return TypeAdapter(types[kind])


def _materialized(value: Any) -> Any:
    """`value` with every lazily validated list iterated (which validates its items)."""
    if isinstance(value, Iterator):  # pydantic's ValidatorIterator
        return [_materialized(item) for item in value]
    if isinstance(value, dict):
        return {key: _materialized(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_materialized(item) for item in value]
    return value


def _strictly(kind: str, value: Any) -> None:
    kept = _materialized(_adapter(kind).validate_python(value))
    assert kept == value, f"the {kind} request type does not take all of it"


def check_chat(messages: list[dict[str, Any]]) -> None:
    """`messages` is a valid Chat Completions `messages` list."""
    _strictly("chat", messages)


def check_anthropic(request: dict[str, Any]) -> None:
    """`request` is a valid `system` + `messages` for the Messages API."""
    assert set(request) <= {"system", "messages"}
    assert isinstance(request.get("system", ""), str)
    _strictly("anthropic", request["messages"])


def check_responses(items: list[dict[str, Any]]) -> None:
    """`items` is a valid Responses API `input`."""
    _strictly("responses", items)
