"""The PostgreSQL multi-writer row of `bench.storage`: appends per second of `writers`
processes on distinct sessions, through our `Session` API, against the same number of
processes doing raw psycopg `INSERT` + `COMMIT` of rows of the same messages.

Everything happens in a scratch database (`bench_mw`, created on the server of the URL given
and dropped afterwards, even on failure), so no table of the `test` database is touched. Its
schema comes from `SessionStore` (migrated once, before the writers start); the raw table is
the least an event log needs: a position, the session, its seq (unique with the session) and
the message as JSONB.

Each writer process (spawned, so it shares nothing with this one) opens its connection,
prepares its message stream (`bench.mix`, seeded by the writer's number) and waits at a
barrier; all start together and append one message per transaction, as an agent loop does,
for `seconds`. A writer's rate is its appends over its own elapsed time; the row is their sum.
Ours and raw alternate by rounds (ours first in even rounds), on fresh sessions each round;
the row shows the median of the rounds. The server, its `synchronous_commit` and the machine
are the same for both; the writers and the server share its cores.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict
from multiprocessing.synchronize import Barrier
from queue import Empty
from typing import Any

import sqlalchemy as sa

from bench.mix import Msg, messages
from bench.peers.ours import SessionStoreNormal
from bench.storage_table import OURS, RAW, Row

SCRATCH = "bench_mw"
RAW_TABLE = """CREATE TABLE raw_events (
    position BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    payload JSONB NOT NULL,
    UNIQUE (session_id, seq)
)"""
Append = Callable[[Msg], None]


def pg_row(
    url: str,
    writers: int,
    seconds: float,
    rounds: int,
    extra: dict[str, Any],
    log: Callable[[str], None],
) -> Row:
    row = Row(
        "pg_writers",
        f"PostgreSQL, {writers} writer processes, distinct sessions: appends/s",
        "/s",
        higher_is_better=True,
    )
    row.target = ">= 0.5x raw"
    try:
        import psycopg
    except ImportError as exc:
        row.na[OURS] = row.na[RAW] = f"psycopg not installed: {exc}"
        return row
    server = sa.make_url(url)
    scratch = server.set(database=SCRATCH)
    admin_info = _conninfo(server)
    try:
        admin = psycopg.connect(admin_info, autocommit=True)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0]
        row.na[OURS] = row.na[RAW] = f"no server at {server.render_as_string()}: {reason}"
        return row
    try:
        admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {SCRATCH}")
        _prepare(scratch)
        extra["pg"] = {
            "server": admin.execute("SHOW server_version").fetchone(),
            "synchronous_commit": admin.execute("SHOW synchronous_commit").fetchone(),
            "rounds": [],
        }
        samples: dict[str, list[float]] = {OURS: [], RAW: []}
        for round_ in range(rounds):
            order = (OURS, RAW) if round_ % 2 == 0 else (RAW, OURS)
            for kind in order:
                rate, counts = _run(kind, scratch, writers, seconds, round_)
                samples[kind].append(rate)
                extra["pg"]["rounds"].append({"kind": kind, "rate": rate, "counts": counts})
                log(f"storage: PostgreSQL round {round_ + 1}, {kind}: {rate:,.0f} appends/s")
        row.samples = samples
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH} WITH (FORCE)")
        admin.close()
    return row


def _conninfo(url: sa.URL) -> str:
    """The libpq URL psycopg takes, from a SQLAlchemy one."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _prepare(scratch: sa.URL) -> None:
    """Our schema (migrated now, not by eight writers at once) and the raw table."""
    import psycopg

    from sessionstore import SessionStore

    SessionStore(scratch.render_as_string(hide_password=False)).close()
    with psycopg.connect(_conninfo(scratch)) as conn:
        conn.execute(RAW_TABLE)


def _run(
    kind: str, scratch: sa.URL, writers: int, seconds: float, round_: int
) -> tuple[float, list[int]]:
    """(appends/s summed over the writers, appends per writer)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers + 1)
    results: Any = context.Queue()
    url = scratch.render_as_string(hide_password=False)
    processes = [
        context.Process(
            target=writer,
            args=(kind, url, f"mw-{kind}-{round_}-{number}", number, seconds, barrier, results),
        )
        for number in range(writers)
    ]
    for process in processes:
        process.start()
    try:
        barrier.wait(timeout=180)
        outcomes = [results.get(timeout=seconds + 120) for _ in processes]
    except Exception as exc:
        errors = []
        while True:
            try:
                errors.append(results.get_nowait())
            except Empty:
                break
        raise RuntimeError(f"{kind} writers failed: {errors or exc!r}") from exc
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()
    failed = [o for o in outcomes if isinstance(o, str)]
    if failed:
        raise RuntimeError(f"{kind} writers failed: {failed[0]}")
    return sum(count / elapsed for count, elapsed in outcomes), [c for c, _ in outcomes]


def writer(
    kind: str,
    url: str,
    session_id: str,
    seed: int,
    seconds: float,
    barrier: Barrier,
    results: Any,
) -> None:
    """One writer process: connect, wait for the others, append for `seconds`, report
    (appends, elapsed seconds), or the traceback as text."""
    try:
        append, close = (_ours if kind == OURS else _raw)(url, session_id)
        stream = _endless(seed)
        next_message = next(stream)
    except BaseException:
        barrier.abort()
        results.put(traceback.format_exc())
        return
    try:
        barrier.wait(timeout=180)
        began = time.perf_counter()
        deadline = began + seconds
        count = 0
        while time.perf_counter() < deadline:
            append(next_message)
            count += 1
            next_message = next(stream)
        results.put((count, time.perf_counter() - began))
    except BaseException:
        results.put(traceback.format_exc())
    finally:
        close()


def _endless(seed: int) -> Iterator[Msg]:
    """The mix, long enough for any run (a generator: nothing is made ahead)."""
    return iter(messages(10**9, seed=seed))


def _ours(url: str, session_id: str) -> tuple[Append, Callable[[], None]]:
    from sessionstore import SessionStore

    store = SessionStore(url)
    adapter = SessionStoreNormal()  # its `append`: one Session call per message
    session = store.create_session(
        model="gpt-4o", context_window=128_000, title="bench", session_id=session_id
    )
    return (lambda msg: adapter.append(session, msg)), store.close


def _raw(url: str, session_id: str) -> tuple[Append, Callable[[], None]]:
    import psycopg

    conn = psycopg.connect(_conninfo(sa.make_url(url)))
    seq = 0
    insert = "INSERT INTO raw_events (session_id, seq, payload) VALUES (%s, %s, %s::jsonb)"

    def append(msg: Msg) -> None:
        nonlocal seq
        seq += 1
        conn.execute(insert, (session_id, seq, json.dumps(asdict(msg))))
        conn.commit()

    return append, conn.close
