"""What full-text search costs: an append with its index rows against one without, a search,
and a redaction's merge of SQLite's FTS5 index.

`python -m bench.search [--messages 2000] [--db sqlite|postgresql]`. The seeded message mix
(`bench.mix`) is appended through the `Session` API to two stores in one process, in
alternating batches (timings on a shared machine drift; alternating puts the drift on both):
one as shipped, one whose writes carry no index rows (`index_rows` patched to index nothing),
so the difference is the index's own cost: folding the text into words and the INSERTs, in the
append's transaction. Then searches of a common word, a rare one and a phrase (median of 20),
and on SQLite one redaction, whose transaction merges the whole FTS5 index (`optimize`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.mix import Msg, messages
from sessionstore import Session, SessionStore, ToolCall
from sessionstore.log import _append as append_path

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BATCH = 50


@contextmanager
def unindexed() -> Iterator[None]:
    """Writes carry no index rows while inside."""
    names = vars(append_path)
    real = names["index_rows"]
    names["index_rows"] = lambda links, texts: ([], [])
    try:
        yield
    finally:
        names["index_rows"] = real


def append(session: Session, msg: Msg) -> None:
    if msg.role == "user":
        session.append_user(msg.text)
    elif msg.role == "assistant":
        calls = []
        if msg.tool_call is not None:
            use = msg.tool_call
            calls = [ToolCall(id=use.id, name=use.name, input=use.input)]
        session.append_assistant(msg.text, tool_calls=calls)
    else:
        session.append_tool_result(msg.call_id, msg.text)


@contextmanager
def database(kind: str, folder: Path, name: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / name}.db"
        return
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(POSTGRES)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{POSTGRES}?options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def median_ms(call: Any, rounds: int = 20) -> float:
    call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args()
    mix = list(messages(args.messages))
    with (
        tempfile.TemporaryDirectory() as tmp,
        database(args.db, Path(tmp), "indexed") as indexed_url,
        database(args.db, Path(tmp), "plain") as plain_url,
    ):
        indexed, plain = SessionStore(indexed_url), SessionStore(plain_url)
        sessions = {
            "indexed": indexed.create_session(model="m", context_window=1_000_000),
            "plain": plain.create_session(model="m", context_window=1_000_000),
        }
        spent = {"indexed": 0.0, "plain": 0.0}
        for number, start in enumerate(range(0, len(mix), BATCH)):
            order = ["indexed", "plain"] if number % 2 == 0 else ["plain", "indexed"]
            for name in order:
                batch = mix[start : start + BATCH]
                begin = time.perf_counter()
                if name == "plain":
                    with unindexed():
                        for msg in batch:
                            append(sessions[name], msg)
                else:
                    for msg in batch:
                        append(sessions[name], msg)
                spent[name] += time.perf_counter() - begin
        per = {name: spent[name] / len(mix) * 1000 for name in spent}
        print(f"{args.db}, {len(mix):,} messages of the mix, ms per append (mean):")
        print(f"  with the index    {per['indexed']:.3f}")
        print(f"  without           {per['plain']:.3f}")
        print(f"  the index's cost  {per['indexed'] - per['plain']:+.3f}")
        for query in ("session", "zzyzx", '"return self"'):
            found = len(indexed.search(query))
            took = median_ms(lambda q=query: indexed.search(q))
            print(f"  search {query!r}: {took:.2f} ms median, {found} hits")
        if args.db == "sqlite":
            for name, url in (("indexed", indexed_url), ("plain", plain_url)):
                path = Path(sa.make_url(url).database or "")
                size = sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))
                print(f"  files, {name}: {size / 1e6:.1f} MB (with the WAL)")
            target = sessions["indexed"]
            part = target.context().messages[-1].parts[0].id
            begin = time.perf_counter()
            target.redact([part], reason="bench")
            took = (time.perf_counter() - begin) * 1000
            print(f"  a redaction (FTS5 optimize included): {took:.0f} ms")
        indexed.close()
        plain.close()


if __name__ == "__main__":
    main()
