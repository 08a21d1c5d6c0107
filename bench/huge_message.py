"""A 50 MB user message, appended and read back, stage by stage, run by hand: `python -m
bench.huge_message [--mb 50] [--shapes word base64 lines] [--backends sqlite postgresql]`.

Three shapes of text, each the worst of its kind for a step: one word of random letters (one
tiktoken piece: its BPE is superlinear), base64 of random bytes on one line (short pieces,
incompressible), and many short lines of words (compressible, many pieces). Each is appended as
a user message to a fresh session (a 200k window) of a fresh database, then the session is
resumed, read and verified. Every stage is timed by wrapping the function the store calls for
it (inclusive times: `encode` holds `check text` and `sha256`); `tokenised` is the most bytes
tiktoken was handed in one call. Timings are one run each: read them next to the load average
printed first. `cpu` is this process's CPU time for the append (the database server's is not
in it): on a loaded machine it is closer than the wall clock to what an idle one takes.

PostgreSQL is the server at `SESSIONSTORE_TEST_POSTGRES` (default the test suite's), in a
schema of its own, dropped afterwards.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import os
import random
import string
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import tiktoken

from sessionstore import SessionStore

POSTGRES_URL = os.environ.get(
    "SESSIONSTORE_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)

LETTERS = bytes(ord(string.ascii_lowercase[n % 26]) for n in range(256))
"""Random bytes to random lowercase letters."""

STAGES = [
    ("size check", "sessionstore.session._session", "check_text_size"),
    ("cut by bytes", "sessionstore.context._at_append", "truncate"),
    ("encode", "sessionstore.log._append", "encode_event"),
    ("check text", "sessionstore.events._bodies", "check_text"),
    ("sha256", "sessionstore.events._bodies", "digest_of"),
    ("pack (zlib)", "sessionstore.log._append", "pack_all"),
    ("write", "sessionstore.storage._sql", "SqlRecorder.write"),
    ("write", "sessionstore.storage._sqlite", "SqliteRecorder.write"),
    ("write", "sessionstore.storage._postgres", "PostgresRecorder.write"),
    ("fold", "sessionstore.projections._fold", "ContextFold.apply"),
    ("after append", "sessionstore.log._log", "EventLog.after_append"),
    ("unpack", "sessionstore.log._bodies", "unpack"),
    ("unpack exact", "sessionstore.log._verify", "unpack_exact"),
]


def shape(name: str, size: int) -> str:
    rng = random.Random(7)
    if name == "word":
        return rng.randbytes(size).translate(LETTERS).decode()
    if name == "base64":
        return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()[:size]
    if name == "lines":
        words = ["alpha", "beta", "gamma", "delta", "error", "ok", "src/main.rs", "42"]
        lines = (" ".join(rng.choices(words, k=4)) + "\n" for _ in iter(int, 1))
        out: list[str] = []
        total = 0
        for line in lines:
            out.append(line)
            total += len(line)
            if total >= size:
                break
        return "".join(out)[:size]
    raise ValueError(name)


class Timings:
    """Inclusive seconds per stage, and the most characters tiktoken was handed at once."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.tokenised = 0

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        return timed


@contextmanager
def timed_stages(timings: Timings) -> Iterator[None]:
    undo: list[tuple[Any, str, Any]] = []
    for label, module_name, path in STAGES:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *classes, attr = path.split(".")
        for name in classes:
            owner = getattr(owner, name, None)
        if owner is None or attr not in vars(owner):
            continue
        original = vars(owner)[attr]
        undo.append((owner, attr, original))
        setattr(owner, attr, timings.wrap(label, original))
    encode = tiktoken.Encoding.encode_ordinary

    def counted(self: tiktoken.Encoding, text: str) -> list[int]:
        timings.tokenised = max(timings.tokenised, len(text))
        return encode(self, text)

    undo.append((tiktoken.Encoding, "encode_ordinary", encode))
    tiktoken.Encoding.encode_ordinary = timings.wrap("tiktoken", counted)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, attr, original in reversed(undo):
            setattr(owner, attr, original)


@contextmanager
def database(backend: str, folder: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / f'{uuid.uuid4().hex}.db'}"
        return
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def run(backend: str, name: str, text: str, folder: Path) -> dict[str, Any]:
    with database(backend, folder) as url, SessionStore(url) as store:
        session = store.create_session(model="m", context_window=200_000)
        session.append_user("warm up")  # loads the encoding
        timings = Timings()
        with timed_stages(timings):
            start, cpu = time.perf_counter(), time.process_time()
            part = session.append_user(text).parts[0]
            append, cpu = time.perf_counter() - start, time.process_time() - cpu
            start = time.perf_counter()
            store.session(session.id).context()
            resume = time.perf_counter() - start
            start = time.perf_counter()
            ok = store.verify(session.id).ok
            verify = time.perf_counter() - start
        truncation = getattr(part, "truncation", None)
        return {
            "backend": backend,
            "shape": name,
            "append": append,
            "cpu": cpu,
            "resume": resume,
            "verify": verify,
            "ok": ok,
            "tokens": part.tokens,
            "shown": len(truncation.shown) if truncation is not None else len(text),
            "tokenised": timings.tokenised,
            "stages": timings.seconds,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--shapes", nargs="+", default=["word", "base64", "lines"])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    print(f"load average: {os.getloadavg()[0]:.2f}; {args.mb:g} MB per text")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.shapes:
            text = shape(name, size)
            for backend in args.backends:
                row = run(backend, name, text, Path(folder))
                stages = ", ".join(f"{k} {v:.3f}" for k, v in row["stages"].items())
                print(
                    f"{backend:10} {name:7} append {row['append']:7.3f} s "
                    f"(cpu {row['cpu']:.3f} s)  resume {row['resume']:6.3f} s  "
                    f"verify {row['verify']:6.3f} s  ok={row['ok']}  "
                    f"tokens {row['tokens']:,}  shown {row['shown']:,} chars  "
                    f"tokenised at most {row['tokenised']:,} chars\n    {stages}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
