"""`ToolCall`: a tool call an agent loop hands to `Session.append_assistant`, in any of the
forms its code holds one.

A model's tool-call arguments arrive as JSON text. They are recorded as that text, byte for
byte (`ToolCall(arguments=...)`, or the SDK's own call), so what is sent back is what the model
wrote, malformed or not; `input={...}` builds the text from an object instead. The SDKs' tool
calls and their dicts are read here, so `tool_calls=message.tool_calls` works as it comes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sessionstore.events import (
    ArgumentModel,
    InvalidArgument,
    InvalidEvent,
    Native,
    ToolCallPart,
    brief,
    described,
)
from sessionstore.providers import tool_call_part

_BOTH = "give input (an object) or arguments (the JSON text the model produced), not both"


class ToolCall(ArgumentModel):
    """A tool call the model made: its id, the tool's name and its arguments, either as the
    JSON text the model produced (`arguments='{"path": "a.py"}'`, recorded byte for byte, even
    when it is not valid JSON: it is what the model said) or as an object (`input={...}`,
    recorded as its canonical JSON text). Giving both, or a str as `input` (the JSON text in
    the wrong place, which would be encoded twice), is an `InvalidArgument`.

    `ToolCall.from_openai(call)` reads a Chat Completions tool call (the SDK's object or its
    dict). A bad id, name or input (not JSON, nested too deep) raises `InvalidArgument` here; an
    input that is JSON but cannot be stored (a NaN) raises `InvalidEvent` when it is appended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: JsonValue = Field(default_factory=dict)
    arguments: str | None = None
    """The arguments as the JSON text the model produced; `None` when given as `input`."""

    _native: Native | None = PrivateAttr(default=None)
    """The provider's own call, when read from one (`from_openai`)."""

    def __init__(self, /, **data: Any) -> None:
        if "input" in data and data.get("arguments") is not None:
            raise InvalidArgument(f"ToolCall: {_BOTH}")
        super().__init__(**data)

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # see ArgumentModel

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        """The same rule for `model_validate`, which does not pass through `__init__`."""
        if isinstance(data, dict) and "input" in data and data.get("arguments") is not None:
            raise ValueError(_BOTH)
        return data

    @field_validator("input", mode="after")
    @classmethod
    def _input_is_not_text(cls, value: JsonValue) -> JsonValue:
        """A str input is the JSON text of arguments, given in the wrong place: stored as a
        JSON string, it would reach the provider encoded twice."""
        if isinstance(value, str):
            raise PydanticCustomError(
                "input_is_text",
                "a str is the arguments' JSON text: pass it as arguments=..., "
                "and an object as input",
            )
        return value

    @classmethod
    def from_openai(cls, call: object) -> ToolCall:
        """A Chat Completions tool call: `ChatCompletionMessageFunctionToolCall` (its
        `function.arguments` kept as the exact text) or `ChatCompletionMessageCustomToolCall`
        (its `custom.input`), or their dicts. The call is kept as it came, so `to_openai()`
        sends a custom call back as a custom call."""
        part = tool_call_part(call)
        made = cls(id=part.call_id, name=part.name, arguments=part.arguments)
        made._native = part.native
        return made

    def to_part(self) -> ToolCallPart:
        if self.arguments is not None:
            return ToolCallPart(
                call_id=self.id, name=self.name, arguments=self.arguments, native=self._native
            )
        try:
            return ToolCallPart.from_input(call_id=self.id, name=self.name, input=self.input)
        except (ValueError, TypeError, RecursionError) as exc:  # what json.dumps refuses
            raise InvalidEvent(
                f"tool call {brief(self.id)}: its input has no JSON form ({str(exc)[:120]})"
            ) from None


ToolCallLike = ToolCall | Mapping[str, Any] | BaseModel
"""What `append_assistant(tool_calls=...)` takes: a `ToolCall`, an SDK's call, or a dict."""

_MUST = "tool_calls must be a list of tool calls (ToolCall, the SDK's calls or their dicts)"


def tool_calls(value: object) -> list[ToolCall]:
    """`value` as `ToolCall`s: a list (or any iterable) of `ToolCall`, the Chat Completions
    SDK's tool calls, Anthropic `tool_use` blocks, or their dicts; `None` (what the SDK's
    `message.tool_calls` holds when the model called nothing) is no call."""
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping | BaseModel) or not isinstance(value, Iterable):
        raise InvalidArgument(f"{_MUST}, got {described(value)}")
    return [_tool_call(n, call) for n, call in enumerate(value)]


def _tool_call(n: int, call: object) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, BaseModel) and isinstance(getattr(call, "type", None), str):
        call = call.model_dump(mode="json", exclude_unset=True)  # an SDK's call
    if not isinstance(call, Mapping):
        raise InvalidArgument(f"{_MUST}; tool_calls[{n}] is {described(call)}")
    kind = call.get("type")
    if "function" in call or "custom" in call or kind in ("function", "custom"):
        return ToolCall.from_openai(dict(call))
    if kind == "tool_use":  # Anthropic's block: its input is an object
        return ToolCall(id=call.get("id"), name=call.get("name"), input=call.get("input", {}))
    if kind is not None or not all(isinstance(key, str) for key in call):
        raise InvalidArgument(
            f"tool_calls[{n}]: a dict must be a Chat Completions tool call, an Anthropic "
            f"tool_use block or ToolCall's fields, got {brief(dict(call))}"
        )
    return ToolCall(**call)
