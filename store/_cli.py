"""`sessionstore`: the command line, a thin client of `SessionStore`.

Every error a user can cause is one line on stderr and a non-zero exit; `--debug` shows the
traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.metadata import version

from store._engine import make_engine, resolve_url
from store._errors import SessionStoreError
from store._migrate import current_revision, head_revision, upgrade
from store._store import SessionStore


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionstore",
        description="An append-only, event-sourced store for LLM agent sessions.",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="database URL (default: $SESSIONSTORE_URL, else sqlite:///sessions.db)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument(
        "--version", action="version", version=f"sessionstore {version('sessionstore')}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("ls", help="list sessions")
    listing.add_argument("--json", action="store_true", help="print JSON")

    verify = commands.add_parser("verify", help="recompute hash chains (exit 1 if broken)")
    target = verify.add_mutually_exclusive_group(required=True)
    target.add_argument("session_id", nargs="?", metavar="ID")
    target.add_argument("--all", action="store_true", help="verify every session")
    verify.add_argument("--json", action="store_true", help="print JSON")

    database = commands.add_parser("db", help="schema migrations")
    db_commands = database.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    db_commands.add_parser("upgrade", help="migrate the database to this version's schema")
    db_commands.add_parser("current", help="show the database's schema revision")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except SessionStoreError as exc:
        if args.debug:
            raise
        print(f"sessionstore: error: {exc}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "db":
        return run_db(args)
    with SessionStore(args.db) as store:
        if args.command == "ls":
            infos = store.sessions()
            if args.json:
                print(
                    json.dumps(
                        [
                            {
                                "id": s.id,
                                "title": s.title,
                                "events": s.version,
                                "parent_id": s.parent_id,
                                "parent_seq": s.parent_seq,
                                "created_at": s.created_at.isoformat(),
                                "updated_at": s.updated_at.isoformat(),
                            }
                            for s in infos
                        ],
                        indent=2,
                    )
                )
            else:
                for s in infos:
                    print(
                        f"{s.id}\t{s.version} events\t{s.updated_at:%Y-%m-%d %H:%M:%S}\t{s.title}"
                    )
            return 0
        ids = [s.id for s in store.sessions()] if args.all else [args.session_id]
        reports = [store.verify(session_id) for session_id in ids]
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "session_id": r.session_id,
                            "ok": r.ok,
                            "events_checked": r.events_checked,
                            "first_broken_seq": r.first_broken_seq,
                            "reason": r.reason,
                        }
                        for r in reports
                    ],
                    indent=2,
                )
            )
        else:
            for r in reports:
                if r.ok:
                    print(f"{r.session_id}: ok ({r.events_checked} events)")
                else:
                    print(f"{r.session_id}: BROKEN at seq {r.first_broken_seq}: {r.reason}")
        return 0 if all(r.ok for r in reports) else 1


def run_db(args: argparse.Namespace) -> int:
    engine = make_engine(resolve_url(args.db))
    try:
        if args.db_command == "upgrade":
            upgrade(engine)
        with engine.connect() as conn:
            current = current_revision(conn)
        print(
            f"database at {current or 'nothing (empty)'}; this version's head is {head_revision()}"
        )
        return 0
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
