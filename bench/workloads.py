"""The six workloads of the comparison, run against one store at a time.

Each store gets fresh SQLite files in one folder (one disk for all). A result is either a
number or "n/a: why"; `Results` keeps every sample so the report can take medians of runs.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.mix import messages
from bench.peers import NotSupported, Store

TOKEN_SAMPLE_EVERY = 1
"""Workload 5 reads the live token count after every append (as an agent loop that checks its
budget each turn would)."""


@dataclass
class Config:
    single: int = 10_000
    """Messages appended to one session (workload 1), and the replay/token/size session."""
    sessions: int = 100
    per_session: int = 100
    growth: tuple[int, ...] = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
    resume_sizes: tuple[int, ...] = (1_000, 10_000, 50_000)
    peer_max: int | None = None
    """Grow peers' sessions only this far (a reduced run); `None`: as far as sessionstore."""
    runs: int = 3
    repeats: int = 5
    """Timed repetitions of each read (resume, replay, context())."""
    managed: int = 50_000
    """Events in the managed (pruned and compacted) sessionstore session; 0 to skip."""


@dataclass
class Results:
    """row -> store -> samples (floats) or the reason the store cannot do it."""

    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    na: dict[str, dict[str, str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, row: str, store: str, value: float) -> None:
        self.samples.setdefault(row, {}).setdefault(store, []).append(value)

    def not_available(self, row: str, store: str, reason: str) -> None:
        self.na.setdefault(row, {})[store] = reason


def _ms(job: Callable[[], object]) -> float:
    began = time.perf_counter()
    job()
    return (time.perf_counter() - began) * 1000


def _median_ms(repeats: int, job: Callable[[], object]) -> float:
    return statistics.median(_ms(job) for _ in range(repeats))


def size_on_disk(store: Store, path: Path) -> int:
    """Bytes of every file of the database after folding the WAL into it, so that stores in
    WAL mode and in rollback-journal mode are measured alike."""
    with sqlite3.connect(str(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in store.files(path))


def fresh(store: Store) -> Store:
    """A second adapter of the same kind: a new process's view of the same file."""
    return type(store)()


def _fresh_read(store: Store, path: Path, read: Callable[[Store], object]) -> float:
    """Open a store on `path`, read, close: the time of the open and the read."""
    other = fresh(store)
    began = time.perf_counter()
    other.open(path)
    try:
        read(other)
        return (time.perf_counter() - began) * 1000
    finally:
        other.close()


def growth_run(store: Store, folder: Path, cfg: Config, results: Results, log: Log) -> None:
    """Workloads 1 (first run), 2, 3, 4, 5 and 6 on one session grown to the largest size."""
    name = store.name
    limit = max(cfg.growth)
    if store.name != "sessionstore" and cfg.peer_max is not None:
        limit = min(limit, cfg.peer_max)
    if store.max_messages is not None:
        limit = min(limit, store.max_messages)
    marks = [m for m in cfg.growth if m <= limit]
    path = folder / f"{name.replace(' ', '_')}-growth.db"
    store.open(path)
    try:
        handle = store.new_session("growth")
        latencies: list[float] = []
        token_ms: list[float] = []
        tokens_reason: str | None = None
        for n, msg in enumerate(messages(limit), start=1):
            began = time.perf_counter()
            store.append(handle, msg)
            latencies.append((time.perf_counter() - began) * 1000)
            if n <= cfg.single and tokens_reason is None and n % TOKEN_SAMPLE_EVERY == 0:
                try:
                    token_ms.append(_ms(lambda: store.tokens(handle)))
                except NotSupported as exc:
                    tokens_reason = str(exc)
            if n == cfg.single:
                results.add("append_single", name, statistics.median(latencies))
                results.add("append_single_p95", name, _p95(latencies))
                size = size_on_disk(store, path) / 1e6
                if store.max_messages is None:
                    results.add("size_per_10k", name, size / n * 10_000)
                else:  # its size grows faster than the message count: no per-10k figure
                    results.not_available(
                        "size_per_10k", name, f"{size:,.0f} MB at {n:,} messages, growing with n^2"
                    )
                if tokens_reason is None:
                    results.add("tokens", name, statistics.median(token_ms))
                    results.extra.setdefault("tokens_max_ms", {})[name] = max(token_ms)
                _replay(store, path, cfg, results)
            if n in marks:
                window = latencies[-min(500, n // 2) :]
                results.add(f"growth_append@{n}", name, statistics.median(window))
                results.add(
                    f"growth_context@{n}", name, _median_ms(cfg.repeats, lambda: store.load(handle))
                )
                if n in cfg.resume_sizes:
                    _resume(store, path, n, cfg, results)
                log(f"{name}: {n:,} messages, append median {statistics.median(window):.2f} ms")
        if tokens_reason is not None:
            results.not_available("tokens", name, tokens_reason)
    finally:
        store.close()
    reason = store.max_reason if store.max_messages == limit else "not run this far (--peer-max)"
    if limit < cfg.single:
        for row in ("append_single", "append_single_p95", "size_per_10k", "replay", "tokens"):
            results.not_available(row, name, reason)
        results.extra.setdefault("capped", {})[name] = {
            "messages": limit,
            "append_median_ms": statistics.median(latencies),
            "bytes_on_disk": size_on_disk(store, path),
        }
    for mark in cfg.growth:
        if mark > limit:
            results.not_available(f"growth_append@{mark}", name, reason)
            results.not_available(f"growth_context@{mark}", name, reason)
    for size in cfg.resume_sizes:
        if size > limit:
            results.not_available(f"resume@{size}", name, reason)


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def _resume(store: Store, path: Path, n: int, cfg: Config, results: Results) -> None:
    name = store.name
    times = [_fresh_read(store, path, lambda s: s.resume("growth")) for _ in range(cfg.repeats)]
    results.add(f"resume@{n}", name, statistics.median(times))
    try:
        scratch = [
            _fresh_read(store, path, lambda s: s.from_scratch("growth")) for _ in range(cfg.repeats)
        ]
        results.add(f"resume_scratch@{n}", name, statistics.median(scratch))
    except NotSupported as exc:
        results.not_available(f"resume_scratch@{n}", name, str(exc))


def _replay(store: Store, path: Path, cfg: Config, results: Results) -> None:
    """The context right after the middle message, on a freshly opened store."""
    other = fresh(store)
    other.open(path)
    try:
        middle = cfg.single // 2
        other.replay("growth", middle)  # warm: handles, caches
        results.add(
            "replay", store.name, _median_ms(cfg.repeats, lambda: other.replay("growth", middle))
        )
    except NotSupported as exc:
        results.not_available("replay", store.name, str(exc))
    finally:
        other.close()


def single_run(
    store: Store, folder: Path, cfg: Config, results: Results, run: int, size: bool = False
) -> None:
    """Workload 1, a further run: `single` messages to one session on a fresh file (and its
    size on disk when `size`)."""
    path = folder / f"{store.name.replace(' ', '_')}-single-{run}.db"
    store.open(path)
    try:
        handle = store.new_session(f"single-{run}")
        latencies = []
        for msg in messages(cfg.single):
            began = time.perf_counter()
            store.append(handle, msg)
            latencies.append((time.perf_counter() - began) * 1000)
        results.add("append_single", store.name, statistics.median(latencies))
        results.add("append_single_p95", store.name, _p95(latencies))
        if size:
            mb = size_on_disk(store, path) / cfg.single * 10_000 / 1e6
            results.add("size_per_10k", store.name, mb)
    finally:
        store.close()


def managed_run(store: Store, folder: Path, cfg: Config, results: Results, log: Log) -> None:
    """sessionstore only: a session kept inside its window (older outputs pruned every 100
    events, the head compacted every 300, as `bench.resume` does), resumed with its snapshots
    and folded from the first event."""
    from bench.resume import compact, prune
    from sessionstore import Session

    path = folder / "sessionstore-managed.db"
    store.open(path)
    try:
        session: Session = store.new_session("managed")
        for msg in messages(cfg.managed * 2):
            if session.version >= cfg.managed:
                break
            store.append(session, msg)
            if msg.role == "tool":
                version = session.version
                if version // 300 > (version - 3) // 300:
                    compact(session)
                elif version // 100 > (version - 3) // 100:
                    prune(session)
        live = len(session.context().messages)
        log(f"managed session: {session.version:,} events, {live:,} live messages")
        results.extra["managed"] = {"events": session.version, "live_messages": live}
    finally:
        store.close()
    name = store.name
    times = [_fresh_read(store, path, lambda s: s.resume("managed")) for _ in range(cfg.repeats)]
    scratch = [
        _fresh_read(store, path, lambda s: s.from_scratch("managed")) for _ in range(cfg.repeats)
    ]
    results.add("managed_resume", name, statistics.median(times))
    results.add("managed_scratch", name, statistics.median(scratch))
    other = fresh(store)
    other.open(path)
    try:
        middle = cfg.managed // 2 - 1  # replay() takes a message index: event index + 1
        other.replay("managed", middle)  # warm: the handle
        replays = _median_ms(cfg.repeats, lambda: other.replay("managed", middle))
        results.add("managed_replay", name, replays)
    finally:
        other.close()


def multi_run(store: Store, folder: Path, cfg: Config, results: Results, run: int) -> None:
    """Workload 1b: `sessions` sessions of `per_session` messages each, one after another."""
    path = folder / f"{store.name.replace(' ', '_')}-multi-{run}.db"
    store.open(path)
    try:
        latencies = []
        for number in range(cfg.sessions):
            handle = store.new_session(f"multi-{run}-{number}")
            for msg in messages(cfg.per_session, seed=number):
                began = time.perf_counter()
                store.append(handle, msg)
                latencies.append((time.perf_counter() - began) * 1000)
        results.add("append_multi", store.name, statistics.median(latencies))
    finally:
        store.close()


Log = Callable[[str], None]
