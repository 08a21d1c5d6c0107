"""OpenCode's parts as ours, one at a time: a tool part's call and result, reasoning with its
provider's block, files, usage and times (`_opencode` reads messages with them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from sessionstore.events import (
    ANTHROPIC,
    OPENAI_RESPONSES,
    FilePart,
    ImportRefused,
    InvalidEvent,
    Native,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    brief,
    check_text,
)
from sessionstore.importers._common import Json, at_line, file_from_url
from sessionstore.providers import anthropic_part

OPENCODE = "opencode"
"""The `Native.api` of OpenCode's own JSON: no render sends it anywhere."""
_EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Result:
    """A tool part's result, when it was made, and whether OpenCode pruned it (and when)."""

    call_part: str
    part: ToolResultPart
    time: datetime | None
    pruned: bool
    pruned_at: datetime | None


def tool_part(part: Json, calls: set[str]) -> tuple[ToolCallPart, Result | None]:
    """A tool part's call, and its result when it has one. `calls` (the call ids made so far)
    gains its call id."""
    call_id, name, state = part.get("callID"), part.get("tool"), part.get("state")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise ImportRefused("a tool part without a 'callID' and a 'tool' name")
    if not isinstance(state, dict) or not isinstance(state.get("input", {}), dict):
        raise ImportRefused(f"tool call {brief(call_id)} has no 'state' with an 'input' object")
    if call_id in calls:
        raise ImportRefused(f"tool call id {brief(call_id)} is used twice")
    with at_line(None):
        arguments = json.dumps(state.get("input", {}), ensure_ascii=False, allow_nan=False)
        call = ToolCallPart(id=part["id"], call_id=call_id, name=name, arguments=arguments)
    status = state.get("status")
    output, is_error, blocks = None, False, None
    metadata = at(state, "metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if status == "completed":
        output = state.get("output")
        if not isinstance(output, str):
            raise ImportRefused(f"completed tool call {brief(call_id)} has no string 'output'")
        blocks = attachments(state.get("attachments"), output)
    elif status == "error":
        interrupted = metadata.get("interrupted") is True and isinstance(
            metadata.get("output"), str
        )
        output = metadata["output"] if interrupted else state.get("error")
        is_error = not interrupted
        if not isinstance(output, str):
            raise ImportRefused(f"failed tool call {brief(call_id)} has no string 'error'")
    elif status not in ("pending", "running"):
        raise ImportRefused(f"tool call {brief(call_id)} has status {brief(status)}")
    calls.add(call_id)
    if output is not None:
        result = ToolResultPart(
            id=f"{part['id']}.output",
            call_id=call_id,
            name=name,
            output=output,
            is_error=is_error,
            blocks=blocks,
        )
        compacted = at(state, "time", "compacted") if status == "completed" else None
        pruned = bool(compacted)  # OpenCode's own test of it
        ended = time_of(at(state, "time", "end"))
        return call, Result(part["id"], result, ended, pruned, time_of(compacted))
    return call, None


def usage_of(raw: object) -> Usage | None:
    """OpenCode's token counts (`input` without the cache; `reasoning` apart from `output`,
    so it is added to it); `None` when there are none."""
    if not isinstance(raw, dict):
        return None
    cache = raw.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    counts = [
        raw.get("input"),
        raw.get("output"),
        raw.get("reasoning"),
        cache.get("read"),
        cache.get("write"),
    ]
    n = [
        int(c) if isinstance(c, int | float) and not isinstance(c, bool) and 0 <= c < 2**53 else 0
        for c in counts
    ]
    if not any(n):
        return None
    return Usage(input=n[0], output=n[1] + n[2], cache_read=n[3], cache_write=n[4])


def opencode_native(value: Json) -> Native:
    return Native(api=OPENCODE, value=value)


def at(value: object, *keys: str) -> Any:
    """`value[keys[0]][keys[1]]...`, or `None` where an object or a key is missing."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def time_of(value: object) -> datetime | None:
    """OpenCode's epoch milliseconds as aware UTC; `None` when absent or out of range."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        moment = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment if moment >= _EARLIEST else None


def latest(time: datetime | None, other: datetime | None) -> datetime | None:
    if time is None or other is None:
        return other or time
    return max(time, other)


def no_later(time: datetime | None, than: datetime | None) -> bool:
    return time is None or (than is not None and time <= than)


def attachments(raw: object, output: str) -> tuple[TextPart | FilePart, ...] | None:
    """A completed tool's data-URL attachments as image blocks after its text (OpenCode sends
    only those); `None` when there are none."""
    if not isinstance(raw, list):
        return None
    files = [
        file_part(a)
        for a in raw
        if isinstance(a, dict)
        and isinstance(a.get("url"), str)
        and a["url"].startswith("data:")
        and "," in a["url"]
        and isinstance(a.get("mime"), str)
        and a["mime"]
    ]
    return (TextPart(text=output), *files) if files else None


def reasoning_items(parts: list[Json]) -> dict[str, Json]:
    """OpenAI reasoning items rebuilt from the parts the AI SDK made of them (one per summary
    part, sharing `metadata.openai.itemId`): the first part of each carries the item."""
    items: dict[str, Json] = {}
    for part in parts:
        openai = at(part, "metadata", "openai")
        item_id = openai.get("itemId") if isinstance(openai, dict) else None
        if part["type"] != "reasoning" or not isinstance(item_id, str) or not item_id:
            continue
        assert isinstance(openai, dict)
        item = items.setdefault(
            item_id, {"first": part["id"], "type": "reasoning", "id": item_id, "summary": []}
        )
        text = part.get("text")
        if isinstance(text, str) and text:
            item["summary"].append({"type": "summary_text", "text": text})
        encrypted = openai.get("reasoningEncryptedContent")
        if isinstance(encrypted, str) and encrypted:
            item["encrypted_content"] = encrypted
    return items


def reasoning_part(part: Json, items: dict[str, Json]) -> ReasoningPart:
    """A reasoning part; with an Anthropic signature (or redacted data) or an OpenAI item in
    its metadata, that provider's own block as its `native`, which only a render for that
    provider sends (never as text)."""
    text = text_of(part)
    anthropic = at(part, "metadata", "anthropic")
    native: Native | None = None
    if isinstance(anthropic, dict) and isinstance(anthropic.get("signature"), str):
        block = {"type": "thinking", "thinking": text, "signature": anthropic["signature"]}
        native = anthropic_part(block).native
    elif isinstance(anthropic, dict) and isinstance(anthropic.get("redactedData"), str):
        redacted = {"type": "redacted_thinking", "data": anthropic["redactedData"]}
        native = Native(api=ANTHROPIC, value=redacted)
    else:
        openai = at(part, "metadata", "openai")
        item = items.get(str(openai.get("itemId"))) if isinstance(openai, dict) else None
        if item is not None and item["first"] == part["id"]:
            value = {k: v for k, v in item.items() if k != "first"}
            native = Native(api=OPENAI_RESPONSES, value=value)
    return ReasoningPart(id=part["id"], text=text, native=native)


def file_part(part: Json) -> FilePart:
    """A file by URL, or inline when its URL is a base64 data URL."""
    mime, url, name = part.get("mime"), part.get("url"), part.get("filename")
    if not isinstance(mime, str) or not mime or not isinstance(url, str) or not url:
        raise ImportRefused("a file part without a 'mime' type and a 'url'")
    filename = name if isinstance(name, str) else None
    part_id = part.get("id")
    fields: dict[str, Any] = {"media_type": mime, "filename": filename}
    if isinstance(part_id, str) and part_id:
        fields["id"] = part_id
    inline = file_from_url(url) if url.startswith("data:") else None
    with at_line(None):
        if inline is not None and inline.data is not None:
            return FilePart(**fields, data=inline.data)
        return FilePart(**fields, url=url)


def text_of(part: Json) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise ImportRefused(f"a {part['type']} part without a string 'text'")
    return text


def less(part: Json, shown: Part | None, *, output: bool = False) -> JsonValue:
    """OpenCode's part less the field our part holds already (so no text is stored twice)."""
    if isinstance(shown, TextPart | ReasoningPart) and part["type"] in ("text", "reasoning"):
        return {k: v for k, v in part.items() if k != "text"}
    if isinstance(shown, FilePart) and part["type"] == "file" and shown.data is not None:
        return {k: v for k, v in part.items() if k != "url"}
    state = part.get("state")
    if output and isinstance(state, dict) and state.get("status") == "completed":
        return {**part, "state": {k: v for k, v in state.items() if k != "output"}}
    return part


def part_problem(part: object, seen: set[str]) -> str | None:
    """Why `part` is not one OpenCode writes (an object with an `id` and a `type`), if it is
    not."""
    if not isinstance(part, dict):
        return "a part that is not an object"
    part_id, kind = part.get("id"), part.get("type")
    if not isinstance(part_id, str) or not part_id:
        return "a part without an 'id'"
    if not isinstance(kind, str) or not kind:
        return f"part {brief(part_id)} has no 'type'"
    if part_id in seen:
        return f"part {brief(part_id)} again"
    try:
        check_text(part_id, "id")
    except InvalidEvent as exc:  # a part the store cannot keep must not sink its message
        return f"part {brief(part_id)}: {exc}"
    return None
