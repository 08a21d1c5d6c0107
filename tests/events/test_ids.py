from __future__ import annotations

import itertools
import time
import uuid

from sessionstore.events import new_id, uuid7


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
