"""Payload bodies: what a message says, kept apart from the event that records it, each body
named by the SHA-256 of its UTF-8 bytes.

A message's stored payload keeps its structure (roles, ids, part types, call ids, token counts,
truncation limits) and, where a part's content was, a reference `{"bytes": <size>, "sha256":
<hex>}`. The hash chain covers the payload with its references, so a session still verifies
when its bodies are stored elsewhere, compressed, shared by sessions, or deleted by a
redaction; joining the bodies back gives exactly the payload that was appended.

Content is every non-empty text of a part (`text`, tool-call `arguments`, tool `output`, the
truncated `shown` view of an output or of a long user text, a file's `data`, `url` and
`filename`, a native part's stand-in `text`, the blocks of a tool result), every provider
block kept verbatim (`native`, stored as its JSON text), a message's own envelope (its
`native`: an imported entry's fields, a framework's item, a tool's structured result), the
messages an undo brings back (`MessagesRestored`: the same bodies as the originals), a
session's title, and the values of its state (`StateChanged`). That is what a leaked secret
can be in, so any of it can be redacted: a body can be deleted, an event never. Events
written before a field was a body keep it inline: their readers take a string as they always
did (only the stored shape of new events changed, so no schema version moved), and a
redaction refuses such a part, which it could not delete without breaking the chain.

References sit only where the vocabulary has a string or a `Native` object, so a reference can
never be mistaken for content: an object with exactly `bytes` and `sha256` is valid in neither.
A state delta's values, which can be any JSON, keep theirs under a key of their own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Any

from sessionstore.events._canonical import canonical_json, check_text, utf8_size

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
_MESSAGE_LISTS = {"MessagesRestored": "messages"}
"""The events whose content is a list of messages: an undo's copies of the originals."""
_HEADER_TEXTS = {"SessionStarted": ("title",)}
"""Texts of an event outside any message: a session's title (an imported transcript's own
summary line, say), purged with the session's content."""
_VALUE_BODIES = {"StateChanged": ("values", "value_bodies")}
"""Events whose JSON values (a state delta's, an application's content) are bodies, each the
canonical JSON of its value, stored under a key of their own: any JSON value could look like a
reference, and no event written before had that key (its model forbids unknown keys)."""
CONTENT_EVENTS = frozenset({*_MESSAGES, *_MESSAGE_LISTS, *_HEADER_TEXTS, *_VALUE_BODIES})
"""The event types that can hold content (as bodies, or inline when written before)."""
_TEXT_FIELDS: dict[object, tuple[str, ...]] = {
    "text": ("text",),
    "reasoning": ("text",),
    "tool_call": ("arguments",),
    "tool_result": ("output",),
    "file": ("data", "url", "filename"),
    "native": ("text",),
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
        return utf8_size(self.text)


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


def value_text(value: object) -> str:
    """A JSON value as the text of its body: its canonical JSON."""
    return canonical_json(value).decode("utf-8")


def split_bodies(event_type: str, data: dict[str, Any]) -> tuple[dict[str, Any], list[Body]]:
    """The payload with its content replaced by references, and that content as bodies (in
    order, repeats kept). `data` is not changed."""
    bodies: list[Body] = []
    split = dict(data)
    key = _MESSAGES.get(event_type)
    if key is not None and _has_parts(data.get(key)):
        split[key] = _split_message(data[key], bodies, f"$.{key}")
    key = _MESSAGE_LISTS.get(event_type)
    if key is not None and isinstance(data.get(key), list):
        split[key] = [
            _split_message(message, bodies, f"$.{key}[{i}]") if _has_parts(message) else message
            for i, message in enumerate(data[key])
        ]
    for field in _HEADER_TEXTS.get(event_type, ()):
        text = data.get(field)
        if isinstance(text, str) and text:
            split[field] = _out(text, bodies, f"$.{field}")
    if event_type in _VALUE_BODIES:
        inline, stored = _VALUE_BODIES[event_type]
        values = data.get(inline)
        if isinstance(values, dict) and values:
            del split[inline]
            split[stored] = {
                key: _out(value_text(value), bodies, f"$.{inline}.{key}")
                for key, value in values.items()
            }
    if not bodies:
        return data, []
    return split, bodies


def _split_message(message: dict[str, Any], bodies: list[Body], path: str) -> dict[str, Any]:
    parts = [
        _split_part(part, bodies, f"{path}.parts[{i}]") for i, part in enumerate(message["parts"])
    ]
    split = {**message, "parts": parts}
    if isinstance(message.get(_NATIVE), dict):  # the envelope: an entry's `cwd`, a tool's data
        split[_NATIVE] = _out(native_text(message[_NATIVE]), bodies, f"{path}.native")
    return split


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
    found: dict[str, str] = {}
    for message in _messages(event_type, data):
        if is_reference(message.get(_NATIVE)):
            digest = message[_NATIVE][REFERENCE_KEY]
            for part in message["parts"]:
                if isinstance(part, dict) and isinstance(part.get("id"), str):
                    found[part["id"]] = digest
    return found


def header_digests(event_type: str, data: Mapping[str, Any]) -> list[str]:
    """The digests of an event's content outside any message: a session's title, a state
    delta's values."""
    return [ref[REFERENCE_KEY] for ref in _header_references(event_type, data)]


def _header_references(event_type: str, data: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for field in _HEADER_TEXTS.get(event_type, ()):
        if is_reference(data.get(field)):
            yield data[field]
    if event_type in _VALUE_BODIES:
        stored = data.get(_VALUE_BODIES[event_type][1])
        if isinstance(stored, dict):
            yield from (ref for ref in stored.values() if is_reference(ref))


def _messages(event_type: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The event's messages (or record) that have parts."""
    key = _MESSAGES.get(event_type)
    if key is not None:
        message: Any = data.get(key)
        return [message] if _has_parts(message) else []
    key = _MESSAGE_LISTS.get(event_type)
    listed: Any = data.get(key) if key is not None else None
    if isinstance(listed, list):
        return [message for message in listed if _has_parts(message)]
    return []


def _parts(event_type: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        part
        for message in _messages(event_type, data)
        for part in message["parts"]
        if isinstance(part, dict)
    ]


def _has_parts(message: object) -> bool:
    return isinstance(message, dict) and isinstance(message.get("parts"), list)


def _references(event_type: str, data: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for message in _messages(event_type, data):
        for part in message["parts"]:
            if isinstance(part, dict):
                yield from _part_references(part)
        if is_reference(message.get(_NATIVE)):
            yield message[_NATIVE]
    yield from _header_references(event_type, data)


def _part_references(
    part: dict[str, Any], *, originals: bool = True, unshown: Set[str] = frozenset()
) -> Iterator[dict[str, Any]]:
    truncation = part.get("truncation")
    # else only its view (see `ORIGINAL_FIELDS`), or nothing of a part not shown at all
    whole = originals or (truncation is None and part.get("id") not in unshown)
    for field in (*_TEXT_FIELDS.get(part.get("type"), ()), _NATIVE) if whole else ():
        if is_reference(part.get(field)):
            yield part[field]
    if isinstance(truncation, dict) and is_reference(truncation.get("shown")):
        yield truncation["shown"]
    for block in part.get("blocks") or () if whole else ():
        if isinstance(block, dict):
            yield from _part_references(block)


ORIGINAL_FIELDS = ("text", "output", _NATIVE, "blocks")
"""What a truncated part (one with a `truncation`) holds of its original, which the model was
not shown: the text or output that was cut, the provider's block, the content blocks. Only
`truncation.shown` is shown; a restore shows the rest."""


def shown_digests(
    event_type: str, data: Mapping[str, Any], unshown: Set[str] = frozenset()
) -> set[str]:
    """The digests a stored payload references, but for the originals of its truncated parts
    (`ORIGINAL_FIELDS`) and those of the parts in `unshown` (ids of parts the model is not
    shown: pruned tool results, cleared reasoning): the bodies a read that shows the payload
    as the model was shown it needs (the others can be megabytes that only a restore reads)."""
    found = {ref[REFERENCE_KEY] for ref in _header_references(event_type, data)}
    for message in _messages(event_type, data):
        for part in message["parts"]:
            if isinstance(part, dict):
                refs = _part_references(part, originals=False, unshown=unshown)
                found.update(r[REFERENCE_KEY] for r in refs)
        if is_reference(message.get(_NATIVE)):
            found.add(message[_NATIVE][REFERENCE_KEY])
    return found


def join_bodies(event_type: str, data: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """The payload with each reference replaced by its text from `texts` (digest -> text; a
    redaction maps a digest to its placeholder). A reference whose text is missing stays (the
    model then refuses it, naming the field). `data` is changed in place: pass a payload just
    parsed, which nothing else holds (resume joins every live message: no copies)."""
    for message in _messages(event_type, data):
        for part in message["parts"]:
            _join_part(part, texts)
        native: Any = message.get(_NATIVE)
        if is_reference(native):
            text = texts.get(native[REFERENCE_KEY])
            if text is not None:
                message[_NATIVE] = _native_back(text)
    for field in _HEADER_TEXTS.get(event_type, ()):
        if field in data:
            data[field] = _in(data[field], texts)
    if event_type in _VALUE_BODIES:
        _join_values(data, *_VALUE_BODIES[event_type], texts)
    return data


def _join_values(data: dict[str, Any], inline: str, stored: str, texts: Mapping[str, str]) -> None:
    """The values back where the model has them; with any text missing they stay as they
    are stored, which the model refuses (an unknown key), naming them."""
    refs: Any = data.get(stored)
    if not isinstance(refs, dict):
        return
    found = {
        key: texts.get(ref[REFERENCE_KEY]) if is_reference(ref) else None
        for key, ref in refs.items()
    }
    if any(text is None for text in found.values()):
        return
    del data[stored]
    data[inline] = {key: _value_back(text) for key, text in found.items() if text is not None}


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


def _value_back(text: str) -> Any:
    """A value's body parsed back; a redacted one (not JSON) is its placeholder, as text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _native_back(text: str) -> Any:
    """A native body parsed back; a redacted one (not JSON) becomes a block that says so."""
    try:
        return json.loads(text)
    except ValueError:
        return {"api": "sessionstore.redacted", "value": text}
