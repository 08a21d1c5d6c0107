"""The 100 MB tool-output row of `bench.storage`: how long recording one huge tool output
takes, what becomes of it, and how much the database grows.

An agent's tool can return a whole build log or a dumped table. The output (`bench.mix.
long_output`: numbered log lines of random words that never repeat, so a compressor sees real
text, not one corpus looped) is recorded as the result of a pending `bash` call in a session
that holds just the user turn and that call. Ours through `Session.append_tool_result` (the
method that records a tool's output; it truncates what the model is shown and keeps the
original), on `sqlite_synchronous="FULL"`; the peer through `SQLiteSession.add_items` with one
`function_call_output` item. The clock runs around that one call; the size is every file of the
database after a TRUNCATE WAL checkpoint, before and after.

A store that refuses the output (today: `PayloadTooLarge`, over `max_payload_bytes`) shows
"refused after X s" and the growth it left (none, if the refusal wrote nothing); the row keeps
working when the store accepts it, and then shows its time and growth with their ratios.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

from bench.peers._aio import Loop
from bench.storage_sqlite import bytes_on_disk, peer_missing
from bench.storage_table import OURS, PEER, Row, fmt
from sessionstore import SessionStore, SessionStoreError, ToolCall

CALL = "call_big_output"
ASK = "Run the whole test suite and show me the full log."


def big_output_rows(folder: Path, output: str, extra: dict[str, Any]) -> list[Row]:
    mb = len(output.encode()) / 1e6
    took = Row("big_output_s", f"{mb:,.0f} MB tool output: time to record it", "s")
    took.target = "accepted"
    grew = Row("big_output_mb", f"{mb:,.0f} MB tool output: database growth", "MB")
    grew.target = "stored whole, compressed"
    seconds, growth, outcome = _ours(folder / "big-ours.db", output)
    took.values[OURS] = seconds
    grew.values[OURS] = growth
    if outcome != "stored":
        shown = f"{fmt(seconds)} s" if seconds >= 1 else f"{fmt(seconds * 1000)} ms"
        took.outcome = f"{outcome} after {shown}"
        grew.outcome = "0 MB (nothing kept)" if growth == 0 else ""
        took.ratios = grew.ratios = False
    missing = peer_missing()
    if missing is None:
        seconds, growth = _peer(folder / "big-peer.db", output)
        took.values[PEER] = seconds
        grew.values[PEER] = growth
    else:
        took.na[PEER] = grew.na[PEER] = f"not installed: {missing}"
    extra["big_output"] = {"bytes": len(output.encode()), "ours_outcome": outcome}
    return [took, grew]


def _ours(path: Path, output: str) -> tuple[float, float, str]:
    """(seconds, MB the database grew, "stored" or how it was refused)."""
    store = SessionStore(f"sqlite:///{path}", sqlite_synchronous="FULL")
    try:
        session = store.create_session(model="gpt-4o", context_window=128_000, title="bench")
        session.append_user(ASK)
        call = ToolCall(id=CALL, name="bash", input={"command": "pytest -q"})
        session.append_assistant("", tool_calls=[call])
        before = bytes_on_disk(path)
        gc.collect()
        began = time.perf_counter()
        try:
            session.append_tool_result(CALL, output=output)
            outcome = "stored"
        except SessionStoreError as exc:
            outcome = f"refused ({type(exc).__name__})"
        seconds = time.perf_counter() - began
    finally:
        store.close()
    return seconds, (bytes_on_disk(path) - before) / 1e6, outcome


def _peer(path: Path, output: str) -> tuple[float, float]:
    """(seconds, MB the database grew) for `add_items` of one `function_call_output`."""
    from agents import SQLiteSession

    loop = Loop()
    session = SQLiteSession("big", str(path))
    try:
        call = {"type": "function_call", "call_id": CALL, "name": "bash"}
        asked: list[Any] = [{"role": "user", "content": ASK}]
        called: list[Any] = [{**call, "arguments": '{"command": "pytest -q"}'}]
        result: list[Any] = [{"type": "function_call_output", "call_id": CALL, "output": output}]
        loop.run(session.add_items(asked))
        loop.run(session.add_items(called))
        before = bytes_on_disk(path)
        gc.collect()
        began = time.perf_counter()
        loop.run(session.add_items(result))
        seconds = time.perf_counter() - began
    finally:
        session.close()
        loop.close()
    return seconds, (bytes_on_disk(path) - before) / 1e6
