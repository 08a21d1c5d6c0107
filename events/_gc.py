"""Python's cyclic garbage collector paused while a read builds a session's objects.

A resume or replay allocates tens of thousands of objects (decoded payloads, messages, their
renders) that all stay alive. Each allocation threshold crossed meanwhile starts a collection
that walks them for nothing: on a 10k-message resume (CPython 3.11) that was a third of the
time, measured. Reference counting still frees everything as usual; the collector runs
again once the outermost read is done. Pausing is process-wide and nests across threads: only
the call that found the collector running turns it back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collection_paused() -> Iterator[None]:
    """Use as `with collection_paused():` or as a decorator, `@collection_paused()`."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
