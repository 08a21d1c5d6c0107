"""Canonical JSON and the per-session SHA-256 hash chain.

The hash of an event must come out the same from any backend and any version of the code, so
the bytes hashed are fixed here once: sorted keys, no whitespace, UTF-8, datetimes as ISO-8601
UTC with microseconds. `verify` recomputes them from what the database hands back, so every
value the canonical form accepts must come back from SQLite's JSON and PostgreSQL's JSONB with
the same canonical bytes. What a backend cannot keep is refused up front (with `InvalidEvent`)
instead of breaking the chain later:

- NUL characters (JSONB rejects them) and lone surrogates (not encodable as UTF-8, i.e. broken
  UTF-8 that was decoded with `surrogateescape`);
- floats that are not finite or are large enough to be printed with an exponent (JSONB hands
  `1e16` back as the integer `10000000000000000`);
- integers of more than 4,300 digits (Python's `json` neither writes nor reads them);
- containers nested more than 128 deep (pydantic's JSON parser, which `read` uses, stops at
  200; exports and snapshots wrap a payload in a few more).

One value is normalised rather than refused: `-0.0` is written as `0.0`, since JSONB's numeric
has no negative zero. The stored JSON is the canonical text itself, so what is stored and what
is hashed agree on every backend.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sessionstore.events._errors import InvalidEvent

GENESIS_HASH = "0" * 64
"""The `prev_hash` of a session's first event."""

MAX_STABLE_FLOAT = 1e15
"""Floats at or above this magnitude are refused: their JSON text has no stable round trip."""

MAX_INT_DIGITS = 4300
"""Longer integers are refused: Python's `json` neither writes nor reads them (its default
`sys.get_int_max_str_digits()`, fixed here so the canonical form does not depend on it)."""

MAX_STABLE_INT = 10**MAX_INT_DIGITS - 1

MAX_JSON_DEPTH = 128
"""Containers nested deeper are refused: pydantic's JSON parser reads at most 200 levels."""


def check_json_value(value: Any, path: str = "$") -> None:
    """Raise `InvalidEvent` naming the first place where `value` is not storable JSON."""
    if _quick_check(value) is None:
        _check(value, path, 1)


def _quick_check(value: Any) -> bool | None:
    """`_check` without the paths: whether `value` holds a `-0.0`, or `None` when it holds
    anything `_check` must look at (a value it refuses, or a type other than the plain JSON
    ones), which `_check` then walks again to name where. Every append and import checks
    every string of its payloads: building a path for each (`$.message.parts[3].text`) and a
    call per value took most of the time, and a value is refused only rarely."""
    kind = type(value)
    if kind is not dict and kind is not list and kind is not tuple:
        return None  # a scalar at the top: `_check` is as quick
    negative_zero = False
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        container, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            return None
        if type(container) is dict:
            for key in container:
                if type(key) is not str or "\x00" in key or not (key.isascii() or _utf8(key)):
                    return None
            items = container.values()
        else:
            items = container
        for item in items:
            kind = type(item)
            if kind is str:
                if "\x00" in item or not (item.isascii() or _utf8(item)):
                    return None
            elif kind is dict or kind is list or kind is tuple:
                pending.append((item, depth + 1))
            elif kind is bool or item is None:
                continue
            elif kind is int:
                if not -MAX_STABLE_INT <= item <= MAX_STABLE_INT:
                    return None
            elif kind is float:
                if not math.isfinite(item) or abs(item) >= MAX_STABLE_FLOAT:
                    return None
                if item == 0.0 and math.copysign(1.0, item) < 0.0:
                    negative_zero = True
            else:
                return None
    return negative_zero


def _utf8(text: str) -> bool:
    """Whether `text` (not ASCII) encodes as UTF-8: it holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(value: Any, path: str, depth: int) -> bool:
    """`check_json_value` at nesting `depth`; whether `value` holds a `-0.0` somewhere."""
    if isinstance(value, str):
        check_text(value, path)
    elif isinstance(value, bool) or value is None:
        return False
    elif isinstance(value, int):
        if not -MAX_STABLE_INT <= value <= MAX_STABLE_INT:
            raise InvalidEvent(
                f"{path}: integer of {_digits(value):,} digits is longer than JSON readers "
                f"take ({MAX_INT_DIGITS:,}); store it as a string"
            )
    elif isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= MAX_STABLE_FLOAT:
            raise InvalidEvent(
                f"{path}: float {value!r} has no stable JSON form across backends; "
                "store it as a string or an integer"
            )
        return value == 0.0 and math.copysign(1.0, value) < 0.0
    elif isinstance(value, Mapping):
        _check_depth(path, depth)
        negative_zero = False
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidEvent(f"{path}: object keys must be strings, got {key!r}")
            check_text(key, f"{path}.<key>")
            negative_zero = _check(item, f"{path}.{key}", depth + 1) or negative_zero
        return negative_zero
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        _check_depth(path, depth)
        negative_zero = False
        for index, item in enumerate(value):
            negative_zero = _check(item, f"{path}[{index}]", depth + 1) or negative_zero
        return negative_zero
    else:
        raise InvalidEvent(f"{path}: {type(value).__name__} is not a JSON value")
    return False


def _check_depth(path: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise InvalidEvent(
            f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels cannot be read back"
        )


def _digits(value: int) -> int:
    """The decimal digits of `value`, without `str()` (which refuses past 4,300 digits)."""
    digits = max(1, int(abs(value).bit_length() * math.log10(2)))
    while abs(value) >= 10**digits:
        digits += 1
    return digits


def check_text(text: str, path: str) -> None:
    """`InvalidEvent` for text no backend stores as sent: a NUL, or a lone surrogate."""
    if "\x00" in text:
        raise InvalidEvent(f"{path}: text contains a NUL character (\\x00)")
    if text.isascii():  # a flag CPython keeps: no copy of the text to encode
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidEvent(
            f"{path}: text is not valid UTF-8 (lone surrogate at offset {exc.start})"
        ) from None


_SLICE = 1 << 20
"""Characters of non-ASCII text encoded at a time when measuring it: bounds the copy."""


def utf8_size(text: str) -> int:
    """The UTF-8 bytes of `text` (a lone surrogate counts its 3): free when it is ASCII, and
    encoded a slice at a time otherwise, so measuring a 100 MB text never copies it whole.
    What a size limit is checked against and what a truncation says it cut are counted so."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _SLICE].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), _SLICE)
    )


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON value, checked with `check_json_value` first and
    with `-0.0` written as `0.0`: what an append stores and hashes."""
    negative_zero = _quick_check(value)
    if negative_zero is None:
        negative_zero = _check(value, "$", 1)
    if negative_zero:
        value = _without_negative_zero(value)
    return _dumps(value)


def hashed_json(stored: Any) -> bytes:
    """The canonical bytes of a payload as the database hands it back: what its hash covers.

    Neither checked nor normalised, unlike `canonical_json`: a row is hashed as it was written,
    so events stored before a rule was added (a `-0.0` kept by SQLite, say) still verify.
    `InvalidEvent` when the value has no JSON text at all.
    """
    try:
        return _dumps(stored)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidEvent(f"not JSON text: {str(exc).splitlines()[0]}") from None


def _without_negative_zero(value: Any) -> Any:
    if isinstance(value, float):
        return 0.0 if value == 0.0 else value
    if isinstance(value, Mapping):
        return {key: _without_negative_zero(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return [_without_negative_zero(item) for item in value]
    return value


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
"""One encoder for every dump: `json.dumps` with these options builds a new one per call, a
third of the cost of the small dumps each append hashes."""


_string = json.encoder.encode_basestring
"""How `_ENCODER` writes a string (`ensure_ascii=False`): quoted, with JSON's escapes."""


def _dumps(value: Any) -> bytes:
    return _ENCODER.encode(value).encode("utf-8")


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 UTC with microseconds and a `Z`: the one text form of a time that is hashed."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    utc = moment.astimezone(UTC)
    if utc.year >= 1000:  # the same text as strftime's, at a third of its cost (every hash)
        return utc.isoformat(timespec="microseconds")[:-6] + "Z"  # less its "+00:00"
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # the year as strftime writes it here


def event_hash(
    *,
    prev_hash: str,
    event_id: str,
    session_id: str,
    seq: int,
    event_type: str,
    schema_version: int,
    recorded_at: datetime,
    payload_json: bytes,
) -> str:
    """`sha256(prev_hash + canonical_json(envelope without hash, with payload))`, hex.

    `payload_json` is the payload's `canonical_json`, computed once by the caller; it is spliced
    into the envelope at its sorted place ("event_id" < "payload" < "prev_hash"), which gives
    exactly the bytes of `canonical_json` over the whole envelope without walking the payload
    again.
    """
    stamp = format_timestamp(recorded_at)
    if (
        type(seq) is int
        and type(schema_version) is int
        and type(event_id) is type(session_id) is type(event_type) is type(prev_hash) is str
    ):  # the envelope's text written here: `_dumps` of its dict was a third of a verify's hashing
        head = f'{{"event_id":{_string(event_id)},"payload":'
        tail = (
            f',"prev_hash":{_string(prev_hash)},"recorded_at":{_string(stamp)},'
            f'"schema_version":{schema_version},"seq":{seq},'
            f'"session_id":{_string(session_id)},"type":{_string(event_type)}}}'
        )
        body = b"".join((head.encode("utf-8"), payload_json, tail.encode("utf-8")))
    else:
        rest = {
            "prev_hash": prev_hash,
            "recorded_at": stamp,
            "schema_version": schema_version,
            "seq": seq,
            "session_id": session_id,
            "type": event_type,
        }
        body = b"".join(
            (
                b'{"event_id":',
                _dumps(event_id),
                b',"payload":',
                payload_json,
                b",",
                _dumps(rest)[1:],
            )
        )
    digest = hashlib.sha256(prev_hash.encode("ascii"))
    digest.update(body)
    return digest.hexdigest()
