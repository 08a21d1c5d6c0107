"""`sessionstore view` and `export --format html`: the page `SessionStore.view` renders,
written to a file; `view --all` a page per session and the index; `export --at` the session
as it stood at an event, in every format."""

from __future__ import annotations

import json
from pathlib import Path

from sessionstore import SessionStore
from tests.cli.conftest import Cli


def test_view_writes_the_page_the_api_renders(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "s1.html"
    run = cli("view", "s", "-o", str(target))  # a unique prefix names the session
    assert (run.code, run.out, run.err) == (0, "", f"wrote the view of s1 to {target}\n")
    with SessionStore(cli.url) as store:
        assert target.read_text(encoding="utf-8") == store.view("s1")


def test_view_at_an_event_and_with_prices(cli: Cli, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o": {"input": 2.5, "output": 10}}), encoding="utf-8")
    target = tmp_path / "early.html"
    run = cli("view", "s1", "--at", "4", "--prices", str(prices), "-o", str(target))
    assert run.code == 0, run.err
    with SessionStore(cli.url) as store:
        expected = store.view("s1", at=4, prices={"gpt-4o": {"input": 2.5, "output": 10}})
    assert target.read_text(encoding="utf-8") == expected


def test_view_refuses_a_bad_point_and_a_bad_price_table(cli: Cli, tmp_path: Path) -> None:
    run = cli("view", "s1", "--at", "99", "-o", str(tmp_path / "x.html"))
    assert run.code == 2
    assert "99 is no point of session s1: give an event number from 1 to 10" in run.err
    prices = tmp_path / "prices.json"
    prices.write_text('{"gpt-4o": {"input": 1}}', encoding="utf-8")
    run = cli("view", "s1", "--prices", str(prices), "-o", str(tmp_path / "x.html"))
    assert run.code == 1
    assert run.err == "sessionstore: error: prices of 'gpt-4o': no output price\n"
    assert not (tmp_path / "x.html").exists()
    run = cli("view")
    assert run.err.splitlines()[-1] == (
        "sessionstore: error: give a session ID, or --all for every session "
        "(see sessionstore view --help)"
    )


def test_view_all_writes_a_page_per_session_and_the_index(cli: Cli, tmp_path: Path) -> None:
    with SessionStore(cli.url) as store:
        fork = store.fork("s1", at=5, title="another way").id
    folder = tmp_path / "site"
    run = cli("view", "--all", "-o", str(folder))
    assert run.code == 0, run.err
    assert run.err == f"wrote the pages of 2 sessions and index.html to {folder}\n"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{fork}.html", "index.html", "s1.html"]
    )
    with SessionStore(cli.url) as store:
        assert (folder / "index.html").read_text(encoding="utf-8") == store.view_index()
        assert (folder / f"{fork}.html").read_text(encoding="utf-8") == store.view(fork)


def test_export_html_is_the_view(cli: Cli) -> None:
    run = cli("export", "s1", "--format", "html")
    assert run.code == 0, run.err
    with SessionStore(cli.url) as store:
        assert run.out == store.view("s1")


def test_export_at_an_event_in_every_format(cli: Cli, tmp_path: Path) -> None:
    with SessionStore(cli.url) as store:
        session = store.session("s1")
        markdown = session.to_markdown(4)
        page = store.view("s1", at=4)
    assert cli("export", "s1", "--format", "markdown", "--at", "4").out == markdown
    assert cli("export", "s1", "--format", "html", "--at", "4").out == page
    target = tmp_path / "s1.jsonl"
    run = cli("export", "s1", "--at", "4", "-o", str(target))
    assert run.err.startswith("wrote 4 events and ")
    lines = target.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.startswith('{"event_id"')]
    assert [event["seq"] for event in events] == [1, 2, 3, 4]
    copy = tmp_path / "copy.db"
    with SessionStore(f"sqlite:///{copy}") as other:
        other.import_session(target)
        assert other.version("s1") == 4
        assert other.verify("s1").ok
