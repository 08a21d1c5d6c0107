"""`sessionstore export ID --format markdown`: the transcript `Session.to_markdown` renders,
on stdout or written whole to a file; JSONL stays the default."""

from __future__ import annotations

from pathlib import Path

from sessionstore import SessionStore
from tests.cli.conftest import Cli


def transcript(cli: Cli, *, history: bool = False) -> str:
    with SessionStore(cli.url) as store:
        return store.session("s1").to_markdown(history=history)


def test_markdown_goes_to_stdout_as_the_api_renders_it(cli: Cli) -> None:
    run = cli("export", "s1", "--format", "markdown")
    assert (run.code, run.err) == (0, "")
    assert run.out == transcript(cli)
    assert run.out.splitlines()[:6] == [
        "# fix the parser",
        "",
        "- session: `s1`",
        "- model: gpt-4o",
        "- window: 10,000 tokens, 4,096 of them reserved for output",
        "- shown: the live context after event 10 (2026-11-23 12:00:09 UTC): 8 messages, "
        "354 tokens",
    ]


def test_markdown_with_o_writes_the_file_and_says_so(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "s1.md"
    run = cli("export", "s1", "--format", "markdown", "--history", "-o", str(target))
    assert (run.code, run.out) == (0, "")
    assert run.err == f"wrote the markdown transcript of s1 to {target}\n"
    assert target.read_text(encoding="utf-8") == transcript(cli, history=True)
    assert not list(tmp_path.glob("*.partial"))


def test_jsonl_stays_the_default_and_refuses_history(cli: Cli) -> None:
    default = cli("export", "s1")
    assert default.out == cli("export", "s1", "--format", "jsonl").out
    assert default.out.startswith('{"event_id":')
    run = cli("export", "s1", "--history")
    assert run.code == 2
    assert run.err.splitlines()[-1] == (
        "sessionstore: error: --history is for --format markdown: an export holds every event "
        "(see sessionstore export --help)"
    )
