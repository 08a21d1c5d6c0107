"""Listing sessions in a large store, and one redaction in it:
`python -m bench.listing [--sessions 100000] [--runs 3] [--db URL]`.

Builds a store of `--sessions` sessions (a new SQLite file, or an empty database at `--db`):
one small agent session (a system prompt, a request, tool calls and their outputs, another
request, a compaction: 11 events) written through the `Session` API, then the same events
chained anew under each session id and written a thousand sessions per transaction, rows, bodies and
counters as the recorder writes them (its `write` is one transaction per session: 100,000 of
them would take longer than what is measured). Then, median of `--runs`:

- `sessionstore ls --json` of every session, and `ls --limit 10`, as a user runs them (fresh
  processes: their start is in the figure);
- `SessionStore.summaries(limit=10)` and `summaries()` of every session, in the API;
- `Session.redact` of one part of one session.

The targets: the first page within 0.1 s in the API, a full `ls --json`
within 5 s, and a redaction that does not depend on the number of sessions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import machine
from sessionstore import SessionStore, ToolCall, Usage
from sessionstore.events import GENESIS_HASH, NewEvent
from sessionstore.log import index_rows
from sessionstore.log._append import Encoded, chain, encode_batch, event_row
from sessionstore.log._bodies import pack_all
from sessionstore.storage._schema import blobs, events, sessions
from sessionstore.storage._sql import EncodedJson, SqlRecorder, index_values

SCRIPT = Path(sys.executable).with_name("sessionstore")
PER_TRANSACTION = 1_000
EVENTS = 11
START = datetime(2026, 1, 1, tzinfo=UTC)


def template() -> tuple[list[Encoded], int, int | None]:
    """One agent session's events, encoded for the log, with its live tokens and window."""
    with SessionStore("memory://") as scratch:
        s = scratch.create_session(model="gpt-4o", context_window=128_000, title="fix the parser")
        s.append_system("You are a coding agent.")
        s.append_user("Make the tests pass.")
        for n in range(3):
            s.append_assistant(
                f"Reading m{n}.py.",
                tool_calls=[ToolCall(id=f"c{n}", name="read", input={"path": f"m{n}.py"})],
                usage=Usage(input=1_000 + 200 * n, output=40),
            )
            s.append_tool_result(f"c{n}", output=f"def f{n}(x):\n    return x\n" * 40)
        s.append_user("Now run them.")
        s.compact(keep_turns=1, keep_tokens=1)
        recorded = scratch.read(s.id)
        batch = encode_batch([NewEvent(e.payload) for e in recorded], 1 << 30)
        assert len(batch) == EVENTS, [e.type for e in recorded]
        return batch, s.tokens, s.header.context_window


def build(url: str, count: int) -> list[str]:
    """`count` sessions of the template's events at `url`; their ids, newest first."""
    batch, tokens, window = template()
    bodies = pack_all(body for item in batch for body in item.bodies)
    texts = {body.digest: body.text for item in batch for body in item.bodies}
    compactions = sum(item.type == "ContextCompacted" for item in batch)
    title = "fix the parser"
    with SessionStore(url) as store:
        recorder = store._recorder
        assert isinstance(recorder, SqlRecorder), "the benchmark builds SQL databases"
        engine = recorder.engine
        ids = [f"bench-{n:07d}" for n in range(count)]
        for start in range(0, count, PER_TRANSACTION):
            session_rows: list[dict[str, Any]] = []
            event_rows: list[dict[str, Any]] = []
            body_rows: list[dict[str, Any]] = []
            index: list[dict[str, Any]] = []
            for n in range(start, min(start + PER_TRANSACTION, count)):
                session_id = ids[n]
                moment = START + timedelta(seconds=n)
                links = chain(session_id, batch, 0, GENESIS_HASH, [moment] * len(batch))
                for link, item in zip(links, batch, strict=True):
                    values = event_row(session_id, link, item.payload_json)._asdict()
                    values["payload"] = EncodedJson(values["payload"])
                    event_rows.append(values)
                entries, _ = index_rows(links, texts)  # the search index, as an append writes it
                index.extend(index_values(session_id, entry) for entry in entries)
                session_rows.append(
                    {
                        "id": session_id,
                        "title": title,
                        "head_seq": links[-1].seq,
                        "head_hash": links[-1].hash,
                        "created_at": moment,
                        "updated_at": moment,
                        "context_window": window,
                        "live_tokens": tokens,
                        "compactions": compactions,
                    }
                )
                body_rows.extend({"session_id": session_id, **b._asdict()} for b in bodies)
            with engine.begin() as conn:
                conn.execute(sessions.insert(), session_rows)
                conn.execute(events.insert(), event_rows)
                conn.execute(blobs.insert(), body_rows)
                conn.execute(recorder._insert_index(), index)
    return ids[::-1]


def timed(action: Callable[[], object], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - began)
    return seconds


def cli(url: str, *args: str) -> Callable[[], object]:
    command = [str(SCRIPT), "--db", url, *args]
    return lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def measure(url: str, ids: list[str], runs: int) -> dict[str, list[float]]:
    with SessionStore(url) as store:
        first_page = store.summaries(limit=10)
        assert [s.info.id for s in first_page] == ids[:10]
        assert len(store.summaries()) == len(ids)
        rows = {
            "`ls --json`, every session": timed(cli(url, "ls", "--json"), runs),
            "`ls --limit 10`": timed(cli(url, "ls", "--limit", "10"), runs),
            "`summaries(limit=10)` (API)": timed(lambda: store.summaries(limit=10), runs),
            "`summaries()`, every session (API)": timed(store.summaries, runs),
        }
        rows["`Session.redact` of one part"] = [
            redaction(store, session_id) for session_id in ids[len(ids) // 2 :][:runs]
        ]
    return rows


def redaction(store: SessionStore, session_id: str) -> float:
    """Seconds to redact the newest message's first part of the session (which then verifies)."""
    session = store.session(session_id)
    part = session.context().messages[-1].parts[0]
    began = time.perf_counter()
    session.redact([part.id], reason="bench")
    seconds = time.perf_counter() - began
    assert store.verify(session_id).ok
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", help="an empty database's URL (default: a new SQLite file)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        url = args.db or f"sqlite:///{Path(folder) / 'listing.db'}"
        began = time.perf_counter()
        ids = build(url, args.sessions)
        built = time.perf_counter() - began
        rows = measure(url, ids, args.runs)
    print(f"machine: {machine()}")
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    print(f"command: python -m bench.listing {shown}".rstrip())
    print(f"built {args.sessions:,} sessions of {EVENTS} events each in {built:.1f} s")
    print(markdown(args.sessions, rows))
    if args.json is not None:
        args.json.write_text(json.dumps({"sessions": args.sessions, "rows": rows}))


def markdown(sessions: int, rows: dict[str, list[float]]) -> str:
    """The figures as a table: the rows of `python -m bench --only listing` too."""
    lines = [f"| {sessions:,} sessions | median | fastest | target |", "|---|---|---|---|"]
    for name, seconds in rows.items():
        median, fastest = _shown(statistics.median(seconds)), _shown(min(seconds))
        lines.append(f"| {name} | {median} | {fastest} | {TARGETS.get(name, '')} |")
    return "\n".join(lines)


TARGETS = {
    "`ls --json`, every session": "<= 5 s",
    "`summaries(limit=10)` (API)": "<= 0.1 s",
    "`Session.redact` of one part": "independent of the number of sessions",
}
"""The issue's targets, by row."""


def _shown(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


if __name__ == "__main__":
    main()
