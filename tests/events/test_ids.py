from __future__ import annotations

import itertools
import threading
import time
import uuid
from datetime import UTC, datetime

from sessionstore.events import new_id, seeded_ids, uuid7


def test_uuid7_layout_is_version_7_variant_rfc_and_carries_the_time() -> None:
    before_ms = time.time_ns() // 1_000_000
    value = uuid7()
    after_ms = time.time_ns() // 1_000_000

    assert value.version == 7
    assert value.variant == uuid.RFC_4122
    assert before_ms <= value.int >> 80 <= after_ms + 1


def test_uuid7_values_strictly_increase_within_a_process() -> None:
    values = [uuid7() for _ in range(20_000)]  # many per millisecond: the counter orders them
    assert all(a.int < b.int for a, b in itertools.pairwise(values))
    assert len({v.int for v in values}) == 20_000


def test_new_id_is_the_canonical_string_form() -> None:
    text = new_id()
    assert str(uuid.UUID(text)) == text
    assert len(text) == 36


def test_new_ids_are_uuid7s_written_as_uuid_writes_them_and_increase() -> None:
    texts = [new_id() for _ in range(5_000)]  # written from the bits, not by `uuid.UUID`
    values = [uuid.UUID(text) for text in texts]
    assert [str(value) for value in values] == texts
    assert {v.version for v in values} == {7} and {v.variant for v in values} == {uuid.RFC_4122}
    assert all(a.int < b.int for a, b in itertools.pairwise(values))


def test_seeded_ids_repeat_run_after_run_and_still_increase_from_the_start() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with seeded_ids(7, start):
        first = [new_id() for _ in range(5_000)]  # past 4,096: the counter carries a millisecond
    with seeded_ids(7, start):
        again = [new_id() for _ in range(5_000)]
    with seeded_ids(8, start):
        other = new_id()

    assert first == again
    assert other != first[0]
    values = [uuid.UUID(text) for text in first]
    assert all(a.int < b.int for a, b in itertools.pairwise(values))
    assert {v.version for v in values} == {7} and {v.variant for v in values} == {uuid.RFC_4122}
    assert values[0].int >> 80 == 1_735_689_600_000 == values[4_095].int >> 80
    assert values[4_096].int >> 80 == 1_735_689_600_001


def test_seeded_ids_end_with_their_block_and_stay_in_their_thread() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    seen: list[uuid.UUID] = []
    with seeded_ids(7, start):
        inside = uuid7()
        thread = threading.Thread(target=lambda: seen.append(uuid7()))
        thread.start()
        thread.join()
    after = uuid7()

    assert inside.int >> 80 == 1_735_689_600_000
    assert seen[0].int >> 80 > 1_735_689_600_000 and after.int >> 80 > 1_735_689_600_000
