"""Rendering a live context for the OpenAI Responses API (`input`, a list of items).

What was recorded from the Responses API goes back as it came, each item in its place: `message`
items with their id, status and annotations, `reasoning` items with their id, summary and
`encrypted_content` (which a stateless caller, `store=False`, must send back; the API decrypts
it only under the item's own id), `function_call` items with `id`, `call_id` and `status`,
custom, hosted and MCP items, and item types newer than this code. The exceptions, each from
the API's rules:
- output-only fields are left out: `created_by` (server-assigned, on any item and on each
  chunk of a `shell_call_output`) and a `custom_tool_call_output`'s `status`; the API's input
  items have no such fields and it answers `Unknown parameter`; so is a `custom_tool_call`'s
  `status`, which Codex records and no type of the SDK has;
- items Codex recorded (imported rollouts) go back as Codex itself sends them, which is
  what its own requests show the API accepts (`codex-rs` serialises `ResponseItem` with every
  `id` skipped, so its rollouts hold none either): a `reasoning` item without an `id` (its
  `encrypted_content` is what the API reads back), a `web_search_call` without one, an
  assistant `message` with an `id` but no `status` (as some rollouts have them). The SDK's
  input types require the `id`, and the message's `status`: they describe the output items
  returned, and are stricter there than the API. Where a form both accept exists it is sent:
  an assistant `message` with neither goes as the input message it is (its text, its
  `phase`), and a reasoning item's null `content` is left out;
- a `reasoning` item must be directly followed by the item it produced ("Item of type
  'reasoning' was provided without its required following item"). All items of one response
  are one message, so a revert, a compaction or a prune keeps or removes them together; but a
  response can end in a reasoning item (it stopped at `max_output_tokens`): a reasoning item
  that nothing of its message follows is left out;
- the other way round, an item sent with its `id` needs the reasoning item it followed ("Item
  'fc_…' of type 'function_call' was provided without its required 'reasoning' item"): a
  response whose reasoning a prune cleared (an older turn's, `LiveMessage.reasoning_cleared`)
  is sent as another provider's would be, without ids.

What the loop writes goes in as input: system text as a `developer` message (the Responses
API's role for the application's instructions; a `system` message is the platform's, and
reasoning models take the developer's), user text and files as a `message` with `input_text`,
`input_image` and `input_file` content, a compaction summary as the user message it is. A
Responses item kept in a user message (an `mcp_approval_response`, a `computer_call_output`) is
sent as an item of its own, in its place; a Responses content part (`input_text`...) stays
content of the message.

Every tool result is a `function_call_output` right after its call (the calls of one response
first, then their outputs, in call order), or a `custom_tool_call_output` for a custom tool
call; a pruned one shows its placeholder, a call with no result yet is answered as interrupted
(see `api_messages`).

What another provider produced (the rules of `sessionstore.projections._render`, for this API):
- its text and files, in order, are one assistant `message` (string content) between the
  items of its tool calls, where they stood;
- its tool calls are `function_call` items with `call_id`, `name` and `arguments` as recorded
  (no `id` or `status`: those are the Responses API's own); a Chat Completions custom tool call
  is a `custom_tool_call` with its `input`, answered by a `custom_tool_call_output`;
- its reasoning (Anthropic thinking and redacted thinking, with their signatures) is left out:
  no API accepts another's reasoning;
- its unmodelled blocks (Anthropic server tool use and results) show their `text` as
  assistant text, or are left out when they have none.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionstore.events import OPENAI_CHAT, OPENAI_RESPONSES
from sessionstore.projections._live import LiveMessage
from sessionstore.projections._render import (
    JsonDict,
    Shown,
    api_order,
    as_text,
    data_url,
    file_mention,
    foreign_text,
    is_native,
    is_redacted_file,
    native_block,
    plain,
    result_content,
)

ROLES = {"system": "developer", "user": "user"}

CONTENT_TYPES = frozenset({"input_text", "input_image", "input_file"})
"""Responses content parts: in a user message, these are the message's content; any other
Responses type there is an input item of its own."""

OUTPUT_ONLY = {"custom_tool_call_output": ("status",), "custom_tool_call": ("status",)}
"""Fields the API sets on an output item of this type but does not take back as input (besides
`created_by`, which no input item takes). A `custom_tool_call`'s `status` is in no type of the
SDK, input or output; Codex records it (and sends it back): left out, the call is what the
API's input type describes."""

INPUT_MESSAGE_KEYS = frozenset({"type", "role", "content", "phase"})
"""What an assistant `message` item recorded without its `id` and `status` may hold to go back
as the input message it is (`_as_input_message`)."""


def to_responses(messages: Sequence[LiveMessage | Shown]) -> list[JsonDict]:
    """The `input` item list for `client.responses.create(input=...)`."""
    items: list[JsonDict] = []
    custom_calls: set[str] = set()
    for message in api_order(plain(messages)):
        role = message["role"]
        if role == "tool":
            items.extend(
                _result_item(part, part["call_id"] in custom_calls)
                for part in message["parts"]
                if part["type"] == "tool_result"
            )
        elif role == "assistant":
            own = not message.get("reasoning_cleared", False)
            items.extend(_assistant_items(message["parts"], custom_calls, own=own))
        else:
            items.extend(_input_items(message["parts"], ROLES[role]))
    return items


def _assistant_items(
    parts: Sequence[JsonDict], custom_calls: set[str], *, own: bool = True
) -> list[JsonDict]:
    """A response's items; with `own=False` (its reasoning was cleared) as another provider's:
    the API refuses a `function_call` or `message` item sent with its `id` but without the
    reasoning item it followed."""
    items: list[JsonDict] = []
    texts: list[str] = []  # text of other providers, gathered into one assistant message

    def flush() -> None:
        if texts:
            items.append({"type": "message", "role": "assistant", "content": "\n\n".join(texts)})
            texts.clear()

    for part in parts:
        if own and is_native(part, OPENAI_RESPONSES):
            flush()
            item = sendable(native_block(part))
            if item.get("type") == "custom_tool_call" and part["type"] == "tool_call":
                custom_calls.add(part["call_id"])
            items.append(item)
        elif part["type"] == "tool_call":
            flush()
            items.append(_foreign_call(part, custom_calls))
        elif text := as_text(part):
            texts.append(text)
    flush()
    while items and items[-1].get("type") == "reasoning":
        items.pop()  # nothing of its response follows it: the API would refuse it
    return items


def sendable(item: JsonDict) -> JsonDict:
    """A recorded output item as an input item: without the fields only outputs carry; a
    reasoning item without its `content` when that is null; an assistant message without an
    id (as Codex records them) as the input message it is."""
    item.pop("created_by", None)
    kind = item.get("type")
    for key in OUTPUT_ONLY.get(str(kind), ()):
        item.pop(key, None)
    if kind == "shell_call_output" and isinstance(item.get("output"), list):
        for chunk in item["output"]:
            if isinstance(chunk, dict):
                chunk.pop("created_by", None)
    if kind == "reasoning" and "content" in item and item["content"] is None:
        del item["content"]  # null and absent say the same; the input type takes a list only
    if kind == "message" and item.get("role") == "assistant" and not {"id", "status"} & set(item):
        return _as_input_message(item)
    return item


def _as_input_message(item: JsonDict) -> JsonDict:
    """An assistant `message` item recorded without its `id` and `status` (as Codex records
    them: it never sends an id back) as the input message it is: its text as string content,
    its `phase` kept (the API asks for it back on every assistant message of models that
    write one). An output message needs both; the input message form is the one the API
    documents for an assistant's earlier turn. A message holding anything but `output_text`
    (a refusal, annotations) goes back as it was recorded."""
    content = item.get("content")
    if set(item) - INPUT_MESSAGE_KEYS or not isinstance(content, list):
        return item
    texts = []
    for part in content:
        if not isinstance(part, dict) or set(part) - {"type", "text", "annotations"}:
            return item
        text = part.get("text")
        plain = part.get("type") == "output_text" and not part.get("annotations")
        if not plain or not isinstance(text, str):
            return item
        texts.append(text)
    message: JsonDict = {"type": "message", "role": "assistant", "content": "".join(texts)}
    if item.get("phase") is not None:
        message["phase"] = item["phase"]
    return message


def _foreign_call(part: JsonDict, custom_calls: set[str]) -> JsonDict:
    """Another provider's tool call as a Responses call item."""
    arguments = part.get("arguments", "{}")
    if is_native(part, OPENAI_CHAT) and native_block(part).get("type") == "custom":
        custom_calls.add(part["call_id"])
        return {
            "type": "custom_tool_call",
            "call_id": part["call_id"],
            "name": part["name"],
            "input": arguments,
        }
    return {
        "type": "function_call",
        "call_id": part["call_id"],
        "name": part["name"],
        "arguments": arguments,
    }


def _result_item(part: JsonDict, custom: bool) -> JsonDict:
    kind = "custom_tool_call_output" if custom else "function_call_output"
    output = result_content(part, OPENAI_RESPONSES)
    return {"type": kind, "call_id": part["call_id"], "output": output}


def _input_items(parts: Sequence[JsonDict], role: str) -> list[JsonDict]:
    """A system or user message: its content as one `message`, split where a Responses item of
    its own stands among the parts."""
    items: list[JsonDict] = []
    content: list[JsonDict] = []

    def flush() -> None:
        if content:
            items.append({"type": "message", "role": role, "content": list(content)})
            content.clear()

    for part in parts:
        if is_native(part, OPENAI_RESPONSES):
            block = native_block(part)
            if block.get("type") in CONTENT_TYPES:
                content.append(block)
            else:
                flush()
                items.append(sendable(block))
        elif part["type"] == "text":
            content.append({"type": "input_text", "text": part["text"]})
        elif part["type"] == "file":
            sendable_file = role == "user" and not is_redacted_file(part)
            content.append(_input_file(part) if sendable_file else _mention(part))
        elif part["type"] == "native":
            text = foreign_text(part)
            if text:
                content.append({"type": "input_text", "text": text})
    flush()
    return items


def _mention(part: JsonDict) -> JsonDict:
    return {"type": "input_text", "text": file_mention(part)}


def _input_file(part: JsonDict) -> JsonDict:
    if str(part["media_type"]).startswith("image/"):
        url = part.get("url") or data_url(part)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if part.get("data") is not None:
        file: JsonDict = {"type": "input_file", "file_data": data_url(part)}
        if part.get("filename"):
            file["filename"] = part["filename"]
        return file
    return _mention(part)
