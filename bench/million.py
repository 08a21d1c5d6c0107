"""A session of a million events: replay at its middle, `context()` on an open handle, resume,
`verify` and peak memory, run by hand:
`python -m bench.million [--events 1000000] [--url URL] [--cache /tmp/...db] [--runs 3]`, or its
rows in `python -m bench` (left out of a `--quick` run: building the session takes minutes the
first time, and the run a few minutes after).

The session is an agent loop kept inside its window, as a long-running agent's is: user turn,
assistant tool call, tool output (200 B to 1.5 KB, each distinct), repeated; every 100 events
the older tool outputs are pruned and every 300 events the head is compacted into a summary
(`bench.resume`'s managed shape). Its live context stays a few hundred messages long whatever
the session's length, so each figure measures what the length costs, not a longer context.

It is built quickly: events are encoded and chained by the log's own functions and written in
batches of `BATCH` rows straight through the recorder (no fold, no snapshots, no policies),
into a SQLite file kept under /tmp and reused by later runs (`--url` builds on another
database once, then reuses it too, found by its session id). Nothing in it was ever read, so
the first resume finds no checkpoint: it folds the whole log once and writes the checkpoints
the later reads start from; that first resume is shown apart ("cold"), the rest are medians.

Each figure: `context(at=middle)` on an open handle; `context()` on a handle just opened (the
fold at the head is in memory: the Context built from it); resume (a new `SessionStore`,
`session(id).context().to_openai()`); `store.verify(id)`; the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sessionstore import SessionStore, VerifyReport
from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    OutputsPruned,
    Payload,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.log import chain, encode_batch, event_row, index_rows, pack_all
from sessionstore.storage import Head, NewSession, Recorder

SESSION = "million"
BATCH = 2_000
"""Rows per write while building."""
TARGETS = {"replay": 1.0, "context": 0.5, "resume": 2.0, "verify": 20.0, "memory_gb": 1.0}
NAMES = {
    "replay": "replay at the middle (context(at=middle))",
    "context": "context().to_openai() on an open handle",
    "resume": "resume (new store, session(id).context().to_openai())",
    "verify": "verify(id)",
    "memory_gb": "peak memory (GB, the whole run)",
}


def agent_loop(events: int) -> Iterator[Payload]:
    """The payloads of a managed agent loop of `events` events (see the module docstring)."""
    yield SessionStarted(title="a million events", model="gpt-4o", context_window=128_000)
    live: list[tuple[str, str, tuple[str, ...]]] = []  # (message id, role, result part ids)
    pruned: set[str] = set()
    sizes = (200, 600, 1_500)
    n = 1
    phase = 0
    while n < events:
        if n % 300 == 299 and phase == 0:
            last_user = max(i for i, (_, role, _) in enumerate(live) if role == "user")
            summary = Message(role="user", parts=(TextPart(text=f"Summary {n}: " + "work " * 60),))
            yield ContextCompacted(
                summary=summary,
                first_kept_message_id=live[last_user][0],
                replaced_message_ids=tuple(m for m, _, _ in live[:last_user]),
                tokens_before=0,
                tokens_after=0,
                reason="manual",
                summarizer="bench",
            )
            live = [(summary.id, "user", ()), *live[last_user:]]
        elif n % 100 == 99 and phase == 0 and live:
            older = [p for _, _, parts in live[:-20] for p in parts if p not in pruned]
            pruned.update(older)
            yield OutputsPruned(
                part_ids=tuple(older) or (live[-1][2][0],),
                placeholder="[Output pruned; restore with part id {part_id}]",
                placeholder_tokens=14,
                tokens_freed=0,
                reason="bench",
            )
        else:
            if phase == 0:
                text = f"please look at module {n} and fix the failing test"
                message = Message(role="user", parts=(TextPart(text=text),))
                live.append((message.id, "user", ()))
            elif phase == 1:
                call = ToolCallPart.from_input(
                    call_id=f"c{n}", name="read", input={"path": f"src/m{n}.py"}
                )
                message = Message(role="assistant", parts=(call,))
                live.append((message.id, "assistant", ()))
            else:
                size = sizes[(n // 3) % len(sizes)]
                output = (f"{n:>9} " + "x" * 69 + "\n") * (size // 80)
                result = ToolResultPart(call_id=f"c{n - 1}", output=output)
                message = Message(role="tool", parts=(result,))
                live.append((message.id, "tool", (result.id,)))
            phase = (phase + 1) % 3
            yield MessageAppended(message=message)
        n += 1


def build(recorder: Recorder, events: int, log: Callable[[str], None]) -> None:
    """Write the session in batches straight through the recorder, with its search index
    rows (so that `verify`, which checks them, passes)."""
    head: Head | None = None
    started = datetime(2026, 1, 1, tzinfo=UTC)
    loop = agent_loop(events)
    written = 0
    began = time.perf_counter()
    while written < events:
        payloads = [p for _, p in zip(range(min(BATCH, events - written)), loop, strict=False)]
        batch = encode_batch(payloads, 64 * 1024 * 1024)
        times = [started + timedelta(milliseconds=written + i) for i in range(len(batch))]
        links = chain(
            SESSION, batch, head.seq if head else 0, head.hash if head else "0" * 64, times
        )
        rows = [
            event_row(SESSION, link, item.payload_json)
            for link, item in zip(links, batch, strict=True)
        ]
        new = NewSession("a million events", None, None, 128_000) if head is None else None
        bodies = pack_all(body for item in batch for body in item.bodies)
        texts = {body.digest: body.text for item in batch for body in item.bodies}
        index, unindex = index_rows(links, texts)  # the search index, as an append writes it
        recorder.write(SESSION, head, rows, new, bodies, index=index, unindex=unindex)
        head = Head(links[-1].seq, links[-1].hash, links[-1].recorded_at)
        written += len(batch)
        if written % 100_000 < BATCH:
            log(f"built {written:,} events ({time.perf_counter() - began:.0f} s)")


def timed(job: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one run of `job`: on a shared machine
    the second says how much of the first was waiting for a core."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    job()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_s(runs: int, job: Callable[[], object]) -> tuple[float, float]:
    samples = [timed(job) for _ in range(runs)]
    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--url", help="a database URL (default: a SQLite file under /tmp)")
    parser.add_argument("--cache", type=Path, help="the SQLite file to build or reuse")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--ratios",
        action="store_true",
        help="also the resume (3k, 10k) and replay (10k) rows against the peer and the raw read",
    )
    args = parser.parse_args(argv)
    cache = args.cache or Path(f"/tmp/sessionstore-bench-million-{args.events}.db")
    url = args.url or f"sqlite:///{cache}"

    def log(text: str) -> None:
        print(f"  ... {text}", file=sys.stderr, flush=True)

    with SessionStore(url) as store:
        if store._log.recorder.head(SESSION) is None:
            log(f"building {args.events:,} events in {url}")
            build(store._log.recorder, args.events, log)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"command: python -m bench.million {' '.join(argv or sys.argv[1:])}")
    print(f"database: {url}")
    figures: dict[str, tuple[float, float]] = {}

    def resume() -> object:
        with SessionStore(url) as fresh:
            return fresh.session(SESSION).context().to_openai()

    cold, cold_cpu = timed(resume)
    print(
        f"cold resume (folds the log once, writes checkpoints): {cold:.2f} s ({cold_cpu:.2f} s CPU)"
    )
    figures["resume"] = median_s(args.runs, resume)
    with SessionStore(url) as store:
        session = store.session(SESSION)
        middle = session.version // 2
        figures["replay"] = median_s(args.runs, lambda: session.context(at=middle))
        handles = [store.session(SESSION) for _ in range(args.runs)]  # opened, not yet read
        figures["context"] = median_s(args.runs, lambda: handles.pop().context().to_openai())
        if not args.skip_verify:
            reports: list[VerifyReport] = []
            figures["verify"] = timed(lambda: reports.append(store.verify(SESSION)))
            if not reports[0].ok:  # a verify that fails measured something else
                raise SystemExit(f"verify failed: {reports[0].problems or reports[0].reason}")
    memory = peak_gb()
    figures["memory_gb"] = (memory, memory)
    if args.json is not None:
        args.json.write_text(json.dumps({"events": args.events, "cold": cold, "figures": figures}))
    for key, name in NAMES.items():
        if key in figures:
            unit = "GB" if key == "memory_gb" else "s"
            (value, cpu), target = figures[key], TARGETS[key]
            mark = "ok" if value <= target else "over"
            used = "" if key == "memory_gb" else f" ({cpu:.3f} s CPU)"
            print(f"{name:<58} {value:8.3f} {unit}{used}  target <= {target} {unit}  {mark}")
    if args.ratios:
        ratio_rows(args.runs)


def markdown(events: int, cold: float, figures: dict[str, tuple[float, float]]) -> str:
    """The figures as the rows of `python -m bench` (`--only million`: these alone)."""
    lines = [
        f"| a session of {events:,} events | wall | CPU | target |",
        "|---|---|---|---|",
        f"| cold resume (folds the log once, writes checkpoints) | {cold:.2f} s | | |",
    ]
    for key, name in NAMES.items():
        if key in figures:
            (value, cpu), unit = figures[key], "GB" if key == "memory_gb" else "s"
            used = "" if key == "memory_gb" else f"{cpu:.3f} s"
            lines.append(f"| {name} | {value:.3f} {unit} | {used} | {TARGETS[key]} {unit} |")
    return "\n".join(lines)


def ratio_rows(repeats: int) -> None:
    """The read rows of `bench.storage` for unmanaged sessions, without its append rows:
    resume of 3,000 and 10,000 messages against `SQLiteSession.get_items()` and the raw read
    (`sqlite3` + `json.loads` of the rows), and replay at the middle of 10,000 against the raw
    read, each interleaved in one process."""
    from bench.storage_sqlite import build as build_unmanaged
    from bench.storage_sqlite import replay_row, resume_row
    from bench.storage_table import markdown

    extra: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        sessions = [build_unmanaged(Path(folder), size) for size in (3_000, 10_000)]
        rows = [resume_row(files, repeats, extra) for files in sessions]
        rows.append(replay_row(sessions[-1], repeats, extra))
    print(markdown(rows))
    print(f"raw+bodies (ms): {extra.get('raw+bodies')}")


if __name__ == "__main__":
    main()
