"""What context management does over a long session, run by hand:
`python -m bench.policies [--url URL] [--turns 300] [--window 128000]`.

Plays the synthetic 300-turn coding session of `bench.agent_session` through
`before_llm_call` / `after_tool_result`, then prints the peak live tokens sent to the model,
every prune and compaction with the tokens it freed, and how long the policy calls took. It
also times counting 1 MB of text with the session's tokenizer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.agent_session import coding_session, drive
from sessionstore import SessionStore
from sessionstore.context._tokens import count


def _ms(seconds: list[float]) -> str:
    if not seconds:
        return "-"
    ordered = sorted(seconds)
    p95 = ordered[int(len(ordered) * 0.95) - 1] if len(ordered) >= 20 else ordered[-1]
    return (
        f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms, "
        f"max {ordered[-1] * 1000:.1f} ms (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a database URL (default: a fresh SQLite file)")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=128_000)
    args = parser.parse_args()

    text = ("def add(a, b):\n    return a + b  # ünïcode 文字\n" * 25_000)[:1_000_000]
    began = time.perf_counter()
    tokens = count(text, "cl100k_base")
    print(f"count 1 MB of text: {tokens:,} tokens in {(time.perf_counter() - began) * 1000:.0f} ms")

    with tempfile.TemporaryDirectory() as folder:
        url = args.url or f"sqlite:///{Path(folder) / 'policies.db'}"
        with SessionStore(url) as store:
            session = store.create_session(
                model="gpt-4o", context_window=args.window, title=f"{args.turns} turns"
            )
            began = time.perf_counter()
            report = drive(session, coding_session(args.turns))
            elapsed = time.perf_counter() - began
            usable = args.window - session.header.output_reserve
            limit = int(usable * session.config.trigger_ratio)
            print(
                f"{args.turns} turns, {session.version:,} events, {report.llm_calls:,} model calls "
                f"in {elapsed:.1f} s; window {args.window:,}, usable {usable:,}, limit {limit:,}"
            )
            print(
                f"peak live tokens sent: {report.peak_tokens:,} "
                f"({report.peak_ratio:.1%} of the usable window)"
            )
            prunes = [c.pruned for c in report.checks if c.pruned is not None]
            freed = [p.payload.tokens_freed for p in prunes]  # type: ignore[attr-defined]
            print(
                f"prunes: {len(prunes)}, tokens freed each: min {min(freed, default=0):,}, "
                f"median {int(statistics.median(freed)) if freed else 0:,}, "
                f"max {max(freed, default=0):,}; total {sum(freed):,}"
            )
            compactions = [e for c in report.checks for e in c.compactions]
            for event in compactions:
                p = event.payload
                print(
                    f"  compaction at seq {event.seq}: {p.tokens_before:,} -> {p.tokens_after:,} "  # type: ignore[attr-defined]
                    f"(freed {p.tokens_before - p.tokens_after:,}, {p.reason}, "  # type: ignore[attr-defined]
                    f"{len(p.replaced_message_ids)} messages)"  # type: ignore[attr-defined]
                )
            print(f"compactions: {len(compactions)}")
            calm = [
                t for t, c in zip(report.check_seconds, report.checks, strict=True) if not c.acted
            ]
            pruning = [
                t
                for t, c in zip(report.check_seconds, report.checks, strict=True)
                if c.pruned and not c.compactions
            ]
            compacting = [
                t for t, c in zip(report.check_seconds, report.checks, strict=True) if c.compactions
            ]
            print(f"check, nothing to do: {_ms(calm)}")
            print(f"check that pruned:    {_ms(pruning)}")
            print(f"check that compacted: {_ms(compacting)}")
            notes = sorted({c.note for c in report.checks})
            print(f"outcomes: {', '.join(notes)}")


if __name__ == "__main__":
    main()
