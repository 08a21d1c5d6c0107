"""How long the HTML view of a long session takes to render: `python -m bench.view [--turns N]`.

Appends the synthetic coding session (`bench.agent_session`) to a SQLite file with a 32k window
until it holds 10,000 events (pruned and compacted as it goes: see `build`), then
times `SessionStore.view` of it (reading the log, the one fold, the page) a few times and
prints the median with the page's size and the machine (`--out FILE` keeps the page, to
open it in a browser). The target: under 5 s for 10,000
events.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.agent_session import coding_session
from bench.report import machine
from sessionstore import Session, SessionStore, ToolCall
from sessionstore.events import CompactionError, Usage


def build(session: Session, events: int) -> None:
    """The synthetic coding session's turns, appended without a model until the session holds
    `events` events: a prune after every turn, a compaction every 25 turns (when they find
    something to do), the usage of each assistant reply."""
    for turns, turn in enumerate(coding_session(turns=10_000, seed=7), start=1):
        if session.version >= events:
            return
        session.append_user(turn.request)
        for reply in turn.steps:
            calls = [
                ToolCall(id=f"c{session.version}-{n}", name=step.tool, input=step.input)
                for n, step in enumerate(reply)
            ]
            usage = Usage(input=session.tokens, output=60)
            session.append_assistant("On it.", tool_calls=calls, usage=usage)
            for call, step in zip(calls, reply, strict=True):
                session.append_tool_result(call.id, step.output, is_error=step.is_error)
        session.append_assistant(turn.answer, usage=Usage(input=session.tokens, output=80))
        with contextlib.suppress(CompactionError):
            session.prune()
            if turns % 25 == 0:
                session.compact()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="Also write the page here, to open it.")
    parser.add_argument(
        "--db", type=Path, help="Keep the session in this SQLite file (built when missing)."
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = args.db if args.db is not None else Path(folder) / "view.db"
        with SessionStore(f"sqlite:///{path}") as store:
            if "bench" not in [info.id for info in store.sessions()]:
                session = store.create_session(
                    model="gpt-4o", context_window=32_000, title="bench", session_id="bench"
                )
                build(session, args.events)
            measure(store, args.runs, args.out)


def measure(store: SessionStore, runs: int, out: Path | None) -> None:
    seconds, cpu = [], []
    page = ""
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        page = store.view("bench")
        seconds.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    if out is not None:
        out.write_text(page, encoding="utf-8")
    kinds = {k: page.count(f'<g class="mark {k}"') for k in ("prune", "compaction")}
    print(machine())
    print(
        f"view of {store.version('bench'):,} events ({kinds['prune']:,} prunes, "
        f"{kinds['compaction']:,} compactions): median {statistics.median(seconds):.2f} s, "
        f"fastest {min(seconds):.2f} s over {runs} runs (CPU {statistics.median(cpu):.2f} s, "
        f"load average {os.getloadavg()[0]:.1f}); page {len(page) / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
