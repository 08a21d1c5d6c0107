"""UUIDv7 identifiers (RFC 9562): time-ordered, so ids sort by creation time.

Python 3.11 has no `uuid.uuid7()`; the layout is small enough to write down.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

_lock = threading.Lock()
_last_ms = 0
_last_counter = 0


class _SeededIds:
    """The ids of one `seeded_ids` block: a millisecond, a counter and a seeded generator."""

    def __init__(self, seed: int, start_ms: int) -> None:
        self.rng = random.Random(seed)
        self.ms = start_ms
        self.counter = -1

    def next(self) -> int:
        self.counter += 1
        if self.counter > 0xFFF:
            self.ms += 1
            self.counter = 0
        return _layout(self.ms, self.counter, self.rng.getrandbits(62))


_seeded: ContextVar[_SeededIds | None] = ContextVar("sessionstore_seeded_ids", default=None)


def uuid7() -> uuid.UUID:
    """A UUIDv7: 48 bits of Unix ms, version 7, a 12-bit counter, variant, 62 random bits.

    Within one process ids are strictly increasing: in the same millisecond the 12-bit field
    (`rand_a`) acts as a counter seeded randomly (RFC 9562, method 1), and when it overflows the
    timestamp is borrowed forward by one millisecond. Inside a `seeded_ids` block they come
    from its seed instead.
    """
    return uuid.UUID(int=_uuid7_int())


def _uuid7_int() -> int:
    """The 128 bits of the next UUIDv7 (see `uuid7`)."""
    global _last_ms, _last_counter
    seeded = _seeded.get()
    if seeded is not None:
        return seeded.next()
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            _last_ms = ms
            _last_counter = int.from_bytes(os.urandom(2), "big") & 0x7FF  # room to count up
        else:
            _last_counter += 1
            if _last_counter > 0xFFF:
                _last_ms += 1
                _last_counter = 0
        ms, counter = _last_ms, _last_counter
    return _layout(ms, counter, int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1))


def _layout(ms: int, counter: int, rand_b: int) -> int:
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= rand_b
    return value


def new_id() -> str:
    """A new UUIDv7 as its canonical 36-character string, written from its bits: an append
    makes three (event, message, part), and a `uuid.UUID` made only to be printed cost two
    thirds of each."""
    digits = "%032x" % _uuid7_int()  # noqa: UP031 - the fastest spelling, on every id
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


@contextmanager
def seeded_ids(seed: int, start: datetime) -> Iterator[None]:
    """Inside the block, the ids this context makes (`uuid7`, `new_id`, and so every default
    message, part and event id) come from `seed` and `start`, not from the clock and the OS:
    the same calls make the same ids, run after run.

    For a scripted session whose token counts must repeat (`sessionstore demo`, a fixture):
    the model is shown ids (a pruned output's placeholder names its part), and two random ids
    take from 43 to 54 tokens, so with random ids every prune would free a different count.
    The ids still increase from `start`'s millisecond, as UUIDv7s do; they repeat from one
    run to the next, so a block must make none that has to be unique beyond one session.
    Other threads and contexts keep drawing random ids; blocks nest, the inner one winning.
    """
    token = _seeded.set(_SeededIds(seed, int(start.timestamp() * 1000)))
    try:
        yield
    finally:
        _seeded.reset(token)
