"""Canonical JSON and the per-session SHA-256 hash chain.

The hash of an event must come out the same from any backend and any version of the code, so
the bytes hashed are fixed here once: sorted keys, no whitespace, UTF-8, datetimes as ISO-8601
UTC with microseconds. Values that a backend would not give back unchanged are refused up front
(with `InvalidEvent`) instead of breaking the chain later: NUL characters (PostgreSQL JSONB
rejects them), lone surrogates (not encodable as UTF-8, i.e. broken UTF-8 that was decoded
with `surrogateescape`), and floats that are not finite or large enough to be printed with an
exponent (JSONB hands `1e16` back as the integer `10000000000000000`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from events._errors import InvalidEvent

GENESIS_HASH = "0" * 64
"""The `prev_hash` of a session's first event."""

MAX_STABLE_FLOAT = 1e15
"""Floats at or above this magnitude are refused: their JSON text has no stable round trip."""


def check_json_value(value: Any, path: str = "$") -> None:
    """Raise `InvalidEvent` naming the first place where `value` is not storable JSON."""
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        return
    elif isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= MAX_STABLE_FLOAT:
            raise InvalidEvent(
                f"{path}: float {value!r} has no stable JSON form across backends; "
                "store it as a string or an integer"
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidEvent(f"{path}: object keys must be strings, got {key!r}")
            _check_text(key, f"{path}.<key>")
            check_json_value(item, f"{path}.{key}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for index, item in enumerate(value):
            check_json_value(item, f"{path}[{index}]")
    else:
        raise InvalidEvent(f"{path}: {type(value).__name__} is not a JSON value")


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise InvalidEvent(f"{path}: text contains a NUL character (\\x00)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidEvent(
            f"{path}: text is not valid UTF-8 (lone surrogate at offset {exc.start})"
        ) from None


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON value (checked with `check_json_value` first)."""
    check_json_value(value)
    return _dumps(value)


def _dumps(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 UTC with microseconds and a `Z`: the one text form of a time that is hashed."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
    rest = {
        "prev_hash": prev_hash,
        "recorded_at": format_timestamp(recorded_at),
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
