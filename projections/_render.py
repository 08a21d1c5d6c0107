"""Rendering a live context for a model API: what every render shares.

Every render goes through `api_messages`, which makes the context valid for any tool-calling
API: each assistant message with tool calls is followed at once by one result per call, in call
order. A result written later (after a user interjected) is moved up to its call; a call with
no result yet (the loop stopped between the call and its result) gets an error result saying
so; a result whose call is no longer live is left out. The stored log is never changed by this.

The rules for content one provider produced and another is sent (`_render_anthropic`,
`_render_openai`, `_render_responses` apply them):
- a part recorded from the API being rendered goes back as its provider sent it (`native`),
  in its original place in the message: Anthropic thinking blocks with their signatures,
  Responses items with their ids, status and `encrypted_content`;
- reasoning recorded from another provider is left out (no API accepts another's reasoning,
  and its readable text was never meant as conversation);
- another provider's unmodelled block (`NativePart`) is shown as its `text`, or left out when
  it has none;
- text, tool calls, tool results and files are converted, whoever produced them.

Tool results with content blocks (text and images, `LiveToolResult.blocks`) are sent as blocks
while the result is shown in full (original or restored); a truncated or pruned one shows only
its text, the truncated view or the placeholder (`result_content`):
- Anthropic: the `tool_result`'s `content` is its text and image blocks;
- Responses: the `function_call_output`'s `output` is its `input_text` and `input_image` items;
- Chat Completions takes only text in a `tool` message: the text blocks are its content parts,
  each image is replaced there by `IMAGE_MOVED`, and the images follow in one user message
  right after the turn's tool messages, those of each result after the line
  `TOOL_IMAGES.format(call_id=...)` (`chat_images`), so the model still sees them, after
  every result of the turn as the API requires;
- empty text blocks are left out (Anthropic refuses them); a result left with no block at all
  sends its text.

What a render sends is what its token count counts (`sent_tokens`): `Context.tokens_for(api)`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sessionstore.events import (
    ANTHROPIC,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    REDACTED_PREFIX,
)
from sessionstore.projections._live import LiveMessage, estimate_tokens, stored_tokens

INTERRUPTED = "[No result: the tool call was interrupted before it returned.]"
CONTINUED = "[The conversation continues from here.]"
"""Anthropic's first turn must be the user's: this stands in when the context opens with an
assistant turn (a pinned one kept before a summary, say)."""

IMAGE_MOVED = "[image: sent in the user message after the tool results]"
TOOL_IMAGES = "[Images from the result of tool call {call_id}:]"
"""Chat Completions takes no image in a tool message: see the module's rules."""

APIS = (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES)

JsonDict = dict[str, Any]
Shown = dict[str, Any]
"""A live message as the renders read it: the JSON of its `LiveMessage`, parts included
(`ContextFold.shown_messages`). Renders never change it."""


def plain(messages: Sequence[LiveMessage | Shown]) -> list[Shown]:
    """Live messages as the renders read them: a `LiveMessage` model as its JSON (a caller
    holding models, such as a strategy's summarizer), a plain one as it is."""
    return [m if type(m) is dict else m.model_dump() for m in messages]  # type: ignore[union-attr]


def api_messages(messages: Sequence[LiveMessage]) -> list[LiveMessage]:
    """The messages reordered so every tool call is answered right after it; see the module."""
    return [LiveMessage.model_validate(m) for m in api_order(plain(messages))]


def api_order(messages: Sequence[Shown]) -> list[Shown]:
    """`api_messages` on plain live messages: what every render sends, in order."""
    pending: dict[str, tuple[str, str]] = {}  # call_id -> (assistant message id, call part id)
    answers: dict[tuple[str, str], tuple[Shown, JsonDict]] = {}
    for message in messages:
        for part in message["parts"]:
            kind = part["type"]
            if kind == "tool_call":
                pending[part["call_id"]] = (message["id"], part["id"])
            elif kind == "tool_result":
                call = pending.pop(part["call_id"], None)
                if call is not None:
                    answers[call] = (message, part)

    out: list[Shown] = []
    for message in messages:
        if message["role"] == "tool":
            continue
        out.append(message)
        calls = [p for p in message["parts"] if p["type"] == "tool_call"]
        if not calls:
            continue
        results: list[tuple[Shown | None, JsonDict]] = []
        for tool_call in calls:
            answer = answers.get((message["id"], tool_call["id"]))
            results.append(answer if answer is not None else (None, _interrupted(tool_call)))
        out.extend(_group_results(results))
    return out


def _interrupted(call: JsonDict) -> JsonDict:
    return {
        "type": "tool_result",
        "id": f"interrupted-{call['id']}",
        "call_id": call["call_id"],
        "name": call["name"],
        "output": INTERRUPTED,
        "is_error": True,
        "tokens": estimate_tokens(INTERRUPTED),
        "status": "original",
    }


def _group_results(results: list[tuple[Shown | None, JsonDict]]) -> list[Shown]:
    """Consecutive results from one stored tool message stay one message (the usual case gives
    back the stored messages unchanged)."""
    groups: list[tuple[Shown | None, list[JsonDict]]] = []
    for owner, part in results:
        if groups and owner is not None and groups[-1][0] is owner:
            groups[-1][1].append(part)
        else:
            groups.append((owner, [part]))
    grouped = []
    for owner, parts in groups:
        if owner is not None and _holds_just(owner, parts):
            grouped.append(owner)
            continue
        grouped.append(
            {
                "id": owner["id"] if owner is not None else parts[0]["id"],
                "role": "tool",
                "parts": parts,
                "usage": None,
                "tokens": sum(p["tokens"] for p in parts),
                "pinned": owner["pinned"] if owner is not None else False,
                "summary": False,
            }
        )
    return grouped


def _holds_just(owner: Shown, parts: list[JsonDict]) -> bool:
    """Whether the stored tool message holds these results and nothing else, in this order."""
    held = owner["parts"]
    return len(held) == len(parts) and all(a is b for a, b in zip(held, parts, strict=True))


def is_native(part: JsonDict, api: str) -> bool:
    """Whether `part` was recorded from `api`, and so goes back to it as it came."""
    native = part.get("native")
    return native is not None and native["api"] == api


def native_block(part: JsonDict) -> JsonDict:
    """A part's provider block, as recorded (a copy: renders hand out fresh dicts)."""
    value = part["native"]["value"]
    assert isinstance(value, dict)
    copied: JsonDict = json.loads(json.dumps(value))
    return copied


def foreign_text(part: JsonDict) -> str | None:
    """What another provider's part (reasoning, or an unmodelled block) shows as (see the
    module's rules): `None` to leave out."""
    if part["type"] == "reasoning":
        return None
    return part.get("text") or None


def as_text(part: JsonDict) -> str | None:
    """How a part reads where only text can go (an assistant message of another API): a text
    part's text, a file's mention, another provider's part by `foreign_text`; `None` for the
    rest (calls and results have places of their own)."""
    kind = part["type"]
    if kind == "text":
        text: str = part["text"]
        return text
    if kind == "file":
        return file_mention(part)
    if kind in ("reasoning", "native"):
        return foreign_text(part)
    return None


def data_url(part: JsonDict) -> str:
    return f"data:{part['media_type']};base64,{part.get('data')}"


def file_mention(part: JsonDict) -> str:
    name = part.get("filename") or part.get("url") or "attached"
    return f"[file {name} ({part['media_type']})]"


def is_redacted_file(part: JsonDict) -> bool:
    """Whether a redaction left its placeholder where the file's URL or data was: no API takes
    that as an image or a document, so every render mentions the file as text instead."""
    return str(part.get("url") or part.get("data") or "").startswith(REDACTED_PREFIX)


# tool results as content blocks


def result_content(part: JsonDict, api: str) -> str | list[JsonDict]:
    """A tool result's content for `api`: its text (`output`), or its blocks in that API's
    shape while it is shown in full (see the module's rules)."""
    blocks = part.get("blocks")
    output: str = part["output"]
    if blocks is None:
        return output
    content: list[JsonDict] = []
    for block in blocks:
        if block["type"] == "text" or is_redacted_file(block):
            text = block["text"] if block["type"] == "text" else file_mention(block)
            if text:
                kind = "input_text" if api == OPENAI_RESPONSES else "text"
                content.append({"type": kind, "text": text})
        elif api == ANTHROPIC:
            content.append({"type": "image", "source": _anthropic_source(block)})
        elif api == OPENAI_RESPONSES:
            url = block.get("url") or data_url(block)
            content.append({"type": "input_image", "image_url": url, "detail": "auto"})
        else:
            content.append({"type": "text", "text": IMAGE_MOVED})
    return content or output


def chat_images(part: JsonDict) -> list[JsonDict]:
    """The user-message content that carries a result's images to Chat Completions: the line
    naming its call, then each image; empty when it shows none."""
    images = [
        b for b in part.get("blocks") or () if b["type"] == "file" and not is_redacted_file(b)
    ]
    if not images:
        return []
    text = TOOL_IMAGES.format(call_id=part["call_id"])
    content: list[JsonDict] = [{"type": "text", "text": text}]
    content.extend(
        {"type": "image_url", "image_url": {"url": image.get("url") or data_url(image)}}
        for image in images
    )
    return content


def _anthropic_source(image: JsonDict) -> JsonDict:
    if image.get("url") is not None:
        return {"type": "url", "url": image["url"]}
    return {"type": "base64", "media_type": image["media_type"], "data": image.get("data")}


# token accounting


def sent_tokens(messages: Sequence[LiveMessage | Shown], api: str) -> int:
    """Tokens of what the render for `api` sends of `messages`, from the counts recorded at
    append (nothing is re-tokenized):
    - every part the render sends counts its recorded tokens: text, tool calls, files and
      images (`FILE_TOKENS` each, whether sent as a file or mentioned), tool results as shown
      (original, truncated view, placeholder, or all their blocks);
    - reasoning counts only for the API it was recorded from, the one render that sends it
      (Anthropic, Responses: Chat Completions sends none); another provider's block
      (`NativePart`) counts its JSON for its own API and the estimate of its `text` for the
      others (nothing when it has none); Anthropic leaves blank text out, so it counts nothing
      there;
    - the synthetic result of a call that has none (`INTERRUPTED`) counts in every render, and
      a result whose call is not live counts in none, as `api_messages` sends them;
    - what a render adds around the parts (roles, JSON keys, `CONTINUED`, the lines that move
      Chat Completions' tool images) is not counted, as the providers' own overhead is not.
    """
    total = 0
    calls = answered = 0
    waiting: set[str] = set()  # call ids of the calls seen so far that no result answered
    for message in plain(messages):
        for part in message["parts"]:
            kind = part["type"]
            if kind == "tool_result":
                if part["call_id"] in waiting:  # else its call is not live: it is left out
                    waiting.discard(part["call_id"])
                    answered += 1
                    total += part["tokens"]
                continue
            if kind == "tool_call":
                calls += 1
                waiting.add(part["call_id"])
            total += _sent_part_tokens(part, api)
    return total + (calls - answered) * INTERRUPTED_TOKENS


INTERRUPTED_TOKENS = estimate_tokens(INTERRUPTED)


def _sent_part_tokens(part: JsonDict, api: str) -> int:
    # Chat Completions has no block of its own to send back: its render shows every
    # reasoning and unmodelled part as it shows another provider's
    own = api != OPENAI_CHAT and is_native(part, api)
    kind = part["type"]
    if kind == "reasoning":
        return stored_tokens(part) if own else 0
    if kind == "native" and not own:
        return estimate_tokens(part.get("text", ""))
    if kind == "text" and api == ANTHROPIC and not own and not part["text"].strip():
        return 0
    return stored_tokens(part)


def recorded_api(messages: Sequence[LiveMessage | Shown]) -> str:
    """The API the newest assistant message recorded from a provider came from (by
    `append_anthropic`, `append_openai` or `append_openai_response`: its envelope's `native`):
    the one the session talks to, whose render `Context.tokens` counts. `OPENAI_CHAT` when none
    was recorded from a provider."""
    for message in reversed(plain(messages)):
        native = message.get("native")
        if native is not None and native["api"] in APIS and message["role"] == "assistant":
            api: str = native["api"]
            return api
    return OPENAI_CHAT
