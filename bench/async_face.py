"""What an awaited append costs, run by hand: `python -m bench.async_face [--rows N]`.

The figures behind `sessionstore.aio._async`'s choice of worker threads over an async driver. On one
SQLite file each (WAL, `synchronous=NORMAL`, as the store opens it), the median of N calls
made one after another:
- `Session.append_user` called directly, and `AsyncSession.append_user` awaited (the same
  sync call in a worker thread, behind the handle's lock);
- a bare INSERT + COMMIT of one row through SQLAlchemy Core: sync (pysqlite) on the caller's
  thread, the same awaited in a worker thread (`asyncio.to_thread`), and async (aiosqlite, when
  installed with greenlet: they are not our dependencies; the row says so otherwise).
The last two are the fair pair: one statement's worth of work, handed to a thread once, or
through an async driver, which hands each statement to its own thread and back (an append
is five or six statements: BEGIN IMMEDIATE, head, event, bodies, COMMIT).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import sqlalchemy as sa

from sessionstore import AsyncSessionStore, SessionStore

ROWS = sa.table("rows", sa.column("id", sa.Integer), sa.column("body", sa.Text))
CREATE = "CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)"
PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(call: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        samples.append(time.perf_counter() - began)
    return samples


async def timed_async(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - began)
    return samples


def sync_session(folder: Path, count: int) -> float:
    with SessionStore(f"sqlite:///{folder / 'sync.db'}") as store:
        s = store.create_session(model="m")
        return median_ms(timed(lambda: s.append_user("please fix the failing test"), count))


def async_session(folder: Path, count: int) -> float:
    async def run() -> float:
        async with AsyncSessionStore(f"sqlite:///{folder / 'async.db'}") as store:
            s = await store.create_session(model="m")
            return median_ms(
                await timed_async(lambda: s.append_user("please fix the failing test"), count)
            )

    return asyncio.run(run())


def core_sync(folder: Path, count: int, in_thread: bool = False) -> float:
    engine = sa.create_engine(f"sqlite:///{folder / f'core-{in_thread}.db'}")
    with engine.connect() as conn:
        for statement in (*PRAGMAS, CREATE):
            conn.exec_driver_sql(statement)
        conn.commit()

        def insert() -> None:
            conn.execute(sa.insert(ROWS).values(body="please fix the failing test"))
            conn.commit()

        if in_thread:
            samples = asyncio.run(timed_async(lambda: asyncio.to_thread(insert), count))
        else:
            samples = timed(insert, count)
    engine.dispose()
    return median_ms(samples)


def core_in_thread(folder: Path, count: int) -> float:
    return core_sync(folder, count, in_thread=True)


def core_async(folder: Path, count: int) -> float | str:
    try:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(f"sqlite+aiosqlite:///{folder / 'aio.db'}")
    except ImportError as exc:
        return f"n/a: {str(exc).split('.')[0]}"

    async def run() -> float:
        async with engine.connect() as conn:
            for statement in (*PRAGMAS, CREATE):
                await conn.exec_driver_sql(statement)
            await conn.commit()

            async def insert() -> None:
                await conn.execute(sa.insert(ROWS).values(body="please fix the failing test"))
                await conn.commit()

            result = median_ms(await timed_async(insert, count))
        await engine.dispose()
        return result

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000)
    args = parser.parse_args()
    rows: list[tuple[str, Callable[[Path, int], float | str]]] = [
        ("Session.append_user, direct", sync_session),
        ("AsyncSession.append_user, awaited", async_session),
        ("INSERT + COMMIT, SQLAlchemy sync", core_sync),
        ("INSERT + COMMIT, SQLAlchemy sync, to_thread", core_in_thread),
        ("INSERT + COMMIT, SQLAlchemy async (aiosqlite)", core_async),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for label, measure in rows:
            figure = measure(Path(folder), args.rows)
            shown = f"{figure:.3f} ms" if isinstance(figure, float) else figure
            print(f"{label:<46} median {shown}")


if __name__ == "__main__":
    main()
