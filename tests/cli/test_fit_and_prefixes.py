"""`ls` fits the terminal (shortened ids, titles cut, columns left out; a row never wraps), any
command takes an id by a unique prefix, and `timeline --json` carries a decision's why whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sessionstore import InvalidArgument, SessionStore, UnknownSession
from sessionstore.cli._views import SHORT_ID, sessions_table, short_ids
from tests.cli.conftest import Cli

UUIDS = [
    "0194a1f2-7c00-7713-bd4f-1def727ea8e2",
    "0194a1f2-7c00-7713-bd4f-9aaa727ea8e2",
    "0194b3aa-0000-7000-8000-000000000001",
]


@given(st.lists(st.text(alphabet="0123456789abcdef-", min_size=1, max_size=40), unique=True))
def test_each_short_id_is_the_shortest_prefix_no_other_id_shares(ids: list[str]) -> None:
    shorts = short_ids(ids)
    for one, short in zip(ids, shorts, strict=True):
        assert one.startswith(short)
        assert len(short) >= min(SHORT_ID, len(one))
        others = [i for i in ids if i != one]
        if short != one:
            assert not any(i.startswith(short) for i in others)
        if len(short) > SHORT_ID:
            assert any(i.startswith(short[:-1]) for i in others)  # one less is ambiguous


@pytest.fixture
def many(tmp_path: Path) -> SessionStore:
    store = SessionStore(f"sqlite:///{tmp_path / 'many.db'}")
    for n, session_id in enumerate(UUIDS):
        store.create_session(
            session_id=session_id,
            model="gpt-4o",
            context_window=128_000,
            title=f"session {n}: fix the parser that fails on empty input and on tabs",
        ).append_user("hello")
    return store


@pytest.mark.parametrize("width", [50, 80, 120, 200])
def test_ls_fits_the_terminal_and_never_wraps_a_row(many: SessionStore, width: int) -> None:
    console = Console(width=width, highlight=False)
    with console.capture() as captured:
        console.print(sessions_table(many.summaries(), width))
    lines = captured.get().splitlines()
    assert len(lines) == 1 + len(UUIDS)  # the header and one line a session
    assert all(len(line.rstrip()) <= width for line in lines)
    header = lines[0].split()
    if width == 200:  # room for whole ids
        assert [line.split()[0] for line in lines[1:]] == sorted(UUIDS, reverse=True)
    else:
        assert {line.split()[0] for line in lines[1:]} == {
            "0194a1f2-7c00-7713-bd4f-1",
            "0194a1f2-7c00-7713-bd4f-9",
            "0194b3aa",
        }
        assert ("COMPACTIONS" in header) == (width == 120)
    assert header[:2] == ["ID", "TITLE"]


def test_every_command_takes_a_unique_prefix_of_an_id(cli: Cli, tmp_path: Path) -> None:
    assert cli("show", "s").out == cli("show", "s1").out
    with SessionStore(cli.url) as store:
        store.create_session(model="gpt-4o", session_id="s2").append_user("hello")
    ambiguous = cli("timeline", "s")
    assert ambiguous.code == 1
    assert ambiguous.err == (
        "sessionstore: error: 's' begins 2 session ids (s1, s2): give more of it\n"
    )
    assert cli("timeline", "s2", "--json").code == 0
    unknown = cli("show", "x")
    assert (unknown.code, unknown.err) == (1, "sessionstore: error: no session 'x' in this store\n")


def test_find_session_takes_a_whole_id_or_a_unique_prefix(many: SessionStore) -> None:
    assert many.find_session(UUIDS[2]) == UUIDS[2]
    assert many.find_session("0194b") == UUIDS[2]
    assert many.find_session("0194a1f2-7c00-7713-bd4f-9") == UUIDS[1]
    with pytest.raises(InvalidArgument, match="begins 2 session ids"):
        many.find_session("0194a1f2")
    with pytest.raises(UnknownSession):
        many.find_session("ffff")
    with pytest.raises(UnknownSession):
        many.find_session("")


def test_timeline_json_carries_a_decisions_why_whole(cli: Cli) -> None:
    why = "the user starts over: the parser is rewritten from its grammar, not patched again"
    with SessionStore(cli.url) as store:
        store.session("s1").clear(reason=why)
    rows = json.loads(cli("timeline", "s1", "--json").out)
    assert len(why) > 80
    assert rows[-1]["summary"] == f"cleared the live context: 8 message(s) left it ({why})"
