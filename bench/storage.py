"""The storage rows, interleaved: `python -m bench.storage [--quick] [--out PATH]
[--dir DIR] [--pg-url URL | --no-pg] [--repeats N] [--profile] [--append-only]
[--messages N]`. `python -m bench` runs the same rows after its own table (unless `--only`
names stores without `storage`).

Why a second table: the main comparison runs one store after another, so on this shared
2-core machine drift of 30-50% lands between its columns. These rows put sessionstore beside
the fastest peer of that table (the OpenAI Agents SDK's `SQLiteSession`), in one process,
alternating in batches (appends) or rounds (reads), and beside raw baselines: the same rows
read with plain `sqlite3` + `json.loads`, or inserted with plain psycopg. The storage
targets are set against those; the table shows each next to the ratios.

What each row measures and how (details in the modules that run them):
- `bench.storage_sqlite`: append median and p95 per call at equal durability (WAL,
  `synchronous=FULL` both), size per 10k messages, resume of unmanaged sessions (new store,
  `session(id).context().to_openai()` / new `SQLiteSession`, `get_items()` / raw read), and
  replay to the middle (`context(at=...)` / raw read of the rows up to it);
- `bench.storage_big`: recording one 100 MB tool output (time, outcome, database growth);
- `bench.storage_pg`: 8 writer processes on PostgreSQL, ours against raw INSERT + COMMIT, in a
  scratch database created and dropped around the run.

`--profile` runs one resume of the largest session under cProfile and prints the top 15
entries by cumulative time (also kept in the JSON), to show where a resume spends its time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.import_big import import_rows
from bench.mix import long_output
from bench.report import machine, write_json
from bench.storage_big import big_output_rows
from bench.storage_pg import pg_row
from bench.storage_sqlite import Files, Log, append_rows, build, ours_resume, replay_row, resume_row
from bench.storage_table import Row, markdown

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@dataclass
class Config:
    append: int = 10_000
    """Messages appended, interleaved, to one session of each store (the size row's session,
    and the resume session of that size)."""
    batch: int = 100
    """Messages per turn of each store in the append row."""
    resume_sizes: tuple[int, ...] = (1_000, 3_000, 10_000)
    """The resume rows' sessions: 3,000 messages is the size the issue's peer row names."""
    repeats: int = 7
    """Timed rounds of each read (resume, replay)."""
    big_output: int = 100_000_000
    """Bytes of the one huge tool output."""
    import_lines: int = 100_000
    """Lines of the Claude Code transcript the import rows import (`bench.import_big`)."""
    pg_url: str | None = DEFAULT_PG
    """The server for the multi-writer row (a scratch database is made there); None skips."""
    pg_writers: int = 8
    pg_seconds: float = 10.0
    pg_rounds: int = 2
    profile: bool = False
    append_only: bool = False
    """Only the append rows (and the size row their files give): `--append-only`."""


QUICK = Config(
    append=2_000,
    resume_sizes=(500, 2_000),
    repeats=3,
    import_lines=10_000,
    pg_seconds=2.0,
    pg_rounds=1,
)


def config(quick: bool) -> Config:
    """A fresh copy of the full or the quick configuration."""
    return replace(QUICK if quick else Config())


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self, config: Config) -> dict[str, Any]:
        return {
            "config": asdict(config),
            "rows": {row.key: row.as_json() for row in self.rows},
            "extra": self.extra,
            "markdown": markdown(self.rows),
        }


def run(cfg: Config, folder: Path, log: Log) -> Report:
    """Every storage row, its SQLite files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    report = Report()
    extra = report.extra
    extra["load_average_at_start"] = os.getloadavg()
    log(f"storage: append, {cfg.append:,} messages to each store, batches of {cfg.batch}")
    rows, appended = append_rows(folder, cfg.append, cfg.batch, extra, log)
    report.rows += rows
    if cfg.append_only:
        extra["load_average_at_end"] = os.getloadavg()
        return report
    sessions: list[Files] = []
    for size in cfg.resume_sizes:
        if size == appended.messages:
            sessions.append(appended)
        else:
            log(f"storage: building the {size:,}-message sessions")
            sessions.append(build(folder, size))
    for files in sessions:
        log(f"storage: resume and replay of {files.messages:,} messages")
        report.rows.append(resume_row(files, cfg.repeats, extra))
    for files in sessions:
        report.rows.append(replay_row(files, cfg.repeats, extra))
    if cfg.profile and sessions:
        extra["profile"] = profile_resume(sessions[-1])
    log(f"storage: one tool output of {cfg.big_output / 1e6:,.0f} MB")
    report.rows += big_output_rows(folder, long_output(cfg.big_output), extra)
    report.rows += import_rows(cfg.import_lines, extra, log)
    if cfg.pg_url is not None:
        log(f"storage: PostgreSQL, {cfg.pg_writers} writers, {cfg.pg_seconds:g} s per round")
        report.rows.append(
            pg_row(cfg.pg_url, cfg.pg_writers, cfg.pg_seconds, cfg.pg_rounds, extra, log)
        )
    extra["load_average_at_end"] = os.getloadavg()
    return report


def profile_resume(files: Files) -> str:
    """The top 15 entries by cumulative time of one resume (after an untimed one)."""
    ours_resume(files.ours)
    profiler = cProfile.Profile()
    profiler.runcall(ours_resume, files.ours)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(15)
    return f"resume of {files.messages:,} messages under cProfile:\n{text.getvalue()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k messages, 1 short PG round")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "storage.json")
    parser.add_argument("--dir", type=Path, help="where the SQLite files go (default: a temp dir)")
    parser.add_argument("--pg-url", default=DEFAULT_PG, help="server for the multi-writer row")
    parser.add_argument("--no-pg", action="store_true", help="skip the PostgreSQL row")
    parser.add_argument("--repeats", type=int, help="timed rounds of each read")
    parser.add_argument("--profile", action="store_true", help="cProfile one resume")
    parser.add_argument("--append-only", action="store_true", help="only the append rows")
    parser.add_argument("--messages", type=int, help="messages each store appends")
    args = parser.parse_args(argv)
    cfg = config(args.quick)
    cfg.pg_url = None if args.no_pg else args.pg_url
    cfg.profile = args.profile
    cfg.append_only = args.append_only
    if args.messages:
        cfg.append = args.messages
    if args.repeats:
        cfg.repeats = args.repeats
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {text}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        report = run(cfg, Path(folder), log)
    print(markdown(report.rows))
    if "profile" in report.extra:
        print("\n" + report.extra["profile"])
    payload = {"machine": machine(), **report.as_json(cfg)}
    payload["total_seconds"] = time.perf_counter() - started
    write_json(args.out, payload)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
