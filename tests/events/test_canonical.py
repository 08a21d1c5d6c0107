from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.events import (
    GENESIS_HASH,
    InvalidEvent,
    canonical_json,
    check_json_value,
    event_hash,
    format_timestamp,
)
from sessionstore.events._canonical import MAX_JSON_DEPTH, _check, _quick_check

storable_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | storable_text
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e14, max_value=1e14),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(storable_text, inner, max_size=4),
    max_leaves=20,
)


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_utf8() -> None:
    assert canonical_json({"b": [1, True, None], "a": "é😀", "c": {"z": 0.5, "y": -3}}) == (
        '{"a":"é😀","b":[1,true,null],"c":{"y":-3,"z":0.5}}'.encode()
    )


def test_timestamps_are_utc_with_microseconds() -> None:
    paris = timezone(timedelta(hours=1))
    assert format_timestamp(datetime(2026, 11, 23, 8, 41, 5, 7, tzinfo=paris)) == (
        "2026-11-23T07:41:05.000007Z"
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        format_timestamp(datetime(2026, 11, 23))


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=5)), timezone(-timedelta(hours=9))]
        ),
    )
)
def test_a_timestamp_reads_as_strftime_writes_it_at_any_date(moment: datetime) -> None:
    """Every hash covers this text: the fast form must be strftime's, character for character."""
    assert format_timestamp(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": "x\x00"}, r"\$\.a: text contains a NUL"),
        ({"k\x00": 1}, "NUL"),
        (["\udcff"], r"\$\[0\]: text is not valid UTF-8"),
        ({"ratio": float("nan")}, "float nan"),
        ({"big": 1e16}, "float 1e\\+16"),
        ({1: "int key"}, "keys must be strings"),
        ({"b": b"bytes"}, "bytes is not a JSON value"),
    ],
)
def test_values_without_a_stable_stored_form_are_refused(value: object, message: str) -> None:
    with pytest.raises(InvalidEvent, match=message):
        canonical_json(value)


@given(payload=st.dictionaries(storable_text, json_values, max_size=5), seq=st.integers(1, 10**6))
def test_event_hash_equals_sha256_of_prev_hash_and_the_whole_canonical_envelope(
    payload: dict[str, object], seq: int
) -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    envelope = {
        "event_id": "01890a5d-ac96-774b-bcce-b302099a8057",
        "session_id": "sé",
        "seq": seq,
        "type": "MessageAppended",
        "schema_version": 1,
        "recorded_at": "2026-01-02T03:04:05.000006Z",
        "prev_hash": GENESIS_HASH,
        "payload": payload,
    }
    expected = hashlib.sha256(GENESIS_HASH.encode() + canonical_json(envelope)).hexdigest()

    assert (
        event_hash(
            prev_hash=GENESIS_HASH,
            event_id="01890a5d-ac96-774b-bcce-b302099a8057",
            session_id="sé",
            seq=seq,
            event_type="MessageAppended",
            schema_version=1,
            recorded_at=moment,
            payload_json=canonical_json(payload),
        )
        == expected
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"m": {"parts": [{"text": "ok"}, {"text": "x\x00"}]}}, r"\$\.m\.parts\[1\]\.text: .*NUL"),
        ([{"a": [1, {"\udcff": 2}]}], r"\$\[0\]\.a\[1\]\.<key>: text is not valid UTF-8"),
        ({"a": ({"b": [float("inf")]},)}, r"\$\.a\[0\]\.b\[0\]: float inf"),
        ({"a": [{"n": 10**4300}]}, r"\$\.a\[0\]\.n: integer of 4,301 digits"),
        ({"a": [True, 2, None, {1.5: 0}]}, r"\$\.a\[3\]: object keys must be strings"),
    ],
)
def test_a_refused_value_deep_in_a_payload_is_named_by_its_path(
    value: object, message: str
) -> None:
    """The quick walk that checks every payload keeps no paths: what it refuses is walked
    again to say where."""
    with pytest.raises(InvalidEvent, match=message):
        canonical_json(value)


def test_nesting_past_the_limit_is_refused_and_at_the_limit_kept() -> None:
    at_limit: object = "x"
    for _ in range(MAX_JSON_DEPTH):
        at_limit = [at_limit]
    assert canonical_json(at_limit) == b"[" * 128 + b'"x"' + b"]" * 128
    with pytest.raises(InvalidEvent, match="nested deeper than 128"):
        canonical_json({"a": at_limit})


def test_negative_zero_deep_in_a_value_is_written_as_zero() -> None:
    assert (
        canonical_json({"a": [{"b": (-0.0, 1.5)}], "c": "é"})
        == '{"a":[{"b":[0.0,1.5]}],"c":"é"}'.encode()
    )


def test_a_mapping_that_is_not_a_dict_is_checked_as_one() -> None:
    with pytest.raises(InvalidEvent, match=r"\$\.a\.b: text contains a NUL"):
        check_json_value({"a": MappingProxyType({"b": "\x00"})})
    check_json_value({"a": MappingProxyType({"b": "fine"})})


@given(value=json_values)
def test_the_quick_walk_agrees_with_the_full_one(value: object) -> None:
    assert _quick_check(value) in (None, _check(value, "$", 1))
    if isinstance(value, dict | list):
        assert _quick_check(value) is not None  # plain storable JSON never needs the full walk
