"""Every value the canonical form accepts comes back from either backend as the same bytes.

The hash of an event covers `canonical_json` of its payload; `verify` recomputes it from what
the database hands back (PostgreSQL's JSONB re-encodes numbers and reorders keys, SQLite's JSON
column keeps the text). So a value the canonical form accepts must give the same canonical
bytes after the round trip, and a value it cannot keep must be refused before anything is
written.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore, ToolCall
from sessionstore.events import (
    CompressionChanged,
    InvalidEvent,
    MessageAppended,
    ToolCallPart,
    canonical_json,
    new_id,
)
from sessionstore.log._append import encode_batch
from sessionstore.log._transfer import dated_links, insert_links
from tests.builders import started
from tests.conftest import Backend

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def nested(depth: int) -> Any:
    """`depth` lists, one inside the other, around a 1."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


CORPUS: list[Any] = [
    # floats: signed zero, the smallest and largest magnitudes we keep, 17 significant digits
    -0.0,
    0.0,
    [-0.0, {"z": -0.0}],
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-7,
    -1.5e-10,
    0.1 + 0.2,
    1 / 3,
    123456789012345.67,
    999999999999999.9,
    1.0,
    -1.0,
    # integers beyond every machine width
    2**53 + 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    -(10**30),
    int("9" * 4300),
    # text
    "\U0001f600 astral",
    "e\u0301 combining",
    "\u2028\u2029 line separators",
    "\u05e9\u05dc\u05d5\u05dd RTL \u202e",
    '\x7f \x01\x1f escapes \\u0041 "quoted"',
    "\ud7ff\ue000\ufffd\ufffe\uffff",
    # keys: empty, and ones that sort differently by UTF-16 units, by code points and by length
    {"": "empty key"},
    {"\ue000": 1, "\U0001f600": 2, "b": 3, "aa": 4, "A": 5},
    # nesting, up to the deepest the canonical form keeps
    nested(126),  # 128 levels with the payload and `compression` around it
]


def write_carrying(store: SessionStore, session_id: str, value: Any) -> None:
    """Write a session whose second event carries `value`: through the store's own encoding
    and import write path, since no event the append path accepts holds arbitrary JSON (a
    config it would refuse as one)."""
    carrier = {"type": "CompressionChanged", "compression": {"v": value}}
    batch = encode_batch([started(), carrier], store.max_payload_bytes)
    links = dated_links(session_id, batch, [None, None], NOW)
    insert_links(store._recorder, session_id, links, (b for item in batch for b in item.bodies))


def round_trip(store: SessionStore, value: Any) -> Any:
    """Store `value` inside a payload, check the chain, and give back what `read` returns."""
    session_id = new_id()
    write_carrying(store, session_id, value)
    report = store.verify(session_id)
    assert (report.ok, report.reason) == (True, None)
    payload = store.read(session_id)[1].payload
    assert isinstance(payload, CompressionChanged)
    return payload.compression["v"]


@pytest.mark.parametrize("value", CORPUS, ids=lambda v: repr(v)[:40])
def test_every_kept_value_comes_back_as_the_same_canonical_bytes(
    store: SessionStore, value: Any
) -> None:
    back = round_trip(store, value)

    assert back == value
    assert canonical_json(back) == canonical_json(value)


def test_negative_zero_is_stored_as_zero(store: SessionStore) -> None:
    """JSONB has no negative zero: the canonical form writes `0.0`, so every backend agrees."""
    assert canonical_json({"a": -0.0, "b": [-0.0]}) == b'{"a":0.0,"b":[0.0]}'

    back = round_trip(store, -0.0)

    assert (back, math.copysign(1.0, back)) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (10**4300, "integer of 4,301 digits"),
        (-(10**4300), "integer of 4,301 digits"),
        (nested(127), "nested deeper than 128"),
    ],
    ids=["huge int", "huge negative int", "deep nesting"],
)
def test_values_a_backend_cannot_give_back_are_refused_before_writing(
    store: SessionStore, backend: Backend, value: Any, message: str
) -> None:
    store.append("s1", [started()], expected_version=0)
    before = backend.table_rows()

    with pytest.raises(InvalidEvent, match=message):
        write_carrying(store, "s2", value)

    assert backend.table_rows() == before
    assert store.verify("s1").ok


def test_tool_inputs_keep_their_values_through_a_session(store: SessionStore) -> None:
    session = store.create_session(model="m")
    values = [v for v in CORPUS if not isinstance(v, list)]
    calls = [ToolCall(id=f"c{n}", name="probe", input={"v": v}) for n, v in enumerate(values)]

    session.append_assistant("probing", tool_calls=calls)

    assert store.verify(session.id).ok
    appended = store.read(session.id)[-1].payload
    assert isinstance(appended, MessageAppended)
    inputs = [part.input for part in appended.message.parts if isinstance(part, ToolCallPart)]
    assert inputs == [{"v": v} for v in values]


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.sampled_from([-0.0, 5e-324, 1e15, 1e16, 999999999999999.9, 1e-7])
    | st.text(max_size=8)
    | st.sampled_from(["a\x00", "\udcff"])
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=json_values)
def test_a_value_is_refused_or_survives_the_backend_unchanged(
    store: SessionStore, value: Any
) -> None:
    try:
        expected = canonical_json({"v": value})
    except InvalidEvent:
        with pytest.raises(InvalidEvent):
            write_carrying(store, new_id(), value)
        return

    back = round_trip(store, value)

    assert canonical_json({"v": back}) == expected
