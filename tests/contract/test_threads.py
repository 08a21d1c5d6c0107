"""A `SessionStore` and a `Session` may be shared by threads, the in-memory store included.

The in-memory interpreter test runs in a child process: the defect it guards against was a
segfault, which would otherwise take the test run down with it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable

from sessionstore import SessionStore, Usage
from tests.conftest import Backend

THREADS = 4


def run_together(work: Callable[[int], None]) -> list[BaseException]:
    """Run `work(n)` in THREADS threads released at once; the exceptions they raised."""
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def runner(n: int) -> None:
        start.wait()
        try:
            work(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


IN_MEMORY_FROM_THREADS = """
import threading
from sessionstore import SessionStore

store = SessionStore("sqlite://")
start = threading.Barrier(4)
errors = []

def work(n):
    start.wait()
    try:
        for i in range(15):
            s = store.create_session(title=f"t{n}-{i}")
            s.append_user("hello")
            s.append_assistant("hi")
            store.sessions()
            s.context()
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(len(store.sessions()), len(errors), errors[:1])
"""


def test_the_in_memory_store_works_from_many_threads() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IN_MEMORY_FROM_THREADS],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "60 0 []", "")


def test_a_store_shared_by_threads_loses_no_session(backend: Backend) -> None:
    store = SessionStore(backend.url)

    def work(n: int) -> None:
        for i in range(5):
            s = store.create_session(title=f"t{n}-{i}")
            s.append_user(f"hello from {n}")

    assert run_together(work) == []
    assert len(store.sessions()) == THREADS * 5
    assert all(store.verify(info.id).ok for info in store.sessions())


def test_one_session_shared_by_threads_stays_consistent(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=3)
    s = store.create_session(context_window=8_000, output_reserve=1_000)
    s.configure(keep_recent_tokens=200)

    def work(n: int) -> None:
        for i in range(8):
            s.append_user(f"{n}-{i} " * 150)
            s.append_assistant(f"answer {n}-{i}", usage=Usage(input=s.tokens, output=5))
            s.before_llm_call()
            s.context()
            assert s.tokens >= 0

    assert run_together(work) == []
    fresh = store._log.fold_from_scratch(s.id, store.version(s.id))
    assert (s.version, s.tokens) == (fresh.seq, fresh.tokens)
    assert s.context() == SessionStore(backend.url).session(s.id).context()
    assert store.verify(s.id).ok
