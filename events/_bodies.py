"""Payload bodies: what a message says, kept apart from the event that records it, each body
named by the SHA-256 of its UTF-8 bytes.

A message's stored payload keeps its structure (roles, ids, part types, call ids, token counts,
truncation limits) and, where a part's content was, a reference `{"bytes": <size>, "sha256":
<hex>}`. The hash chain covers the payload with its references, so a session still verifies
when its bodies are stored elsewhere, compressed, shared by sessions, or deleted by a
redaction; joining the bodies back gives exactly the payload that was appended.

Content is every non-empty text of a part (`text`, tool-call `arguments`, tool `output`, the
truncated `shown` view of an output or of a long user text, file `data`, the blocks of a tool
result), every provider block kept verbatim (`native`, stored as its JSON text), and a
message's own envelope (its `native`: an imported entry's fields, a framework's item, a tool's
structured result). That is what a leaked secret can be in, so any of it can be redacted: a
body can be deleted, an event never. Events written before envelopes were bodies keep theirs
inline.

References sit only where the vocabulary has a string or a `Native` object, so a reference can
never be mistaken for content: an object with exactly `bytes` and `sha256` is valid in neither.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from events._canonical import canonical_json, check_text

REFERENCE_KEY = "sha256"
REFERENCE_HINT = f'"{REFERENCE_KEY}":'
"""In a payload's JSON text wherever it holds a reference (a string's own quotes are escaped,
so content cannot hold this)."""

_MESSAGES = {
    "MessageAppended": "message",
    "ContextCompacted": "summary",
    "RecordAppended": "record",
}
"""The events with content, and where it is: a message, or a record (whose parts are all
`native`)."""
_TEXT_FIELDS: dict[object, tuple[str, ...]] = {
    "text": ("text",),
    "reasoning": ("text",),
    "tool_call": ("arguments",),
    "tool_result": ("output",),
    "file": ("data",),
}
_NATIVE = "native"


@dataclass(frozen=True, slots=True)
class Body:
    """One body: its digest (SHA-256 of its UTF-8 bytes, hex), its text, and whether the model
    was shown it (the original of a truncated output was not: only a restore reads it)."""

    digest: str
    text: str
    shown: bool = True

    @property
    def size(self) -> int:
        return len(self.text) if self.text.isascii() else len(self.text.encode("utf-8"))


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_reference(value: object) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 2
        and isinstance(value.get(REFERENCE_KEY), str)
        and isinstance(value.get("bytes"), int)
    )


def native_text(value: Mapping[str, Any]) -> str:
    """A `native` object as the text of its body: its canonical JSON (checked as a payload's)."""
    return canonical_json(value).decode("utf-8")


def split_bodies(event_type: str, data: dict[str, Any]) -> tuple[dict[str, Any], list[Body]]:
    """The payload with its message's content replaced by references, and that content as
    bodies (in order, repeats kept). `data` is not changed."""
    key = _MESSAGES.get(event_type)
    message: Any = data.get(key) if key is not None else None
    if key is None or not _has_parts(message):
        return data, []
    bodies: list[Body] = []
    parts = [
        _split_part(part, bodies, f"$.{key}.parts[{i}]") for i, part in enumerate(message["parts"])
    ]
    split = {**message, "parts": parts}
    if isinstance(message.get(_NATIVE), dict):  # the envelope: an entry's `cwd`, a tool's data
        split[_NATIVE] = _out(native_text(message[_NATIVE]), bodies, f"$.{key}.native")
    if not bodies:
        return data, []
    return {**data, key: split}, bodies


def _split_part(part: Any, bodies: list[Body], path: str) -> Any:
    if not isinstance(part, dict):
        return part
    split = dict(part)
    hidden = isinstance(part.get("truncation"), dict)  # a tool output's or a user text's
    for field in _TEXT_FIELDS.get(part.get("type"), ()):
        text = part.get(field)
        if isinstance(text, str) and text:
            split[field] = _out(text, bodies, f"{path}.{field}", shown=not hidden)
    truncation = part.get("truncation")
    if isinstance(truncation, dict) and isinstance(truncation.get("shown"), str):
        shown = _out(truncation["shown"], bodies, f"{path}.truncation.shown")
        split["truncation"] = {**truncation, "shown": shown}
    if isinstance(part.get("blocks"), list):
        split["blocks"] = [
            _split_part(block, bodies, f"{path}.blocks[{i}]")
            for i, block in enumerate(part["blocks"])
        ]
    if isinstance(part.get(_NATIVE), dict):
        split[_NATIVE] = _out(native_text(part[_NATIVE]), bodies, f"{path}.native")
    return split


def _out(text: str, bodies: list[Body], path: str, *, shown: bool = True) -> dict[str, Any]:
    check_text(text, path)  # no NUL, no lone surrogate: as inline text
    body = Body(digest_of(text), text, shown)
    bodies.append(body)
    return {"bytes": body.size, REFERENCE_KEY: body.digest}


def body_digests(event_type: str, data: Mapping[str, Any]) -> list[str]:
    """The digests a stored payload references (repeats kept)."""
    return [ref[REFERENCE_KEY] for ref in _references(event_type, data)]


def part_digests(event_type: str, data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per part id, the digests of its content (a tool result's blocks count as its own)."""
    found: dict[str, list[str]] = {}
    for part in _parts(event_type, data):
        if isinstance(part.get("id"), str):
            found[part["id"]] = [ref[REFERENCE_KEY] for ref in _part_references(part)]
    return found


def envelope_digests(event_type: str, data: Mapping[str, Any]) -> dict[str, str]:
    """Per part id, the digest of its message's envelope (which can repeat any of the parts,
    so redacting a part deletes it too), for a message whose envelope is a body."""
    envelope = [ref[REFERENCE_KEY] for ref in _envelope_references(event_type, data)]
    if not envelope:
        return {}
    return {
        part["id"]: envelope[0]
        for part in _parts(event_type, data)
        if isinstance(part.get("id"), str)
    }


def _envelope_references(event_type: str, data: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    key = _MESSAGES.get(event_type)
    message: Any = data.get(key) if key is not None else None
    if isinstance(message, dict) and is_reference(message.get(_NATIVE)):
        yield message[_NATIVE]


def _parts(event_type: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    key = _MESSAGES.get(event_type)
    message: Any = data.get(key) if key is not None else None
    if key is None or not _has_parts(message):
        return []
    return [part for part in message["parts"] if isinstance(part, dict)]


def _has_parts(message: object) -> bool:
    return isinstance(message, dict) and isinstance(message.get("parts"), list)


def _references(event_type: str, data: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for part in _parts(event_type, data):
        yield from _part_references(part)
    yield from _envelope_references(event_type, data)


def _part_references(part: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for field in (*_TEXT_FIELDS.get(part.get("type"), ()), _NATIVE):
        if is_reference(part.get(field)):
            yield part[field]
    truncation = part.get("truncation")
    if isinstance(truncation, dict) and is_reference(truncation.get("shown")):
        yield truncation["shown"]
    for block in part.get("blocks") or ():
        if isinstance(block, dict):
            yield from _part_references(block)


def join_bodies(event_type: str, data: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """The payload with each reference replaced by its text from `texts` (digest -> text; a
    redaction maps a digest to its placeholder). A reference whose text is missing stays (the
    model then refuses it, naming the field). `data` is changed in place: pass a payload just
    parsed, which nothing else holds (resume joins every live message: no copies)."""
    key = _MESSAGES.get(event_type)
    message: Any = data.get(key) if key is not None else None
    if key is None or not _has_parts(message):
        return data
    for part in message["parts"]:
        _join_part(part, texts)
    native: Any = message.get(_NATIVE)
    if is_reference(native):
        text = texts.get(native[REFERENCE_KEY])
        if text is not None:
            message[_NATIVE] = _native_back(text)
    return data


def _join_part(part: Any, texts: Mapping[str, str]) -> None:
    if type(part) is not dict:
        return
    for field in _TEXT_FIELDS.get(part.get("type"), ()):
        value = part.get(field)
        if type(value) is dict:
            part[field] = _in(value, texts)
    truncation = part.get("truncation")
    if type(truncation) is dict and type(truncation.get("shown")) is dict:
        truncation["shown"] = _in(truncation["shown"], texts)
    blocks = part.get("blocks")
    if type(blocks) is list:
        for block in blocks:
            _join_part(block, texts)
    native: Any = part.get(_NATIVE)
    if is_reference(native):
        text = texts.get(native[REFERENCE_KEY])
        if text is not None:
            part[_NATIVE] = _native_back(text)


def _in(value: Any, texts: Mapping[str, str]) -> Any:
    if is_reference(value):
        return texts.get(value[REFERENCE_KEY], value)
    return value


def _native_back(text: str) -> Any:
    """A native body parsed back; a redacted one (not JSON) becomes a block that says so."""
    try:
        return json.loads(text)
    except ValueError:
        return {"api": "sessionstore.redacted", "value": text}
