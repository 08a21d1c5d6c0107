"""How long resuming a session takes, with and without snapshots, run by hand:
`python -m bench.resume [--url URL] [--sizes 1000 10000] [--runs 5]`.

For each size it writes one session through the Session API (the realistic mix of
`bench.append`, token counts included) in two shapes:

- `unmanaged`: nothing is ever pruned or compacted, so the live context is the whole history;
- `managed`: every 100 events the older tool outputs are pruned and every 300 events the head
  is compacted into a summary, as a long agent session is kept inside its window.

Then it times a fresh `SessionStore(...).session(id).context()` (open, resume, build the
context), median of `--runs`, first with the snapshots the session wrote, then with them
deleted (and a store that writes none, so every run folds from the first event).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from bench.append import message_mix
from sessionstore import Session, SessionStore
from sessionstore.events import ContextCompacted, Message, OutputsPruned, TextPart
from sessionstore.projections import Context, LiveToolResult


def build(store: SessionStore, events: int, managed: bool) -> str:
    session = store.create_session(model="gpt-4o", context_window=128_000, title="bench")
    mix = iter(message_mix(events))
    while session.version < events:
        message = next(mix).message
        session.append_message(message)
        if managed and message.role == "tool":  # between turns: no call is waiting
            if session.version // 300 > (session.version - 3) // 300:
                compact(session)
            elif session.version // 100 > (session.version - 3) // 100:
                prune(session)
    return session.id


def prune(session: Session) -> None:
    results = [
        part.id
        for message in session.context().messages[:-20]
        for part in message.parts
        if isinstance(part, LiveToolResult) and part.status != "pruned"
    ]
    if results:
        session.append_events(
            [
                OutputsPruned(
                    part_ids=tuple(results),
                    placeholder="[Output pruned; restore with part id {part_id}]",
                    placeholder_tokens=14,
                    tokens_freed=0,
                    reason="bench",
                )
            ]
        )


def compact(session: Session) -> None:
    messages = session.context().messages
    last_user = max(n for n, m in enumerate(messages) if m.role == "user")
    summary = Message(role="user", parts=(TextPart(text="Summary of the work so far. " * 40),))
    session.append_events(
        [
            ContextCompacted(
                summary=summary,
                first_kept_message_id=messages[last_user].id,
                replaced_message_ids=tuple(m.id for m in messages[:last_user]),
                tokens_before=session.context().tokens,
                tokens_after=0,
                reason="manual",
                summarizer="bench",
            )
        ]
    )


def median_ms(runs: int, job: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        job()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def resume(url: str, session_id: str, snapshot_every: int = 100) -> Context:
    """Open a fresh store, resume the session, build its live context."""
    with SessionStore(url, snapshot_every=snapshot_every) as fresh:
        return fresh.session(session_id).context()


def report(url: str, size: int, managed: bool, runs: int) -> None:
    with SessionStore(url) as store:
        session_id = build(store, size, managed)
    context = resume(url, session_id)
    with_snapshots = median_ms(runs, lambda: resume(url, session_id))
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM snapshots WHERE session_id = :s"), {"s": session_id})
    engine.dispose()
    without = median_ms(runs, lambda: resume(url, session_id, snapshot_every=10**9))
    print(
        f"{size:>7,} {'managed' if managed else 'unmanaged':<10} "
        f"{len(context.messages):>9,} {context.tokens:>11,} "
        f"{with_snapshots:>12.1f} ms {without:>7.1f} ms {without / with_snapshots:>7.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a database URL (default: a fresh SQLite file per case)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'events':>7} {'shape':<10} {'live msgs':>9} {'live tokens':>11} "
        f"{'with snapshots':>15} {'without':>10} {'speed-up':>8}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            for managed in (False, True):
                url = args.url or f"sqlite:///{Path(folder) / f'resume-{size}-{managed}.db'}"
                report(url, size, managed, args.runs)


if __name__ == "__main__":
    main()
