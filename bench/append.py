"""Append throughput of the event log, run by hand: `python -m bench.append [--url URL]`.

Appends a realistic mix (short user turns, assistant tool calls, tool outputs of 200 B to
60 KB) to fresh sessions, one event per transaction as an agent loop does, then in batches of
100, and prints events per second with the median and p95 latency of one `append` call.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sessionstore import SessionStore
from sessionstore.events import (
    Message,
    MessageAppended,
    NewEvent,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


def message_mix(count: int) -> list[MessageAppended]:
    """User turn, assistant tool call, tool output, repeated; outputs cycle 200 B .. 60 KB."""
    sizes = [200, 1_500, 4_000, 12_000, 60_000, 800]
    mix: list[MessageAppended] = []
    for n in range(count):
        kind = n % 3
        if kind == 0:
            parts: tuple[TextPart | ToolCallPart | ToolResultPart, ...] = (
                TextPart(text=f"please look at module {n} and fix the failing test"),
            )
            mix.append(MessageAppended(message=Message(role="user", parts=parts)))
        elif kind == 1:
            call = ToolCallPart.from_input(
                call_id=f"c{n}", name="read", input={"path": f"src/m{n}.py"}
            )
            mix.append(MessageAppended(message=Message(role="assistant", parts=(call,))))
        else:
            output = ("x" * 79 + "\n") * (sizes[(n // 3) % len(sizes)] // 80)
            result = ToolResultPart(call_id=f"c{n - 1}", output=output)
            mix.append(MessageAppended(message=Message(role="tool", parts=(result,))))
    return mix


def run(url: str, label: str, count: int, batch: int, **options: str) -> None:
    mix = message_mix(count)
    with SessionStore(url, **options) as store:  # type: ignore[arg-type]
        session = f"bench-{batch}-{time.time_ns()}"
        store.append(session, [SessionStarted(title="bench")], expected_version=0)
        version = 1
        latencies = []
        total_start = time.perf_counter()
        for start in range(0, count, batch):
            chunk = [NewEvent(m) for m in mix[start : start + batch]]
            began = time.perf_counter()
            store.append(session, chunk, expected_version=version)
            latencies.append(time.perf_counter() - began)
            version += len(chunk)
        total = time.perf_counter() - total_start
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 20 else max(latencies)
    print(
        f"{label:<28} batch {batch:>3}: {count / total:>9,.0f} events/s   "
        f"append() median {statistics.median(latencies) * 1000:7.3f} ms   "
        f"p95 {p95 * 1000:7.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a database URL (default: a fresh SQLite file)")
    parser.add_argument("--events", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        targets: list[tuple[str, str, dict[str, str]]]
        if args.url:
            targets = [(args.url, args.url.split(":")[0], {})]
        else:
            targets = [
                (f"sqlite:///{Path(folder) / 'normal.db'}", "sqlite synchronous=NORMAL", {}),
                (
                    f"sqlite:///{Path(folder) / 'full.db'}",
                    "sqlite synchronous=FULL",
                    {"sqlite_synchronous": "FULL"},
                ),
            ]
        for url, label, options in targets:
            for batch in (1, 100):
                run(url, label, args.events, batch, **options)


if __name__ == "__main__":
    main()
