"""sessionstore against the SQLite session stores of other agent frameworks:
`python -m bench [--quick] [--runs N] [--out bench/results.json] [--only NAME ...]`.

Installs nothing: peers come from the optional extra `bench` (pip install -e '.[bench]'); one
that is missing shows as "n/a: not installed" in its column. Every store gets the same message
mix (`bench.mix`), its own SQLite files in one temporary folder (one disk for all), and the
same workloads (`bench.workloads`); the table (medians of the runs, the ratio to the best peer
per row) is printed and written, with every sample, to the JSON file.

Then the storage rows of `bench.storage` run (sessionstore and `SQLiteSession` interleaved in
one process, with raw sqlite3/psycopg baselines; `--only storage` runs just those, `--only`
without `storage` skips them): their table is printed under the first and written to the same
JSON file under `"storage"`.

Then the command line's start (`bench.cli_start`: `--version` and `ls` in fresh processes), the
session of a million events (`bench.million`, run in a process of its own so its peak memory is
its own; building that session takes minutes the first time, and is kept under /tmp for the next
run) and the listing of 100,000 sessions (`bench.listing`, likewise). A full run takes about 45
minutes on the 2-core VM; `--quick` leaves out the million and the listing unless `--only` names
them. `--only cli_start`, `--only million`, `--only listing` or `--only storage` runs just those
rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import cli_start, million, mix, storage
from bench import listing as listing_bench
from bench.peers import load_stores
from bench.report import machine, markdown, summarize, write_json
from bench.storage_table import markdown as storage_markdown
from bench.workloads import Config, Results, growth_run, managed_run, multi_run, single_run

QUICK = Config(
    single=1_000,
    sessions=10,
    per_session=100,
    growth=(250, 500, 1_000, 2_000),
    resume_sizes=(500, 2_000),
    runs=2,
    repeats=3,
    managed=2_000,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, about 3 minutes")
    parser.add_argument("--runs", type=int, help="runs of the append workloads (median taken)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results.json")
    parser.add_argument(
        "--only",
        nargs="+",
        help="store names to run, and/or `storage`, `cli_start`, `million`, `listing` "
        "(default: all; with --quick, all but `million` and `listing`)",
    )
    parser.add_argument("--max-events", type=int, help="grow sessions up to this size only")
    parser.add_argument(
        "--peer-max", type=int, help="grow the peers' sessions only this far (a reduced run)"
    )
    parser.add_argument("--dir", type=Path, help="where the SQLite files go (default: a temp dir)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else Config()
    if args.runs:
        cfg.runs = args.runs
    if args.max_events:
        cfg.growth = tuple(m for m in cfg.growth if m <= args.max_events)
        cfg.resume_sizes = tuple(m for m in cfg.resume_sizes if m <= args.max_events)
        cfg.managed = min(cfg.managed, args.max_events)
    cfg.peer_max = args.peer_max

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {text}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    stores = load_stores(args.only)
    results = Results()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder_name:
        folder = Path(folder_name)
        for store in stores:
            if store.available is not None:
                log(f"{store.name}: n/a ({store.available})")
                continue
            began = time.perf_counter()
            if store.append_only:
                for run in range(1, cfg.runs + 1):
                    single_run(store, folder, cfg, results, run, size=run == 1)
            else:
                growth_run(store, folder, cfg, results, log)
                for run in range(2, cfg.runs + 1):
                    if store.max_messages is None or store.max_messages >= cfg.single:
                        single_run(store, folder, cfg, results, run)
                if store.name == "sessionstore" and cfg.managed:
                    managed_run(store, folder, cfg, results, log)
            for run in range(1, cfg.runs + 1):
                multi_run(store, folder, cfg, results, run)
            seconds = time.perf_counter() - began
            results.extra.setdefault("seconds", {})[store.name] = seconds
            log(f"{store.name}: done in {seconds:.0f} s")
        report = None
        storage_cfg = storage.config(args.quick)
        if wanted(args, "storage"):
            report = storage.run(storage_cfg, folder / "storage", log)
        starts = None
        if wanted(args, "cli_start"):
            log("cli_start: --version and ls in fresh processes")
            starts = cli_start.measure(3 if args.quick else 15)
        millions = None
        if wanted(args, "million", big=True):
            log("million: python -m bench.million (builds its session the first time)")
            out = folder / "million.json"
            command = ["-m", "bench.million", "--runs", str(cfg.runs), "--json", str(out)]
            subprocess.run(
                [sys.executable, *command],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            millions = json.loads(out.read_text())
        listing = None
        if wanted(args, "listing", big=True):
            log("listing: python -m bench.listing (builds 100,000 sessions)")
            out = folder / "listing.json"
            command = ["-m", "bench.listing", "--runs", str(cfg.runs), "--json", str(out)]
            subprocess.run([sys.executable, *command], check=True, stdout=subprocess.DEVNULL)
            listing = json.loads(out.read_text())
    table = summarize(results, stores, cfg)
    text = markdown(table, stores) if stores else ""
    if report is not None:
        text = (text + "\n\n" if text else "") + storage_markdown(report.rows)
    if starts is not None:
        text = (text + "\n\n" if text else "") + cli_start.markdown(starts)
    if millions is not None:
        text = (text + "\n\n" if text else "") + million.markdown(**millions)
    if listing is not None:
        text = (text + "\n\n" if text else "") + listing_bench.markdown(**listing)
    print(text)
    write_json(
        args.out,
        {
            "machine": machine(),
            "config": vars(cfg),
            "mix": mix.describe(min(cfg.single, 10_000)),
            "stores": {
                s.name: {"package": s.package, "durability": s.durability, "notes": s.notes}
                for s in stores
            },
            "table": table,
            "extra": results.extra,
            "storage": report.as_json(storage_cfg) if report else None,
            "cli_start": starts,
            "million": millions,
            "listing": listing,
            "total_seconds": time.perf_counter() - started,
            "markdown": text,
        },
    )
    log(f"wrote {args.out}")


def wanted(args: argparse.Namespace, rows: str, *, big: bool = False) -> bool:
    """Whether a run measures `rows`: named by `--only`, or, with no `--only`, every row but
    the `big` ones (minutes to build) of a `--quick` run."""
    if args.only is not None:
        return rows in args.only
    return not (big and args.quick)


if __name__ == "__main__":
    main()
