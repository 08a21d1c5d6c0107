"""The two workspaces the benchmark's long sessions work in, and what their users ask: short
requests, follow-ups, preferences stated once ("E2E tests only", "keep the old code path"),
a pasted traceback, a pasted spec, a pasted CI log and a pasted `find .` listing of 17k
tokens, as real users paste them.
"""

from __future__ import annotations

import random

from bench import fixture_text as text
from bench.fixture_story import Project

LEDGER = "/home/dev/ledger"
TILEMAP = "/home/dev/tilemap"


def ledger(seed: int) -> Project:
    """A Python package (Claude Code, absolute paths)."""
    rng = random.Random(seed)
    crash = text.python_traceback(rng, LEDGER, "src/ledger/csv_import.py", "Betrag").log
    spec = "\n".join(
        f"- {field}: {kind}; {rule}"
        for field, kind, rule in [
            ("Buchungstag", "date dd.mm.yyyy", "the booking date, required"),
            ("Valuta", "date dd.mm.yyyy", "the value date, may be empty"),
            ("Auftraggeber/Empfänger", "text", "the counterparty, trimmed"),
            ("Verwendungszweck", "text", "free text, may span lines inside quotes"),
            ("Betrag", "decimal with comma", "negative for debits, thousands separated by ."),
            ("Währung", "ISO 4217", "EUR unless given"),
        ]
        * 4
    )
    listing = text.find_listing(rng, LEDGER, 1_700)
    requests = [
        "The CSV import breaks on German bank exports (semicolon separated, comma decimals). "
        "Can you make `ledger import` handle them? There is a sample in "
        "tests/fixtures/export_de.csv.",
        f"I ran `ledger import ~/Downloads/umsaetze_2024.csv` and got this:\n\n{crash}\n\n"
        "Please fix it, and keep the old code path for the English exports: do not remove it.",
        "Only E2E tests please, no unit tests for the parser internals: run the CLI on the "
        "fixtures and compare its output with the expected ledger.",
        "yes, go ahead",
        f"Here is the column spec from the bank's documentation:\n\n{spec}\n\nMake the importer "
        "follow it exactly, including the multi-line Verwendungszweck.",
        "Add a `--since YYYY-MM-DD` option to `ledger report` so I can limit a report to a date.",
        "The report totals are off by a cent for March, probably rounding. Use banker's "
        "rounding like the bank does.",
        "continue",
        f"Here is what is in the repo, why is the package so big?\n\n{listing}\n\nClean up "
        "what should not be committed and fix .gitignore.",
        "Rename `parse_amount` to `parse_money` everywhere, keeping a deprecated alias.",
        "Now type-check the whole package with mypy --strict and fix what it finds.",
        "The CLI should print a clear error, not a traceback, when a column is missing.",
        "Support the Sparkasse export too: same columns, but the file is in cp1252.",
        "Can you speed up `ledger import` on a 200k-row file? It takes a minute now.",
        "run the whole test suite again and tell me what is still red",
        "Add a `ledger export --format ofx` command, E2E test only as before.",
        "Don't touch the English importer at all, I changed my mind about the refactor there.",
        "Last thing: update the README's import section and the changelog.",
        "Check that the changelog mentions the cp1252 support and the --since option.",
    ]
    return Project(
        root=LEDGER,
        language="python",
        sources=[
            "src/ledger/csv_import.py",
            "src/ledger/money.py",
            "src/ledger/report.py",
            "src/ledger/cli.py",
            "src/ledger/accounts.py",
            "src/ledger/export.py",
        ],
        tests=["tests/test_e2e_import.py", "tests/test_e2e_report.py", "tests/test_cli.py"],
        requests=requests,
        absolute=True,
    )


def tilemap(seed: int) -> Project:
    """A Rust crate (Codex, workspace-relative paths)."""
    rng = random.Random(seed)
    failure = text.cargo_test_failure(rng, ["chunk::tests::index_roundtrip"], "chunk::tests::wrap")
    ci_log = "\n".join(
        [
            f"2025-10-02T09:{m:02d}:{s:02d}.1234567Z ##[group]Run cargo test"
            for m in range(3)
            for s in range(0, 60, 7)
        ]
        + failure.log.splitlines() * 6
    )
    requests = [
        "The chunk index overflows for maps larger than 4096 tiles. Fix it without changing "
        "the public API.",
        "Don't add new dependencies; the crate must stay no_std-friendly later.",
        f"CI is red on main, here is the log:\n\n{ci_log}\n\nPlease find out why.",
        "ok, continue",
        "Make `Chunk::neighbours` wrap around the map edges, with a test for each corner.",
        "Render the map to PNG in `src/render.rs` without pulling in the image crate.",
        "The render is upside down. Row 0 should be the top.",
        "Add a `--seed` flag to the demo binary so the maps are reproducible.",
        "Run clippy and fix the warnings, but keep the unsafe block in io.rs as it is.",
        "Serialise maps to a compact binary format in src/io.rs with a version byte.",
        "Loading a map written by the previous version must still work.",
        "Benchmark the chunk lookup; it should not allocate.",
        "continue",
        "Add doc comments on every public item and a doc test for `Chunk::get`.",
        "Write the CHANGELOG entry for 0.4.0.",
        "Run the tests one last time and summarise what changed today.",
        "Also bump the version in Cargo.toml to 0.4.0 and check that the docs build.",
        "One more: `cargo test --release` fails on the overflow test, look at it.",
        "Thanks. Leave the benchmark code out of the release build.",
    ]
    return Project(
        root=TILEMAP,
        language="rust",
        sources=["src/chunk.rs", "src/render.rs", "src/io.rs", "src/lib.rs", "src/map.rs"],
        tests=["tests/roundtrip.rs", "tests/render.rs"],
        requests=requests,
        absolute=False,
    )
