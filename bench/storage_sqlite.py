"""The interleaved SQLite rows of `bench.storage`: append, size, resume and replay.

sessionstore and the Agents SDK's `SQLiteSession` run in one process, on files in one folder,
taking turns: timings on a shared 2-core machine drift by 30-50% over minutes, so two stores run
one after the other are compared across different weather; alternating puts the drift on both.

- Append: the same seeded message mix (`bench.mix`) goes to both, in batches of `batch`
  messages, the first store of each batch alternating. Ours through the `Session` API (the
  `bench.peers.ours` adapter: `append_user` / `append_assistant` / `append_tool_result`) with
  `sqlite_synchronous="FULL"`; the peer through `add_items` in an event loop, as
  `bench.peers.openai_sqlite` does. Both files are WAL with `synchronous=FULL`: the peer sets
  only `journal_mode=WAL`, so it runs at SQLite's compiled default, read back here from its
  own connection (`PRAGMA synchronous` = 2) and stored in the JSON beside ours. Beside
  them, taking turns too: the raw floor (`RawInsert`: plain `sqlite3`, one INSERT of the
  message's JSON and a COMMIT) at FULL, and ours and raw again at `synchronous=NORMAL`, our
  default, on the rows "at synchronous=NORMAL" (the peer's cell there is its FULL default).
- Size: the files the append left (one session of `count` messages each), after a TRUNCATE
  WAL checkpoint, per 10k messages.
- Resume of an unmanaged session (nothing pruned or compacted, so everything is live), as a
  new process does it: ours opens a new `SessionStore(url)` and calls
  `session(id).context().to_openai()`; the peer makes a new `SQLiteSession(id, path)` and
  awaits `get_items()`; the raw baseline connects with `sqlite3`, selects the session's
  `events.payload` in seq order and `json.loads` each. Closing is not timed. Those rows hold
  references where the texts were; the texts are bodies, so a second raw read ("raw+bodies",
  in the JSON's `extra`) also reads the session's bodies and decodes each to text: the least a
  read of all the session's content does.
- Replay to the middle: `session.context(at=<middle seq>)` on an open handle against the raw
  read of the rows up to that seq on an open connection (the peer keeps no history to replay).

Before each timed read the garbage of the previous one is collected, untimed, so that no store
pays for another's objects; each read runs once untimed first (page cache, lazy imports,
snapshots the resume writes), then the reads rotate their order every round.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import statistics
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.mix import Msg, messages, openai_items
from bench.peers.openai_sqlite import AgentsSQLiteSession
from bench.peers.ours import SessionStoreFull, SessionStoreNormal
from bench.storage_table import OURS, PEER, RAW, Row
from sessionstore import SessionStore
from sessionstore.storage._sqlite import SqliteRecorder

SESSION = "storage"
RAW_BODIES = "raw+bodies"
OURS_NORMAL = "sessionstore NORMAL"
RAW_NORMAL = "raw NORMAL"
Log = Callable[[str], None]
Timed = Callable[[], tuple[float, int]]
"""A read that times itself: (milliseconds, items it returned); cleanup after the clock."""


@dataclass(frozen=True)
class Files:
    """One session of `messages` messages, the same mix in both stores' files."""

    messages: int
    ours: Path
    peer: Path | None


def peer_missing() -> str | None:
    """Why the peer cannot run (its package is missing), or `None`."""
    return AgentsSQLiteSession().available


class RawInsert:
    """The floor of an append: plain `sqlite3`, one `INSERT` of the message's JSON (the items
    the peer stores) and a `COMMIT` per call, on a WAL file at `synchronous`."""

    def __init__(self, synchronous: str) -> None:
        self.synchronous = synchronous
        self._conn: sqlite3.Connection | None = None

    def open(self, path: Path) -> None:
        conn = sqlite3.connect(str(path), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, data TEXT)")
        self._conn = conn

    def new_session(self, session_id: str) -> str:
        return session_id

    def append(self, handle: str, msg: Msg) -> None:
        assert self._conn is not None
        self._conn.execute("BEGIN")
        self._conn.execute(
            "INSERT INTO messages (session_id, data) VALUES (?, ?)",
            (handle, json.dumps(openai_items(msg))),
        )
        self._conn.execute("COMMIT")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def append_rows(
    folder: Path, count: int, batch: int, extra: dict[str, Any], log: Log
) -> tuple[list[Row], Files]:
    """The append median and p95 rows, at `synchronous=FULL` (ours, the peer at its default,
    raw) and at `NORMAL` (ours at its default, raw; the peer's FULL is its default), and the
    size row; the files are kept for the reads. All five take turns in one process."""
    ours, peer, ours_normal = SessionStoreFull(), AgentsSQLiteSession(), SessionStoreNormal()
    raw_full, raw_normal = RawInsert("FULL"), RawInsert("NORMAL")
    files = Files(count, folder / f"ours-{count}.db", folder / f"peer-{count}.db")
    stores: list[tuple[str, Any, Any]] = []
    ours.open(files.ours)
    stores.append((OURS, ours, ours.new_session(SESSION)))
    if peer.available is None:
        assert files.peer is not None
        peer.open(files.peer)
        stores.append((PEER, peer, peer.new_session(SESSION)))
    for name, store, file in (
        (RAW, raw_full, folder / f"raw-full-{count}.db"),
        (OURS_NORMAL, ours_normal, folder / f"ours-normal-{count}.db"),
        (RAW_NORMAL, raw_normal, folder / f"raw-normal-{count}.db"),
    ):
        store.open(file)
        stores.append((name, store, store.new_session(SESSION)))
    latencies: dict[str, list[float]] = {name: [] for name, _, _ in stores}
    mix = list(messages(count))
    try:
        for number, start in enumerate(range(0, count, batch)):
            shift = number % len(stores)
            for name, store, handle in stores[shift:] + stores[:shift]:
                for msg in mix[start : start + batch]:
                    began = time.perf_counter()
                    store.append(handle, msg)
                    latencies[name].append((time.perf_counter() - began) * 1000)
            if (start + batch) % 2_000 == 0:
                log(f"storage: appended {start + batch:,} of {count:,} to each store")
        extra["durability"] = _durability(ours, stores)
    finally:
        for _, store, _ in stores:
            store.close()
        peer.close()
    median = Row("append_median", "Append via Session API, median per call", "ms")
    median.target = "<= 0.5x peer (synchronous=FULL both)"
    p95 = Row("append_p95", "Append via Session API, p95 per call", "ms")
    p95.target = "<= 1x peer"
    normal = Row(
        "append_median_normal", "… at synchronous=NORMAL (ours, raw), median per call", "ms"
    )
    normal.target = "<= 10x raw (WAL, NORMAL)"
    normal_p95 = Row("append_p95_normal", "… at synchronous=NORMAL (ours, raw), p95", "ms")
    size = Row("size_per_10k", "Size on disk per 10k msgs (after WAL checkpoint)", "MB")
    for name, samples in latencies.items():
        if name in (OURS_NORMAL, RAW_NORMAL):
            column = OURS if name == OURS_NORMAL else RAW
            normal.values[column] = statistics.median(samples)
            normal_p95.values[column] = p95_of(samples)
            continue
        median.values[name] = statistics.median(samples)
        p95.values[name] = p95_of(samples)
        if name == RAW:
            continue
        if name == PEER:  # its default durability is FULL: the same cell on both rows
            normal.values[name] = median.values[name]
            normal_p95.values[name] = p95.values[name]
        path = files.ours if name == OURS else files.peer
        assert path is not None
        size.values[name] = bytes_on_disk(path) / count * 10_000 / 1e6
    extra["append_calls"] = {  # per-call samples would make the JSON megabytes
        name: {"count": len(v), "mean_ms": statistics.fmean(v), "max_ms": max(v)}
        for name, v in latencies.items()
    }
    extra["load_average_after_append"] = os.getloadavg()
    rows = [median, p95, normal, normal_p95, size]
    if peer.available is not None:
        for row in rows:
            row.na[PEER] = f"not installed: {peer.available}"
        files = Files(count, files.ours, None)
    return rows, files


def build(folder: Path, count: int) -> Files:
    """A session of `count` messages in each store, untimed, for the read rows."""
    ours, peer = SessionStoreFull(), AgentsSQLiteSession()
    files = Files(count, folder / f"ours-{count}.db", None)
    ours.open(files.ours)
    try:
        handle = ours.new_session(SESSION)
        for msg in messages(count):
            ours.append(handle, msg)
    finally:
        ours.close()
    if peer.available is not None:
        return files
    files = Files(count, files.ours, folder / f"peer-{count}.db")
    assert files.peer is not None
    peer.open(files.peer)
    try:
        handle = peer.new_session(SESSION)
        for msg in messages(count):
            peer.append(handle, msg)
    finally:
        peer.close()
    return files


def resume_row(files: Files, repeats: int, extra: dict[str, Any]) -> Row:
    """Resume of the unmanaged session, ours against the peer and the raw read."""
    n = files.messages
    row = Row(f"resume@{n}", f"Resume unmanaged {k(n)}-msg session (open + to_openai)", "ms")
    row.target = "<= 0.5x peer, <= 1x raw"
    reads: dict[str, Timed] = {OURS: lambda: ours_resume(files.ours)}
    loop = _peer_loop() if files.peer is not None else None
    if loop is not None and files.peer is not None:
        peer_path = files.peer
        reads[PEER] = lambda: peer_resume(loop, peer_path)
    else:
        row.na[PEER] = "not installed"
    reads[RAW] = lambda: raw_read(files.ours)
    reads[RAW_BODIES] = lambda: raw_read(files.ours, bodies=True)
    try:
        row.samples, counts = interleave(reads, repeats)
    finally:
        if loop is not None:
            loop.close()
    extra.setdefault("items_read", {})[row.key] = counts
    extra.setdefault("json_bytes_read", {})[row.key] = json_bytes(files)
    extra.setdefault(RAW_BODIES, {})[row.key] = row.value(RAW_BODIES)
    return row


def json_bytes(files: Files) -> dict[str, int]:
    """Bytes of JSON each resume decodes: our `events.payload` rows (what the raw baseline
    reads too) and the peer's `message_data` rows."""
    found: dict[str, int] = {}
    queries = {
        OURS: (files.ours, "SELECT sum(length(CAST(payload AS BLOB))) FROM events"),
        PEER: (files.peer, "SELECT sum(length(CAST(message_data AS BLOB))) FROM agent_messages"),
    }
    where = " WHERE session_id = ?"
    for name, (path, sql) in queries.items():
        if path is not None:
            with sqlite3.connect(str(path)) as conn:
                found[name] = conn.execute(sql + where, (SESSION,)).fetchone()[0]
    return found


def replay_row(files: Files, repeats: int, extra: dict[str, Any]) -> Row:
    """The context right after the middle message, on an open handle, against the raw read
    of the rows up to it on an open connection."""
    n = files.messages
    middle = n // 2 + 1  # seq 1 is SessionStarted: the (n/2)-th message is seq n/2 + 1
    row = Row(f"replay@{n}", f"Replay: context(at=middle) of the {k(n)}-msg session", "ms")
    row.target = "<= 1x raw"
    row.na[PEER] = "keeps only the current item list: no replay to a point"
    store = SessionStore(f"sqlite:///{files.ours}")
    conn = sqlite3.connect(str(files.ours))
    try:
        session = store.session(SESSION)

        def ours() -> tuple[float, int]:
            began = time.perf_counter()
            context = session.context(at=middle)
            return (time.perf_counter() - began) * 1000, len(context.messages)

        def raw() -> tuple[float, int]:
            began = time.perf_counter()
            items = _decoded(conn, middle)
            return (time.perf_counter() - began) * 1000, len(items)

        row.samples, counts = interleave({OURS: ours, RAW: raw}, repeats)
    finally:
        conn.close()
        store.close()
    extra.setdefault("items_read", {})[row.key] = counts
    return row


def ours_resume(path: Path) -> tuple[float, int]:
    """A new store on the file, the session, its live context rendered for Chat Completions."""
    began = time.perf_counter()
    store = SessionStore(f"sqlite:///{path}")
    try:
        messages = store.session(SESSION).context().to_openai()
        return (time.perf_counter() - began) * 1000, len(messages)
    finally:
        store.close()


def peer_resume(loop: Any, path: Path) -> tuple[float, int]:
    """A new `SQLiteSession` on the file and its `get_items()`."""
    from agents import SQLiteSession

    began = time.perf_counter()
    session = SQLiteSession(SESSION, str(path))
    try:
        items = loop.run(session.get_items())
        return (time.perf_counter() - began) * 1000, len(items)
    finally:
        session.close()


def raw_read(path: Path, *, bodies: bool = False) -> tuple[float, int]:
    """Connect with sqlite3, read the session's payloads in seq order, `json.loads` each; with
    `bodies`, also read the session's bodies and decode each to text."""
    began = time.perf_counter()
    conn = sqlite3.connect(str(path))
    try:
        items = _decoded(conn, None)
        if bodies:
            texts = [
                (zlib.decompress(data) if compression == "zlib" else data).decode()
                for compression, data in conn.execute(_BODIES, (SESSION,))
            ]
            assert texts
        return (time.perf_counter() - began) * 1000, len(items)
    finally:
        conn.close()


_BODIES = "SELECT compression, data FROM blobs WHERE session_id = ?"


def _decoded(conn: sqlite3.Connection, up_to: int | None) -> list[Any]:
    sql = "SELECT payload FROM events WHERE session_id = ? AND seq <= ? ORDER BY seq"
    args = (SESSION, up_to if up_to is not None else 2**63 - 1)
    return [json.loads(payload) for (payload,) in conn.execute(sql, args)]


def interleave(
    reads: dict[str, Timed], repeats: int
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """One untimed round, then `repeats` rounds whose order rotates by one each time."""
    names = list(reads)
    counts = {name: reads[name]()[1] for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            samples[name].append(reads[name]()[0])
    return samples, counts


def bytes_on_disk(path: Path) -> int:
    """Every file of the database (main, WAL, shared memory) after a TRUNCATE checkpoint."""
    with sqlite3.connect(str(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def p95_of(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def _peer_loop() -> Any:
    from bench.peers._aio import Loop

    return Loop()


def _durability(ours: SessionStoreFull, stores: list[tuple[str, Any, Any]]) -> dict[str, Any]:
    """`journal_mode` and `synchronous` (0 OFF, 1 NORMAL, 2 FULL) as each store's own
    connections have them, read while the append row's stores are open."""
    found: dict[str, Any] = {}
    recorder = ours.store._recorder
    assert isinstance(recorder, SqliteRecorder)
    with recorder.engine.connect() as conn:
        found[OURS] = {
            "journal_mode": conn.exec_driver_sql("PRAGMA journal_mode").scalar(),
            "synchronous": conn.exec_driver_sql("PRAGMA synchronous").scalar(),
        }
    for name, _, handle in stores:
        if name == PEER:
            connection = handle._get_connection()  # the peer's own per-thread connection
            found[PEER] = {
                "journal_mode": connection.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": connection.execute("PRAGMA synchronous").fetchone()[0],
            }
    return found
