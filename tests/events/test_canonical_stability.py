"""The canonical form keeps only what every reader gives back byte for byte.

These are the pure halves of `tests/contract/test_canonical_round_trip.py`: the readers here
are the ones the store uses on the way back (Python's `json` for `verify`, pydantic's JSON
parser for `read`), without a database.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.events import (
    GENESIS_HASH,
    ChainLink,
    InvalidEvent,
    canonical_json,
    event_hash,
    verify_chain,
)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_negative_zero_is_written_as_zero_wherever_it_is() -> None:
    inner = {"c": -0.0}
    value = {"a": -0.0, "b": [1.5, inner], "d": "-0.0"}

    assert canonical_json(value) == b'{"a":0.0,"b":[1.5,{"c":0.0}],"d":"-0.0"}'
    assert math.copysign(1.0, inner["c"]) == -1.0  # the caller's value is left alone


def test_integers_up_to_4300_digits_are_kept_and_longer_ones_refused() -> None:
    longest = 10**4300 - 1
    assert canonical_json([longest, -longest]) == f"[{longest},-{longest}]".encode()

    for too_long in (10**4300, -(10**4300), 10**10_000):
        with pytest.raises(InvalidEvent, match=r"\$\[0\]: integer of [\d,]+ digits"):
            canonical_json([too_long])


def test_nesting_up_to_128_levels_is_kept_and_deeper_refused() -> None:
    assert canonical_json(nested(127)) == b"[" * 127 + b"1" + b"]" * 127  # 127 lists, 1 int
    assert canonical_json({"a": nested(127)})  # 128 containers
    with pytest.raises(InvalidEvent, match=r"\$\.a(\[0\]){127}: JSON nested deeper than 128"):
        canonical_json({"a": nested(128)})


def test_a_chain_hashed_over_negative_zero_by_an_earlier_version_still_verifies() -> None:
    """SQLite kept `-0.0` before it was normalised: `verify` hashes a row as it was written."""
    payload = {"ratio": -0.0}
    recorded_at = datetime(2026, 1, 1, tzinfo=UTC)
    link = ChainLink(1, "e1", "CompressionChanged", 1, recorded_at, GENESIS_HASH, "", payload)
    digest = event_hash(
        prev_hash=GENESIS_HASH,
        event_id="e1",
        session_id="s",
        seq=1,
        event_type="CompressionChanged",
        schema_version=1,
        recorded_at=recorded_at,
        payload_json=b'{"ratio":-0.0}',  # what the earlier version hashed and stored
    )

    assert verify_chain("s", [replace(link, hash=digest)]).ok


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from([-0.0, 5e-324, 1e-7, 999999999999999.9, 1e15])
    | st.text(st.characters(exclude_categories=())),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(value=json_values)
def test_canonical_bytes_are_refused_or_read_back_unchanged_by_every_reader(value: Any) -> None:
    try:
        stored = canonical_json({"v": value})
    except InvalidEvent:
        return

    assert canonical_json(json.loads(stored)) == stored  # verify's reader
    assert canonical_json(pydantic_core.from_json(stored)) == stored  # read's parser


ids = st.text(st.characters(codec="utf-8"), max_size=12)


@given(
    event_id=ids,
    session_id=ids,
    event_type=ids,
    seq=st.integers(min_value=1, max_value=2**31 - 1),
    schema_version=st.integers(min_value=1, max_value=9),
    recorded_at=st.datetimes(timezones=st.timezones()),
    text=ids,
)
def test_event_hash_is_the_sha256_of_the_previous_hash_and_the_canonical_envelope(
    event_id: str,
    session_id: str,
    event_type: str,
    seq: int,
    schema_version: int,
    recorded_at: datetime,
    text: str,
) -> None:
    """`event_hash` writes the envelope's text itself, around the payload's canonical bytes:
    the bytes must be exactly those of the whole envelope written out canonically (escapes,
    non-ASCII text and a time in any zone included)."""
    payload = {"text": text}
    envelope = {
        "event_id": event_id,
        "payload": payload,
        "prev_hash": GENESIS_HASH,
        "recorded_at": recorded_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "schema_version": schema_version,
        "seq": seq,
        "session_id": session_id,
        "type": event_type,
    }
    whole = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(GENESIS_HASH.encode() + whole.encode("utf-8")).hexdigest()

    found = event_hash(
        prev_hash=GENESIS_HASH,
        event_id=event_id,
        session_id=session_id,
        seq=seq,
        event_type=event_type,
        schema_version=schema_version,
        recorded_at=recorded_at,
        payload_json=json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(),
    )

    assert found == expected
