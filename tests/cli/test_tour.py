"""The tour docs/cli.md shows is what `sessionstore demo` and the commands after it print
today, run for real; only the times may differ. When a change means the figures change, the
page is rewritten from a real run with `python -m tests.cli.regen_tour`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.regen_tour import PAGE, normalized, run_tour, shown_tour


def test_the_tour_in_the_docs_is_what_the_commands_print_today(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    shown = normalized(shown_tour(PAGE.read_text(encoding="utf-8"))).splitlines()
    printed = normalized(run_tour(tmp_path)).splitlines()
    assert printed == shown, (
        "docs/cli.md shows another tour than the commands print today; if the change is "
        "meant, paste a real run with `python -m tests.cli.regen_tour`"
    )


def test_only_the_times_and_the_files_size_are_masked() -> None:
    assert normalized("file         2,138,112 bytes with its write-ahead log") == (
        "file         N bytes with its write-ahead log"
    )
    assert normalized("events       677, 2,138,112 bytes of JSON") == (
        "events       677, 2,138,112 bytes of JSON"
    )


def test_only_the_times_are_masked() -> None:
    assert normalized("at seq 661 (2026-11-26 20:19:27); 20:19:27  pruned 5, 35,081 tokens") == (
        "at seq 661 (YYYY-MM-DD hh:mm:ss); hh:mm:ss  pruned 5, 35,081 tokens"
    )
    assert normalized("[Output pruned at 2026-11-26T20:18:35Z; restore with part id 01941f29]") == (
        "[Output pruned at YYYY-MM-DDThh:mm:ssZ; restore with part id 01941f29]"
    )
