"""An Anthropic Messages API response (`anthropic.types.Message` or its dict) as a message.

Every content block is kept verbatim in its part's `native`, in the order the model produced
it, next to sessionstore's view of it:
- `thinking` (with its `signature`; its text may be empty when the API omits it) and
  `redacted_thinking` become reasoning parts, whose text is the readable thinking (empty when
  redacted);
- `text` (with its `citations`) becomes a text part;
- `tool_use` becomes a tool call, its `input` also as JSON text in the key order the model
  gave;
- every other block (`server_tool_use` and the server tools' results, `container_upload`,
  `compaction`, and types newer than this code) becomes a `NativePart`, whose `text` is a
  one-line stand-in for renders to other APIs (a compaction block's is its summary).

`to_anthropic()` sends every block back as it came (see
`sessionstore.projections._render_anthropic` for the few it leaves out). The response's envelope
without its content (`id`, `model`, `stop_reason`, the raw `usage`, `context_management`...) is
the message's `native`; `usage` is also read into `Usage`, its `iterations` verbatim. The same
conversion serves the Claude Code importer, whose assistant lines hold these blocks.

Anything that is not such a response raises `InvalidArgument`, before anything is written.
"""

from __future__ import annotations

from typing import Any

from sessionstore.events import (
    ANTHROPIC,
    InvalidArgument,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Usage,
)
from sessionstore.projections import compaction_item, compaction_text
from sessionstore.providers._sdk import arguments_text, as_json, assistant_message, count, field

WHAT = "an Anthropic message"


def anthropic_message(response: object) -> Message:
    data = as_json(response, WHAT)
    if data.get("role", "assistant") != "assistant":
        role = str(data.get("role"))[:40]
        raise InvalidArgument(f"{WHAT} has role {role!r}, not 'assistant'")
    blocks = field(data, "content", list, WHAT)
    parts: list[Part] = [anthropic_part(block) for block in blocks]
    envelope = {key: value for key, value in data.items() if key != "content"}
    return assistant_message(ANTHROPIC, parts, _usage(data.get("usage")), envelope)


def anthropic_part(block: Any) -> Part:
    """One content block of an assistant response as a part that keeps it (see the module).
    `block` must be JSON data (`as_json` made it so); `InvalidArgument` when it is not a block
    or a block sessionstore models lacks what it needs."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise InvalidArgument(f"{WHAT}: a content block is not an object with a type")
    native = Native(api=ANTHROPIC, value=block)
    kind = block["type"]
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"], native=native)
    if kind == "thinking":
        text = block.get("thinking")
        return ReasoningPart(text=text if isinstance(text, str) else "", native=native)
    if kind == "redacted_thinking":
        return ReasoningPart(text="", native=native)
    if kind == "tool_use":
        call_id, name, tool_input = block.get("id"), block.get("name"), block.get("input", {})
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            raise InvalidArgument(f"{WHAT}: a tool_use block needs an id and a name")
        return ToolCallPart(
            call_id=call_id, name=name, arguments=arguments_text(tool_input), native=native
        )
    if compaction_item(native) is not None:
        return NativePart(native=native, text=compaction_text(native))
    return NativePart(native=native, text=_stand_in(block))


def _stand_in(block: dict[str, Any]) -> str:
    """A one-line stand-in for a block other APIs cannot take: what a server tool was asked,
    what a web search found, else the block's type. (A compaction block shows its summary:
    `compaction_text`.)"""
    kind = block["type"]
    if kind == "server_tool_use":
        return f"[{block.get('name', 'server tool')} {arguments_text(block.get('input', {}))}]"
    content = block.get("content")
    if kind == "web_search_tool_result" and isinstance(content, list):
        found = [
            f"{result.get('title')} <{result.get('url')}>"
            for result in content
            if isinstance(result, dict) and result.get("type") == "web_search_result"
        ]
        return f"[web search results: {'; '.join(found) or 'none'}]"
    return f"[{kind}]"


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    iterations = usage.get("iterations")  # a server-side compaction's cost: kept verbatim
    return Usage(
        input=count(usage.get("input_tokens")),
        output=count(usage.get("output_tokens")),
        cache_read=count(usage.get("cache_read_input_tokens")),
        cache_write=count(usage.get("cache_creation_input_tokens")),
        iterations=tuple(iterations) if isinstance(iterations, list) else None,
    )
