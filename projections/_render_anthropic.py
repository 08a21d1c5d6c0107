"""Rendering a live context for the Anthropic Messages API (`system` and `messages`).

The shared rules are in `sessionstore.projections._render` (every call answered right after it,
another provider's reasoning left out, its unmodelled items shown as their text). For this API, in
addition, so that a loop with extended thinking and tools is never refused:

- **Anthropic's blocks go back verbatim, in place.** A part recorded from Anthropic is its
  block as the API sent it (`thinking` with its `signature`, `redacted_thinking`, `text` with
  its citations, `tool_use`, server tool blocks, block types newer than this code), in the
  order the response had them. Nothing in a thinking block is ever changed: the API checks its
  signature, and refuses a modified one in the latest assistant turn.
- **A turn with thinking is the response it came from, alone.** The API refuses an assistant
  turn that holds thinking but does not start with it, so an assistant message with thinking
  blocks is never merged with the assistant message before or after it (merged, one
  response's thinking would follow the other's text). When two assistant turns meet that way,
  a user turn `CONTINUED` stands between them. Other consecutive messages of one role are
  merged into one turn, as the API requires alternating roles (tool results first, then the
  user's text).
- **One response is one turn, however it was stored.** Assistant messages whose envelopes
  (`native`) name the same Anthropic response `id` are merged into the first of them, with only
  tool results between them moved after it: Claude Code writes one transcript entry per
  content block (thinking, text, each parallel `tool_use`), and sometimes a call's result
  before the next call of the same response. Sent apart, the response's thinking would end a
  turn of its own and its later calls would start turns without it, which the API refuses.
- **No turn ends in thinking.** The API refuses an assistant turn whose last block is
  `thinking` or `redacted_thinking`. That happens only to a response cut off while thinking
  (`max_tokens`): no `tool_use` follows it and the API would drop it from the prompt anyway,
  so those trailing blocks are left out (and the turn, when nothing else is left).
- **No empty text.** A text block that is empty or whitespace only is refused; it is left out,
  even when Anthropic sent it. A final assistant turn loses its trailing whitespace (it
  would be a prefill).
- **Another provider's content:** its reasoning (Responses reasoning with `encrypted_content`,
  a summary) and reasoning recorded without Anthropic's block (older events, hand-built
  messages) are left out: a thinking block needs Anthropic's signature, and the text was never
  conversation. Its unmodelled items are shown as their text, or left out when they have none.
  Its text, files and tool calls are converted: a call's arguments become `input` when they
  are a JSON object, else `{"_arguments": "<the text>"}`; a call id outside Anthropic's
  pattern `^[a-zA-Z0-9_-]+$` (`functions.read:0`) is rewritten the same way in the `tool_use`
  and its `tool_result` (each other character becomes `_`, then `_` and 8 hex digits of its
  SHA-256, so distinct ids stay distinct). Files in an assistant turn are mentioned as text:
  the API takes them in user turns only.
- **Tool results** show what the model is shown: the original, the truncated view, or the
  prune placeholder; a compaction summary is a user turn holding its text.
- **A compaction block opens the conversation.** After Anthropic compacted (its `compaction`
  block, recorded as a summary: `sessionstore.projections._provider_compaction`), the live
  context starts with the assistant turn that holds the block, and it is sent first, with no
  `CONTINUED` before it: the API reads nothing before a compaction block. What the response
  said after the block is sent in the same turn, thinking included, as the API returned it.

What no render can do: with thinking enabled, the API requires the assistant turn of the
latest `tool_use` to start with a thinking block. When that call came from another provider
(or was recorded without its thinking), the request is refused; no signature can be made up.
Switch providers at a turn boundary (after a final answer), or send that request without
`thinking`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from sessionstore.events import ANTHROPIC, parsed_arguments
from sessionstore.projections._live import LiveMessage
from sessionstore.projections._provider_compaction import COMPACTION
from sessionstore.projections._render import (
    CONTINUED,
    JsonDict,
    Shown,
    api_order,
    file_mention,
    foreign_text,
    is_native,
    is_redacted_file,
    native_block,
    plain,
    result_content,
)

THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_IN_TOOL_ID = re.compile(r"[^a-zA-Z0-9_-]")


def to_anthropic(messages: Sequence[LiveMessage | Shown]) -> JsonDict:
    """`{"system": ..., "messages": [...]}` for the Messages API: system text apart, tool calls
    as `tool_use` blocks, results as `tool_result` blocks in a user turn; turns shaped as the
    module says."""
    system: list[str] = []
    turns: list[JsonDict] = []
    alone = False  # whether the last turn holds thinking, and so takes nothing more
    for message in api_order(one_turn_per_response(plain(messages))):
        if message["role"] == "system":
            system.extend(p["text"] for p in message["parts"] if p["type"] == "text")
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = [block for part in message["parts"] for block in _anthropic_blocks(part, role)]
        if role == "assistant":
            while blocks and blocks[-1]["type"] in THINKING_BLOCKS:
                blocks.pop()
        if not blocks:
            continue
        thinks = role == "assistant" and any(b["type"] in THINKING_BLOCKS for b in blocks)
        if turns and turns[-1]["role"] == role and not (alone or thinks):
            turns[-1]["content"].extend(blocks)
            continue
        if role == "assistant" and turns and _compaction_only(turns[-1]):
            # the response that held the block goes on in its turn, thinking and all, as sent
            turns[-1]["content"].extend(blocks)
            alone = thinks
            continue
        if turns and turns[-1]["role"] == role == "assistant":
            turns.append({"role": "user", "content": [{"type": "text", "text": CONTINUED}]})
        turns.append({"role": role, "content": blocks})
        alone = thinks
    if turns and turns[0]["role"] == "assistant" and turns[0]["content"][0]["type"] != COMPACTION:
        # a compaction block opens the conversation: the API takes it first, and drops
        # whatever is sent before it
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONTINUED}]})
    if turns and turns[-1]["role"] == "assistant":
        _strip_final_whitespace(turns)
    if not system:
        return {"messages": turns}
    return {"system": "\n\n".join(system), "messages": turns}


def _compaction_only(turn: JsonDict) -> bool:
    """Whether a turn is an assistant's compaction block alone (the summary of a compaction
    the provider made, recorded apart from the rest of its response)."""
    return turn["role"] == "assistant" and all(b["type"] == COMPACTION for b in turn["content"])


def one_turn_per_response(messages: Sequence[Shown]) -> list[Shown]:
    """The messages with each Anthropic response that was stored as several assistant messages
    merged into its first one (see the module); messages of no known response are as they
    were."""
    out: list[Shown] = []
    last: int | None = None  # index in `out` of the last assistant message, if only tool
    # results followed it
    for message in messages:
        if message["role"] == "tool":
            out.append(message)
            continue
        if message["role"] != "assistant":
            out.append(message)
            last = None
            continue
        response = _response_id(message)
        if last is not None and response is not None and _response_id(out[last]) == response:
            merged = out[last]
            out[last] = {
                **merged,
                "parts": [*merged["parts"], *message["parts"]],
                "tokens": merged["tokens"] + message["tokens"],
                "usage": message.get("usage") or merged.get("usage"),
                "pinned": merged["pinned"] or message["pinned"],
            }
            continue
        out.append(message)
        last = len(out) - 1
    return out


def _response_id(message: Shown) -> str | None:
    """The Anthropic response a message was recorded from: its envelope's `id`, or, for a
    message imported from Claude Code (its entries as the envelope), their `message.id`."""
    native = message.get("native")
    value = native["value"] if native is not None else None
    if native is None or not isinstance(value, dict):
        return None
    if native["api"] == ANTHROPIC:
        response = value.get("id")
    elif native["api"] == CLAUDE_CODE_ENTRIES:
        entries = value.get("entries")
        first = entries[0] if isinstance(entries, list) and entries else None
        body = first.get("message") if isinstance(first, dict) else None
        response = body.get("id") if isinstance(body, dict) else None
    else:
        return None
    return response if isinstance(response, str) and response else None


CLAUDE_CODE_ENTRIES = "claude-code"
"""The api of a Claude Code import's envelope: `{"entries": [<entry without its content>]}`."""


def _strip_final_whitespace(turns: list[JsonDict]) -> None:
    """The API refuses a final assistant turn ending in whitespace (it would be a prefill)."""
    content = turns[-1]["content"]
    last = content[-1]
    if last["type"] == "text":
        last["text"] = last["text"].rstrip()


def _anthropic_blocks(part: JsonDict, role: str) -> list[JsonDict]:
    if is_native(part, ANTHROPIC):
        native = native_block(part)  # thinking with its signature, tool_use, server tools...
        if native.get("type") == "text" and not str(native.get("text", "")).strip():
            return []
        return [native]
    kind = part["type"]
    if kind in ("reasoning", "native"):
        text = foreign_text(part)
        return [{"type": "text", "text": text}] if text and text.strip() else []
    if kind == "text":
        return [{"type": "text", "text": part["text"]}] if part["text"].strip() else []
    if kind == "tool_call":
        arguments = part.get("arguments", "{}")
        return [
            {
                "type": "tool_use",
                "id": tool_id(part["call_id"]),
                "name": part["name"],
                "input": _tool_input(arguments),
            }
        ]
    if kind == "tool_result":
        block: JsonDict = {"type": "tool_result", "tool_use_id": tool_id(part["call_id"])}
        block["content"] = result_content(part, ANTHROPIC)
        if part.get("is_error"):
            block["is_error"] = True
        return [block]
    if role == "assistant" or is_redacted_file(part):  # images and documents: user turns only
        return [{"type": "text", "text": file_mention(part)}]
    return [_anthropic_file(part)]


def tool_id(call_id: str) -> str:
    """`call_id` as Anthropic accepts a tool use id: unchanged when it fits the pattern, else
    a stand-in (see the module) that the call and its result share."""
    if _TOOL_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_NOT_IN_TOOL_ID.sub('_', call_id)}_{digest}"


def _tool_input(arguments: str) -> JsonDict:
    """A call's arguments as a `tool_use`'s `input`: the JSON object they hold, else
    `{"_arguments": "<the text>"}` (see the module)."""
    parsed = parsed_arguments(arguments)
    return parsed if isinstance(parsed, dict) else {"_arguments": arguments}


def _anthropic_file(part: JsonDict) -> JsonDict:
    media_type: str = part["media_type"]
    if part.get("url") is not None:
        source: JsonDict = {"type": "url", "url": part["url"]}
    else:
        source = {"type": "base64", "media_type": media_type, "data": part.get("data")}
    if media_type.startswith("image/"):
        return {"type": "image", "source": source}
    if media_type == "application/pdf":
        return {"type": "document", "source": source}
    return {"type": "text", "text": file_mention(part)}
