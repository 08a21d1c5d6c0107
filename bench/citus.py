"""Appends on a Citus cluster beside plain PostgreSQL, run by hand:
`python -m bench.citus [--coordinator URL] [--plain URL] [--writers 4] [--seconds 20]
[--rounds 2]`.

Each server gets a scratch schema (dropped afterwards, even on failure) holding our tables and
a raw table (`bench.storage_pg`'s, keyed by (position, session) so Citus can spread it); on the
coordinator both are distributed by session (`SessionStore.distribute`, and
`create_distributed_table` for the raw one). Then, per server and round, `--writers` spawned
processes append one message per transaction to distinct sessions for `--seconds`, ours
(through the `Session` API) and raw psycopg `INSERT` + `COMMIT` alternating, as the
multi-writer row of `bench.storage` does (its `writer` processes are these). It prints appends
per second, the median of the rounds, for each server and kind, the ratios, the versions and
the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from typing import Any

import sqlalchemy as sa

from bench.report import machine
from bench.storage_pg import RAW_TABLE, _conninfo, _run
from bench.storage_table import OURS, RAW

COORDINATOR = "postgresql+psycopg://postgres@127.0.0.1:9700/test"
PLAIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
RAW_KEYED = RAW_TABLE.replace(
    "position BIGSERIAL PRIMARY KEY", "position BIGSERIAL, PRIMARY KEY (position, session_id)"
)


def measure(url: str, writers: int, seconds: float, rounds: int) -> dict[str, Any]:
    """Appends/s of ours and raw on the server at `url`, distributed when it has Citus."""
    import psycopg

    from sessionstore import SessionStore

    server = sa.make_url(url)
    schema = f"bench_citus_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(_conninfo(server), autocommit=True)
    citus = admin.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'").fetchone()
    version = admin.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
    ).fetchone()
    figures: dict[str, Any] = {
        "url": server.render_as_string(),
        "server": admin.execute("SHOW server_version").fetchone()[0],  # type: ignore[index]
        "citus": version[0] if version else None,
        "distributed": bool(citus and citus[0]),
        OURS: [],
        RAW: [],
    }
    admin.execute(f'CREATE SCHEMA "{schema}"')
    scratch = server.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        with SessionStore(scratch.render_as_string(hide_password=False)) as store:
            if figures["distributed"]:
                store.distribute()
        with psycopg.connect(_conninfo(scratch), autocommit=True) as conn:
            conn.execute(RAW_KEYED)
            if figures["distributed"]:
                conn.execute("SELECT create_distributed_table('raw_events', 'session_id')")
        for round_ in range(rounds):
            order = (OURS, RAW) if round_ % 2 == 0 else (RAW, OURS)
            for kind in order:
                rate, _ = _run(kind, scratch, writers, seconds, round_)
                figures[kind].append(rate)
                print(f"  round {round_ + 1}, {kind}: {rate:,.0f} appends/s", file=sys.stderr)
    finally:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator", default=COORDINATOR)
    parser.add_argument("--plain", default=PLAIN)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    rows = []
    for name, url in (("plain PostgreSQL", args.plain), ("Citus coordinator", args.coordinator)):
        print(f"{name}: {args.writers} writers, {args.seconds:g} s a round", file=sys.stderr)
        figures = measure(url, args.writers, args.seconds, args.rounds)
        ours, raw = statistics.median(figures[OURS]), statistics.median(figures[RAW])
        rows.append((name, figures, ours, raw))
    print("| server | sessionstore appends/s | raw INSERT+COMMIT appends/s | ours/raw |")
    print("|---|---:|---:|---:|")
    for name, figures, ours, raw in rows:
        label = f"{name} (PostgreSQL {figures['server']}" + (
            f", Citus {figures['citus']}, distributed)" if figures["distributed"] else ")"
        )
        print(f"| {label} | {ours:,.0f} | {raw:,.0f} | {ours / raw:.2f}x |")
    plain, citus = rows[0][2], rows[1][2]
    print(f"\nsessionstore on the coordinator / on plain PostgreSQL: {citus / plain:.2f}x")
    print(f"machine: {machine()}; {time.perf_counter() - began:.0f} s")
    print(f"command: {' '.join([sys.executable, '-m', 'bench.citus', *(argv or sys.argv[1:])])}")


if __name__ == "__main__":
    main()
