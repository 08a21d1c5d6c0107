"""Codex's Responses API items as our parts: what a rollout's `response_item` lines hold.

Codex keeps the model's conversation as OpenAI Responses items (`codex-rs/protocol/src/models.rs`,
`ResponseItem`), so each item is kept verbatim in a part's `native` (api `OPENAI_RESPONSES`), as
`sessionstore.providers._openai_responses.responses_message` keeps a response's output items, and
`to_responses()` sends it back as Codex sent it: a `reasoning` item with its `encrypted_content`
(never read as text: only its summary is), a `function_call` with its raw `arguments`.

Which side of the conversation an item stands on decides where it goes:
- the model's (`ASSISTANT_ITEMS`): a part of an assistant message;
- the harness's answers (`function_call_output`, `custom_tool_call_output`): tool results;
- the user's (`message` with role `user`, and `INPUT_ITEMS` such as a `tool_search_output`):
  a user message; `developer` and `system` messages are system messages;
- anything else (Codex's `ghost_snapshot`, types newer than this code) is not known to have
  been sent to a model: the reader keeps it as a record, out of the context.

Functions here raise `Malformed` for an item without the fields they read; the reader skips
that line and reports it.
"""

from __future__ import annotations

import json
from typing import Any

from sessionstore.events import (
    OPENAI_RESPONSES,
    FilePart,
    InvalidArgument,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.importers._common import Json, file_from_url
from sessionstore.providers import responses_message

CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
ASSISTANT_ITEMS = frozenset(
    {
        "reasoning",
        *CALLS,
        "web_search_call",
        "image_generation_call",
        "file_search_call",
        "code_interpreter_call",
        "computer_call",
        "tool_search_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "shell_call",
        "apply_patch_call",
        "compaction",
        "compaction_summary",  # Codex's older name for `compaction`
    }
)
"""Items a model produces (besides an assistant `message`): parts of an assistant message."""

INPUT_ITEMS = frozenset(
    {
        "tool_search_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_approval_response",
    }
)
"""Items the harness sends the model that are not a call's result we model: kept in a user
message, which `to_responses()` sends as items of their own, in place."""

SYSTEM_ROLES = frozenset({"developer", "system"})
LOCAL_SHELL = "local_shell"
"""The tool name a `local_shell_call` (which has none) is given."""

CONTEXT_TAGS = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions",
    "<skill>",
    "<skills_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<hook_prompt",
)
"""How the user-role messages Codex writes itself begin (`is_contextual_user_message_content`
in codex-rs): the environment, AGENTS.md, a skill's body, a shell command the user ran, an
aborted turn, a subagent's notice. They were sent to the model, so they stay in the context,
marked as injected; they do not start a user turn."""


class Malformed(Exception):
    """An item without the fields its type needs: the line holding it is skipped."""


def text_of(value: Json, key: str, what: str) -> str:
    found = value.get(key)
    if not isinstance(found, str):
        raise Malformed(f"{what} has no string {key!r}")
    return found


def nonempty(value: Json, key: str, what: str) -> str:
    found = text_of(value, key, what)
    if not found:
        raise Malformed(f"{what} has an empty {key!r}")
    return found


def content_of(item: Json) -> list[Json]:
    content = item.get("content")
    if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
        raise Malformed("a message item has no list of content objects")
    return content


def is_injected(item: Json) -> bool:
    """Whether a user-role message is context Codex wrote itself (see `CONTEXT_TAGS`)."""
    return any(
        isinstance(text := c.get("text"), str) and text.lstrip().lower().startswith(CONTEXT_TAGS)
        for c in content_of(item)
    )


def input_parts(item: Json, role: str) -> list[Part]:
    """A user, developer or system message's content as our parts: text as text, an image as a
    file (in a system message, which holds only text, a described text part), an entry of
    another type verbatim in a native part (so the Responses render sends it back as it came).
    The item itself, verbatim, is the message's `native`."""
    parts: list[Part] = []
    for content in content_of(item):
        kind = content.get("type")
        text = content.get("text")
        if kind in ("input_text", "output_text", "text") and isinstance(text, str):
            parts.append(TextPart(text=text))
        elif role == "user" and kind == "input_image" and isinstance(content.get("image_url"), str):
            parts.append(file_from_url(content["image_url"]))
        elif role == "user":
            native = Native(api=OPENAI_RESPONSES, value=content)
            parts.append(NativePart(native=native, text=f"[{kind}]"))
        else:
            parts.append(TextPart(text=f"[{kind}]"))
    return parts or [TextPart(text="")]


def assistant_part(item: Json) -> Part:
    """One item the model produced, verbatim in the part's `native`."""
    kind = item["type"]
    native = Native(api=OPENAI_RESPONSES, value=item)
    if kind == "message":
        pieces = []
        for content in content_of(item):
            if content.get("type") == "output_text" and isinstance(content.get("text"), str):
                pieces.append(content["text"])
            elif content.get("type") == "refusal" and isinstance(content.get("refusal"), str):
                pieces.append(content["refusal"])
        return TextPart(text="".join(pieces), native=native)
    if kind == "reasoning":
        return ReasoningPart(text=reasoning_text(item), native=native)
    if kind == "function_call":
        return ToolCallPart(
            call_id=nonempty(item, "call_id", "a function_call"),
            name=nonempty(item, "name", "a function_call"),
            arguments=text_of(item, "arguments", "a function_call"),
            native=native,
        )
    if kind == "custom_tool_call":
        return ToolCallPart(
            call_id=nonempty(item, "call_id", "a custom_tool_call"),
            name=nonempty(item, "name", "a custom_tool_call"),
            arguments=text_of(item, "input", "a custom_tool_call"),
            native=native,
        )
    if kind == "local_shell_call" and isinstance(item.get("call_id"), str) and item["call_id"]:
        # Codex answers it with a `function_call_output`: a call like any other
        action = json.dumps(item.get("action"), ensure_ascii=False, sort_keys=True)
        return ToolCallPart(
            call_id=item["call_id"], name=LOCAL_SHELL, arguments=action, native=native
        )
    try:  # a hosted or newer item: described for other APIs, as a response's would be
        [part] = responses_message({"output": [item]}).parts
    except (InvalidArgument, ValueError):
        return NativePart(native=native, text=f"[{kind}]")
    return part if isinstance(part, NativePart) else NativePart(native=native, text=f"[{kind}]")


def reasoning_text(item: Json) -> str:
    """The readable part of a reasoning item: its summary, else its raw reasoning text; never
    its `encrypted_content`."""
    summary = item.get("summary")
    if summary is not None and not isinstance(summary, list):
        raise Malformed("a reasoning item's summary is not a list")
    texts = _texts(summary or [], "summary_text")
    content = item.get("content")
    return texts or (_texts(content, "reasoning_text", "text") if isinstance(content, list) else "")


def _texts(entries: list[Any], *kinds: str) -> str:
    return "\n\n".join(
        entry["text"]
        for entry in entries
        if isinstance(entry, dict)
        and entry.get("type") in kinds
        and isinstance(entry.get("text"), str)
    )


def result_part(item: Json, name: str | None) -> tuple[ToolResultPart, Json]:
    """A call's output as a tool result, and what the tool message's `native` keeps of the item
    (all of it but a text `output`, which the part holds). Codex writes `output` as text, as
    Responses content items (text and images, kept as the result's blocks), or (older
    versions) as `{"content": ..., "success": ...}`."""
    call_id = nonempty(item, "call_id", f"a {item['type']}")
    output = item.get("output")
    is_error = False
    blocks: tuple[TextPart | FilePart, ...] | None = None
    if isinstance(output, str):
        text = output
        kept = {key: value for key, value in item.items() if key != "output"}
    elif isinstance(output, dict) and isinstance(output.get("content"), str):
        text, is_error, kept = output["content"], output.get("success") is False, item
    elif isinstance(output, list) and all(isinstance(entry, dict) for entry in output):
        blocks = tuple(_output_block(entry) for entry in output)
        text = "\n".join(b.text for b in blocks if isinstance(b, TextPart))
        kept = item
    else:
        raise Malformed(f"a {item['type']} has no output")
    part = ToolResultPart(call_id=call_id, name=name, output=text, is_error=is_error, blocks=blocks)
    return part, kept


def _output_block(entry: Json) -> TextPart | FilePart:
    if entry.get("type") == "input_image" and isinstance(entry.get("image_url"), str):
        return file_from_url(entry["image_url"])
    if isinstance(entry.get("text"), str):
        return TextPart(text=entry["text"])
    return TextPart(text=json.dumps(entry, ensure_ascii=False))


def input_item_part(item: Json) -> Part:
    """An item the harness sent that is not a message nor a call's output, kept verbatim."""
    native = Native(api=OPENAI_RESPONSES, value=item)
    return NativePart(native=native, text=f"[{item['type']}]")


def summary_part(item: Json) -> Part:
    """An item a compaction's replacement history adds, verbatim: a message as text (sent to
    the Responses API as the item it is), anything else (the encrypted `compaction` item) as
    a native part."""
    native = Native(api=OPENAI_RESPONSES, value=item)
    if item.get("type") == "message":
        try:
            text = "".join(c["text"] for c in content_of(item) if isinstance(c.get("text"), str))
        except Malformed:
            text = ""
        return TextPart(text=text, native=native)
    return NativePart(native=native, text=f"[{item.get('type')}]")
