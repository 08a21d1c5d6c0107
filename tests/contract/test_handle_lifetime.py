"""A `Session` handle its caller drops is freed at once, by reference counting.

A handle holds its session's fold (every live message, tens of thousands of objects in a long
session). A handle that took part in a reference cycle (its context manager holding it
through callbacks, say) would stay in memory until the cyclic collector runs, and that
collector then walks all of it: a server that opens a handle per request would grow between
collections and pay for them."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from sessionstore import SessionStore, ToolCall
from sessionstore.events import CompactionError


@contextmanager
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_dropped_handle_is_freed_without_the_cyclic_collector(store: SessionStore) -> None:
    s = store.create_session(model="m", context_window=1000, output_reserve=0)
    s.append_user("read a.py")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])
    s.append_tool_result("c1", "x\n" * 400)
    s.before_llm_call()
    s.prune(dry_run=True)
    s.restore()
    with contextlib.suppress(CompactionError):  # nothing to compact: it still ran the keeper
        s.compact()
    session_id = s.id

    with collector_off():
        handle = weakref.ref(s)
        del s
        resumed = store.session(session_id)
        resumed.measure()
        resumed_handle = weakref.ref(resumed)
        del resumed

        assert handle() is None
        assert resumed_handle() is None
