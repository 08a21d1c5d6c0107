"""`sessionstore search` through the real entry point: its lines, its JSON, its filters and
refusals, and imported transcripts found ("import ~/.claude/projects, then search")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.cli._find import since_option
from tests.cli.conftest import START, Cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRANSCRIPTS = Path("/work/shared/transcripts")


def test_search_prints_each_hit_and_its_excerpt_newest_first(cli: Cli) -> None:
    run = cli("search", "parser")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0::2] == [
        "s1  #9  tool/tool_result  2026-11-23 12:00:08  fix the parser",
        "s1  #8  assistant/tool_call  2026-11-23 12:00:07  fix the parser",
        "s1  #4  assistant/tool_call  2026-11-23 12:00:03  fix the parser",
        "s1  #3  user/text  2026-11-23 12:00:02  fix the parser",
    ]
    assert lines[1::2] == [
        "    Edited [parser].py",
        '    edit {"path":"[parser].py"}',
        '    read {"path":"[parser].py"}',
        "    The [parser] fails on empty input.",
    ]


def test_search_json_carries_every_field(cli: Cli) -> None:
    run = cli("search", '"empty input"', "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == [
        {
            "session_id": "s1",
            "seq": 10,
            "recorded_at": "2026-11-23T12:00:09+00:00",
            "event_type": "MessageAppended",
            "role": "assistant",
            "kind": "text",
            "part_id": "a4.t",
            "title": "fix the parser",
            "excerpt": "Fixed: empty input returns None.",
            "matches": [[7, 18]],
            "marked": "Fixed: [empty input] returns None.",
        },
        {
            "session_id": "s1",
            "seq": 3,
            "recorded_at": "2026-11-23T12:00:02+00:00",
            "event_type": "MessageAppended",
            "role": "user",
            "kind": "text",
            "part_id": "u1.t",
            "title": "fix the parser",
            "excerpt": "The parser fails on empty input.",
            "matches": [[20, 31]],
            "marked": "The parser fails on [empty input].",
        },
    ]


def test_search_filters_and_limits(cli: Cli) -> None:
    assert cli("search", "parser", "--role", "user", "--json").out.count('"seq"') == 1
    assert cli("search", "parser", "--limit", "1", "--json").out.count('"seq"') == 1
    assert cli("search", "parser", "--app", "nobody").out == "nothing found for 'parser'\n"
    assert cli("search", "parser", "--tag", "nobody", "--json").out == "[]\n"
    since = cli("search", "parser", "--since", "2026-11-23T12:00:07", "--json")
    assert [hit["seq"] for hit in json.loads(since.out)] == [9, 8]
    assert cli("search", "parser", "--since", "1d", "--json").out == "[]\n"  # START is long ago


def test_search_refuses_a_query_without_words_and_a_bad_since(cli: Cli) -> None:
    run = cli("search", "?!")
    assert run.code == 1
    assert run.err == (
        "sessionstore: error: the query '?!' holds no word to search for (words are letters "
        "and digits; punctuation is not indexed)\n"
    )
    bad = cli("search", "parser", "--since", "yesterday")
    assert bad.code == 2
    assert "'yesterday' is neither an ISO date or time" in bad.err


def test_since_takes_an_iso_time_in_utc_unless_zoned_or_a_span() -> None:
    assert since_option("2026-11-23") == START.replace(hour=0)
    assert since_option("2026-11-23T13:00+01:00") == START
    assert since_option(None) is None
    assert since_option("2d") is not None


def test_imported_claude_code_transcripts_are_searchable(tmp_path: Path, cli: Cli) -> None:
    projects = tmp_path / "projects" / "dateparse"
    projects.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_code_session.jsonl", projects / "3c9e4f1a.jsonl")
    assert cli("import", str(tmp_path / "projects")).code == 0
    hits = json.loads(cli("search", "utc offset", "--json").out)
    assert [(h["seq"], h["role"], h["kind"]) for h in hits] == [
        (19, "assistant", "text"),
        (14, "user", "summary"),
    ]
    assert hits[0]["marked"] == (
        "All 212 tests pass. `parse()` now keeps the [UTC] [offset] instead of dropping it."
    )
    assert {h["session_id"] for h in hits} == {"claude-code-3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"}


@pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason="no real transcripts on this machine")
def test_a_real_transcript_is_found_by_a_word_of_its_first_request(tmp_path: Path) -> None:
    first = sorted((TRANSCRIPTS / "round3" / "claude-code").glob("*.jsonl"))[:1]
    if not first:
        pytest.skip("no Claude Code transcript among the real ones")
    with SessionStore(f"sqlite:///{tmp_path / 'real.db'}") as store:
        result = store.import_session(first[0])
        (imported, *_) = result.sessions
        requests = [
            m for m in store.session(imported.session_id).context().messages if m.role == "user"
        ]
        words = [
            w
            for m in requests
            for p in m.parts
            for w in getattr(p, "text", "").split()
            if w.isalpha() and len(w) > 6
        ]
        if not words:
            pytest.skip("its requests hold no plain word to look for")
        hits = store.search(words[0])
        assert hits
        assert imported.session_id in {h.session_id for h in hits}
        assert all("[" in h.marked for h in hits)
