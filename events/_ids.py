"""UUIDv7 identifiers (RFC 9562): time-ordered, so ids sort by creation time.

Python 3.11 has no `uuid.uuid7()`; the layout is small enough to write down.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_last_counter = 0


def uuid7() -> uuid.UUID:
    """A UUIDv7: 48 bits of Unix ms, version 7, a 12-bit counter, variant, 62 random bits.

    Within one process ids are strictly increasing: in the same millisecond the 12-bit field
    (`rand_a`) acts as a counter seeded randomly (RFC 9562, method 1), and when it overflows the
    timestamp is borrowed forward by one millisecond.
    """
    global _last_ms, _last_counter
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
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= rand_b
    return uuid.UUID(int=value)


def new_id() -> str:
    """A new UUIDv7 as its canonical 36-character string."""
    return str(uuid7())
