"""The OpenAI SDK's own types as the oracle for what the Responses API takes and returns.

`TypeAdapter(ResponseInputParam)` alone is lenient in two ways that would hide real 400s: a
`TypedDict` ignores keys it does not declare (the API answers `Unknown parameter`), and fields
typed `Iterable[...]` are validated lazily, only when iterated. `accepted_input` closes both:
extra keys are forbidden all the way down and every iterable is walked, and the validated
value must equal what was given (nothing dropped or coerced).
"""

from __future__ import annotations

import json
import typing
from typing import Any, get_args, get_origin

import pydantic
from openai.types.responses import Response, ResponseInputItemParam
from openai.types.responses.response_output_item import ResponseOutputItem

_STRICT_INPUT = pydantic.TypeAdapter(
    list[ResponseInputItemParam], config=pydantic.ConfigDict(extra="forbid")
)


def accepted_input(items: object) -> list[dict[str, Any]]:
    """`items` checked as a Responses `input` list by the SDK's types, strictly; returned as
    they are. Raises `AssertionError` (with pydantic's report) when the SDK would not send them
    as they are."""
    assert isinstance(items, list)
    try:
        validated = _walked(_STRICT_INPUT.validate_python(items))
    except pydantic.ValidationError as exc:
        raise AssertionError(_brief(exc, items)) from None
    assert validated == items, "the SDK's input types changed or dropped part of the input"
    return items


def _walked(value: Any) -> Any:
    """Validated data with every lazy iterable consumed (which validates its items)."""
    if isinstance(value, dict):
        return {key: _walked(item) for key, item in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return [_walked(item) for item in value]


def _brief(exc: pydantic.ValidationError, items: list[Any]) -> str:
    """The errors of the union members each failing item's `type` names (pydantic reports
    every member of the union; only the intended ones are worth reading)."""
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        if len(loc) >= 2 and isinstance(loc[0], int) and isinstance(items[loc[0]], dict):
            wanted = items[loc[0]].get("type", "message")
            if str(loc[1]) not in _INPUT_MEMBERS.get(wanted, {str(loc[1])}):
                continue
        lines.append(f"{loc}: {error['msg']} (input {json.dumps(error.get('input'))[:200]})")
    return "the SDK would not send this input:\n" + "\n".join(lines[:40] or [str(exc)[:4000]])


def _input_members() -> dict[str, set[str]]:
    """Each input item `type` -> the names of the SDK's input union members that take it."""
    members: dict[str, set[str]] = {}
    for member in get_args(ResponseInputItemParam):
        hint = typing.get_type_hints(member).get("type")
        while hint is not None and get_origin(hint) is not typing.Literal and get_args(hint):
            hint = get_args(hint)[0]
        for value in get_args(hint) if hint is not None else ():
            members.setdefault(value, set()).add(member.__name__)
    return members


_INPUT_MEMBERS = _input_members()


def output_item_types() -> set[str]:
    """The `type` of every output item the installed SDK's `Response.output` can hold."""
    union = get_args(ResponseOutputItem)[0]
    types: set[str] = set()
    for model in get_args(union):
        annotation = model.model_fields["type"].annotation
        assert get_origin(annotation) is typing.Literal
        types.update(get_args(annotation))
    return types


def response(data: dict[str, Any]) -> Response:
    """A real SDK `Response`, validated (so a fixture that drifts from the SDK fails here)."""
    return Response.model_validate(data)
