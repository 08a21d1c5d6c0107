"""Properties of the hash chain: any history verifies; any single change is found where it is."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from sessionstore.events import (
    GENESIS_HASH,
    ChainLink,
    canonical_json,
    event_hash,
    new_id,
    verify_chain,
)

storable_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
payloads = st.lists(
    st.dictionaries(st.sampled_from(["text", "id", "n"]), storable_text | st.integers()),
    min_size=1,
    max_size=12,
)


def build_chain(session_id: str, bodies: list[dict[str, object]]) -> list[ChainLink]:
    links, prev = [], GENESIS_HASH
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for seq, body in enumerate(bodies, start=1):
        link = ChainLink(
            seq, new_id(), "MessagePinned", 1, start + timedelta(seconds=seq), prev, "", body
        )
        digest = event_hash(
            prev_hash=prev,
            event_id=link.event_id,
            session_id=session_id,
            seq=seq,
            event_type=link.type,
            schema_version=1,
            recorded_at=link.recorded_at,
            payload_json=canonical_json(body),
        )
        links.append(replace(link, hash=digest))
        prev = digest
    return links


@given(bodies=payloads)
def test_every_untouched_chain_verifies(bodies: list[dict[str, object]]) -> None:
    links = build_chain("s", bodies)
    report = verify_chain("s", links, head_seq=len(links), head_hash=links[-1].hash)
    assert (report.ok, report.events_checked) == (True, len(bodies))


@given(bodies=payloads, data=st.data())
def test_changing_any_payload_is_reported_at_that_seq(
    bodies: list[dict[str, object]], data: st.DataObject
) -> None:
    links = build_chain("s", bodies)
    victim = data.draw(st.integers(0, len(links) - 1))
    links[victim] = replace(links[victim], payload={**links[victim].payload, "forged": True})

    report = verify_chain("s", links)

    assert (report.first_broken_seq, report.events_checked) == (victim + 1, victim)


@given(bodies=payloads.filter(lambda b: len(b) >= 2), data=st.data())
def test_dropping_any_event_is_reported_at_the_gap(
    bodies: list[dict[str, object]], data: st.DataObject
) -> None:
    links = build_chain("s", bodies)
    victim = data.draw(st.integers(0, len(links) - 1))
    del links[victim]

    report = verify_chain("s", links, head_seq=len(bodies))

    assert report.first_broken_seq == victim + 1


def test_a_chain_cannot_be_moved_to_another_session() -> None:
    links = build_chain("s", [{"n": 1}])
    assert verify_chain("other", links).first_broken_seq == 1
