"""Messages and their parts: what an agent loop sends to and receives from a model.

Every part has a stable `id` so later events (prunes, restores, pins) can name it. Models are
frozen: a message, once appended, is never edited; later events change only how it is shown.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from sessionstore.events._arguments import ArgumentModel
from sessionstore.events._ids import new_id

Role = Literal["system", "user", "assistant", "tool"]
TokenCount = Annotated[int | None, Field(default=None, ge=0)]


class FrozenModel(BaseModel):
    """Immutable, closed models: an unknown field is an error, not silently dropped."""

    model_config = ConfigDict(frozen=True, extra="forbid")


ANTHROPIC = "anthropic.messages"
OPENAI_CHAT = "openai.chat"
OPENAI_RESPONSES = "openai.responses"


class Native(FrozenModel):
    """What a provider sent, verbatim: a content block, an output item or a message envelope,
    as the API named by `api` shaped it (`ANTHROPIC`, `OPENAI_CHAT`, `OPENAI_RESPONSES`).

    A part keeps its provider's own block next to sessionstore's normalised view (its text,
    call, reasoning): folds, policies, token counts and summaries read the view; a render for
    the same API sends the block back unchanged (a thinking block with its signature, a
    Responses item with its id and `encrypted_content`)."""

    api: str = Field(min_length=1)
    value: JsonValue

    def is_from(self, api: str) -> bool:
        return self.api == api


def _absent(value: object) -> bool:
    return value is None


NativeField = Annotated[Native | None, Field(default=None, exclude_if=_absent)]
"""Stored only when present: a message without one encodes (and hashes) as it always did."""


class Truncation(FrozenModel):
    """How a tool output (or a user message's text) was cut before the model saw it; the full
    text stays in the part."""

    shown: str
    direction: Literal["head", "tail"]
    max_lines: int = Field(gt=0)
    max_bytes: int = Field(gt=0)
    omitted_lines: int = Field(ge=0)
    omitted_bytes: int = Field(ge=0)
    output_tokens: TokenCount = None
    """Tokens of the full output, for when it is restored (the part's `tokens` count `shown`)."""


class TextPart(FrozenModel):
    """Text. A user message's text over the session's size limit carries a `truncation`:
    `text` is then the original, in full, and the model is shown `truncation.shown` (`tokens`
    counts that view), until `Session.restore` brings the original back."""

    type: Literal["text"] = "text"
    id: str = Field(default_factory=new_id, min_length=1)
    text: str
    tokens: TokenCount = None
    native: NativeField = None
    truncation: Annotated[Truncation | None, Field(default=None, exclude_if=_absent)] = None
    """Stored only when present: a text part without one encodes (and hashes) as it always
    did."""

    @property
    def shown(self) -> str:
        """The text the model was shown: the truncated view when there is one."""
        return self.truncation.shown if self.truncation is not None else self.text


class ReasoningPart(FrozenModel):
    """A model's reasoning: `text` is what is readable of it (a thinking block's text, a
    Responses reasoning summary; empty when redacted or encrypted). The provider's block, with
    its signature or `encrypted_content`, is in `native`: only a render for that provider sends
    it back."""

    type: Literal["reasoning"] = "reasoning"
    id: str = Field(default_factory=new_id, min_length=1)
    text: str
    tokens: TokenCount = None
    native: NativeField = None


class ToolCallPart(FrozenModel):
    """One tool call of an assistant message.

    `arguments` is the JSON text exactly as the model produced it (the OpenAI wire form), so a
    call with malformed arguments is recorded as it happened and numbers keep their text. Pass
    `input={...}` to build it from an object instead; `.input` parses it back.
    """

    type: Literal["tool_call"] = "tool_call"
    id: str = Field(default_factory=new_id, min_length=1)
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str = "{}"
    tokens: TokenCount = None
    native: NativeField = None

    @classmethod
    def from_input(
        cls,
        *,
        call_id: str,
        name: str,
        input: object,
        id: str | None = None,
        tokens: int | None = None,
    ) -> ToolCallPart:
        """A call built from an arguments object, kept as its canonical JSON text."""
        arguments = json.dumps(
            input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        if id is None:
            return cls(call_id=call_id, name=name, arguments=arguments, tokens=tokens)
        return cls(id=id, call_id=call_id, name=name, arguments=arguments, tokens=tokens)

    @property
    def input(self) -> JsonValue:
        """The arguments parsed as JSON, or `None` when the model produced invalid JSON."""
        return parsed_arguments(self.arguments)


def parsed_arguments(arguments: str) -> JsonValue:
    """A call's arguments parsed as JSON, or `None` when the model produced invalid JSON."""
    try:
        parsed: JsonValue = json.loads(arguments)
    except ValueError:
        return None
    return parsed


class ToolResultPart(FrozenModel):
    """The result of one tool call. `output` is always the original, in full; `tokens` counts
    what the model is shown (`shown`)."""

    type: Literal["tool_result"] = "tool_result"
    id: str = Field(default_factory=new_id, min_length=1)
    call_id: str = Field(min_length=1)
    name: str | None = None
    output: str
    is_error: bool = False
    truncation: Truncation | None = None
    tokens: TokenCount = None
    blocks: Annotated[
        tuple[TextPart | FilePart, ...] | None, Field(default=None, exclude_if=_absent)
    ] = None
    """The result as content blocks (text and images), when the tool gave more than text;
    `output` is then the text of its text blocks, which truncation and pruning act on."""
    native: NativeField = None
    """What a framework recorded this result as, verbatim, without the output the part holds
    (a Claude Code transcript entry, say): stored as a body like every part's `native`, so it
    is redacted and purged with the output. No render reads it: a result is sent as the model
    is shown it."""

    @property
    def shown(self) -> str:
        """The text the model was shown: the truncated view when there is one."""
        return self.truncation.shown if self.truncation is not None else self.output


class FilePart(FrozenModel):
    """A file or image, by URL or inline base64 data."""

    type: Literal["file"] = "file"
    id: str = Field(default_factory=new_id, min_length=1)
    media_type: str = Field(min_length=1)
    filename: str | None = None
    url: str | None = None
    data: str | None = None
    tokens: TokenCount = None
    native: NativeField = None

    @model_validator(mode="after")
    def _has_content(self) -> FilePart:
        if (self.url is None) == (self.data is None):
            raise ValueError("a file part needs exactly one of url or data")
        return self


class NativePart(FrozenModel):
    """A block or item of a kind sessionstore does not model (a server tool call and its
    result, a hosted tool call, a block type newer than this code): kept, never dropped. A render
    for its own API sends `native` back as it came; other renders show `text` (a short
    description, or nothing when empty)."""

    type: Literal["native"] = "native"
    id: str = Field(default_factory=new_id, min_length=1)
    native: Native
    text: str = ""
    tokens: TokenCount = None


Part = Annotated[
    TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart | NativePart,
    Field(discriminator="type"),
]

_PARTS_BY_ROLE: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text", "file", "native"}),
    "assistant": frozenset({"text", "reasoning", "tool_call", "file", "native"}),
    "tool": frozenset({"tool_result"}),
}


class Record(FrozenModel):
    """A framework's or a source format's entry that is not a message (a Claude Code `summary`
    or `file-history-snapshot` line, an ADK event that only changes state), kept verbatim in
    its parts' `native`: in the log, its exports and audits, never in the context. `kind` says
    what it is, for readers of the timeline. Its content is stored as bodies like a message's,
    so a secret in it can be redacted by part id."""

    id: str = Field(default_factory=new_id, min_length=1)
    kind: str = Field(min_length=1, max_length=128)
    parts: tuple[NativePart, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_part_ids(self) -> Record:
        ids = [part.id for part in self.parts]
        if len(set(ids)) != len(ids):
            raise ValueError("part ids must be unique within a record")
        return self


class Usage(FrozenModel, ArgumentModel):
    """Token usage a provider reported for one assistant response, Anthropic's way: `input`
    counts the prompt tokens read neither from nor into the cache, so the whole prompt is
    `input + cache_read + cache_write`. From OpenAI, pass `input=prompt_tokens -
    cached_tokens, cache_read=cached_tokens`. A bad count raises `InvalidArgument`."""

    input: int = Field(default=0, ge=0)
    output: int = Field(default=0, ge=0)
    cache_read: int = Field(default=0, ge=0)
    cache_write: int = Field(default=0, ge=0)
    iterations: Annotated[tuple[JsonValue, ...] | None, Field(default=None, exclude_if=_absent)] = (
        None
    )
    """The provider's own breakdown of the response by sampling iteration, verbatim (Anthropic's
    `usage.iterations`: a server-side compaction's cost is reported there, and only there: the
    counts above leave it out). Stored only when present, so a usage without it encodes (and
    hashes) as it always did."""


class Message(FrozenModel):
    id: str = Field(default_factory=new_id, min_length=1)
    role: Role
    parts: tuple[Part, ...] = Field(min_length=1)
    usage: Usage | None = None
    native: NativeField = None
    """The provider's envelope of this message, verbatim, without its content (Anthropic's
    `id`, `model`, `stop_reason`, raw `usage`; a Responses `id`, `status`, `usage`; a Chat
    Completions message's `refusal`): what the normalised fields leave out."""

    @model_validator(mode="after")
    def _parts_fit_role(self) -> Message:
        allowed = _PARTS_BY_ROLE[self.role]
        for part in self.parts:
            if part.type not in allowed:
                raise ValueError(f"a {self.role} message cannot hold a {part.type} part")
        ids = [part.id for part in self.parts]
        if len(set(ids)) != len(ids):
            raise ValueError("part ids must be unique within a message")
        if self.usage is not None and self.role != "assistant":
            raise ValueError("only assistant messages carry usage")
        return self
