"""The HTML view of a session, read as data: its replay is the store's replay at every event,
its curve has a point per event and a mark per event that changed how the context is shown,
session text is escaped, the page refers to nothing outside itself, and a fixed session
renders to the golden page on SQLite and PostgreSQL."""

from __future__ import annotations

import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.events import InvalidArgument, SessionStarted
from sessionstore.projections import (
    ContextFold,
    LiveMessage,
    LiveToolResult,
    fold_events,
    session_view,
)
from sessionstore.projections._view_parts import CLIP, message_html
from tests.cli.conftest import build_session, fixed_clock
from tests.view.conftest import HOSTILE

GOLDEN = Path(__file__).parent / "golden"
PRICES = {"gpt-4o": {"input": 2.5, "cached": 1.25, "output": 10}}
TIMES = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def fork_id(store: SessionStore) -> str:
    return next(info.id for info in store.sessions() if info.id != "s1")


def start_of(store: SessionStore, session_id: str) -> ContextFold | None:
    header = store.read(session_id, 1, 1)[0].payload
    assert isinstance(header, SessionStarted)
    if header.parent_session_id is None:
        return None
    assert header.parent_seq is not None
    return fold_events(store.read(header.parent_session_id, 1, header.parent_seq))


def view_data(page: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="view-data">(.*?)</script>', page)
    assert found is not None
    data: dict[str, object] = json.loads(found.group(1))
    return data


@pytest.mark.parametrize("which", ["s1", "fork"])
def test_the_replay_at_every_event_is_the_stores_replay(
    view_store: SessionStore, which: str
) -> None:
    session_id = "s1" if which == "s1" else fork_id(view_store)
    session = view_store.session(session_id)
    view = session_view(view_store.read(session_id), start_of(view_store, session_id))
    assert [row.seq for row in view.rows] == list(range(1, session.version + 1))
    for seq in range(1, session.version + 1):
        live = [
            v.message
            for v in view.versions
            if v.enter <= seq and (v.leave is None or seq < v.leave)
        ]
        assert live == list(session.context(at=seq).messages), seq
        assert view.rows[seq - 1].tokens == session.timeline()[seq - 1].tokens


def test_the_curve_has_a_point_per_event_and_a_mark_per_change_of_shown_context(
    view_store: SessionStore,
) -> None:
    page = view_store.view("s1")
    points = re.search(r'<polyline id="tokens" points="([^"]*)"', page)
    assert points is not None
    assert len(points.group(1).split(" ")) == view_store.version("s1") == 23
    marks = re.findall(r'<g class="mark ([a-z-]+)" data-seq="(\d+)"', page)
    assert [(int(seq), kind) for kind, seq in marks] == [
        (11, "compaction"),
        (15, "truncation"),
        (19, "prune"),
        (20, "restore"),
        (23, "revert"),
    ]
    assert 'class="limit window"' in page and "usable window 5,904" in page
    assert "trigger 4,723" in page


class Tags(HTMLParser):
    """Every element of a page with its attributes, as a browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def test_session_text_is_escaped_everywhere(view_store: SessionStore) -> None:
    page = view_store.view("s1")
    assert HOSTILE not in page
    tags = Tags()
    tags.feed(page)
    assert [tag for tag, _ in tags.found].count("script") == 2  # the data and the page's own
    assert "img" not in [tag for tag, _ in tags.found]
    assert [(t, a) for t, attrs in tags.found for a, _ in attrs if a.startswith("on")] == []
    # the data block holds the fragments and the originals as JSON: nothing in it can end it
    block = page.split('id="view-data">', 1)[1].split("</script>", 1)[0]
    assert "</" not in block and "<!--" not in block
    assert page.index(block) + len(block) == page.index("</script><script>")
    fragments = json.dumps(view_data(page))
    assert json.dumps(html.escape("Now add a test. " + HOSTILE))[1:-1] in fragments


def test_the_page_refers_to_nothing_outside_itself(view_store: SessionStore) -> None:
    page = view_store.view(fork_id(view_store))
    addresses = re.findall(r'(?:src|href|action)="([^"]*)"', page)
    assert addresses  # the parent's page and the event links
    assert all(re.fullmatch(r"#ev-\d+|[A-Za-z0-9%_.-]+\.html", a) for a in addresses), addresses
    assert 'href="s1.html"' in page
    assert "http:" not in page and "https:" not in page and "@import" not in page


def test_usage_per_turn_and_its_cost_from_the_price_table(view_store: SessionStore) -> None:
    data = view_data(view_store.view("s1", prices=PRICES))
    lists = data["lists"]
    assert isinstance(lists, dict)
    # 300 input at 2.5, 100 cached at 1.25, 20 output at 10, per million
    assert lists["usage"] == [
        '<tr><td><a href="#ev-16" class="jump" data-seq="16">16</a></td><td>300</td><td>100</td>'
        "<td>0</td><td>20</td><td>0.0011</td></tr>"
    ]
    unpriced = view_store.view("s1", prices={"other-model": {"input": 1, "output": 2}})
    assert "The price table has no entry for gpt-4o." in unpriced


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ([1, 2], "prices must map a model to its prices, got [1, 2]"),
        ({"m": {"input": 1}}, "prices of 'm': no output price"),
        ({"m": {"input": 1, "output": -1}}, "prices of 'm': output must be a number >= 0, got -1"),
        ({"m": {"input": 1, "output": 1, "cache": 1}}, "prices of 'm': unknown key(s) cache"),
    ],
)
def test_a_bad_price_table_is_refused_in_its_own_words(
    view_store: SessionStore, prices: object, message: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        view_store.view("s1", prices=prices)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message)


def test_a_view_at_an_event_is_the_session_as_it_stood(view_store: SessionStore) -> None:
    data = view_data(view_store.view("s1", at=12))
    assert (data["first"], data["last"]) == (1, 12)


def test_the_fork_and_its_parent_link_each_other(view_store: SessionStore) -> None:
    fork = fork_id(view_store)
    parent = view_store.view("s1")
    assert f'<a href="{fork}.html">try another way</a>' in parent
    child = view_store.view(fork)
    assert '<a href="s1.html">fix the parser</a> <code>s1</code> at event 12' in child


def test_the_index_links_every_session_newest_first(view_store: SessionStore) -> None:
    index = view_store.view_index()
    links = re.findall(r'<td><a href="([^"]+)">', index)
    assert links == [f"{info.id}.html" for info in view_store.sessions()]
    assert len(links) == 2


def test_golden_page_of_a_fixed_session(view_store: SessionStore) -> None:
    page = TIMES.sub("<time>", view_store.view("s1", prices=PRICES))
    path = GOLDEN / "s1.html"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(page, encoding="utf-8")
    assert page == path.read_text(encoding="utf-8")


def test_a_long_text_shows_its_head_and_keeps_the_whole_in_the_pages_table() -> None:
    output = "x" * (CLIP + 2_000)
    result = LiveToolResult(id="p", call_id="c", output=output, tokens=1)
    message = LiveMessage(id="m", role="tool", parts=(result,), tokens=1)
    texts: dict[str, str] = {}
    fragment = message_html(message, texts)
    assert texts == {"t0": output}
    assert (
        f'<pre class="shown">{"x" * CLIP}</pre><details class="more" data-text="t0">'
        "<summary>all 5,000 characters</summary></details>"
    ) in fragment


FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize(
    "source",
    [
        "claude_code_session.jsonl",
        "codex/rollout-2025-10-02T09-14-00-0199a3f2-6c1e-7b40-9d2a-51e8c3b7a604.jsonl",
        "pi/tree_v3.jsonl",
        "opencode/storage",
    ],
)
def test_imported_transcripts_replay_in_the_view_as_in_the_store(
    source: str, tmp_path: Path
) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'imported.db'}") as store:
        store.import_session(FIXTURES / source)
        infos = store.sessions()
        assert infos
        for info in infos:
            session = store.session(info.id)
            view = session_view(store.read(info.id), start_of(store, info.id))
            for seq in range(1, session.version + 1):
                live = [
                    v.message
                    for v in view.versions
                    if v.enter <= seq and (v.leave is None or seq < v.leave)
                ]
                assert live == list(session.context(at=seq).messages), (info.id, seq)
            page = store.view(info.id)
            assert page.count("<script") == 2


def test_a_redacted_output_is_nowhere_in_the_page(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'redacted.db'}", clock=fixed_clock()) as store:
        s = build_session(store)
        s.prune()  # the read output: pruned, so the page also keeps its original
        parts = s.context(at=10).messages[2].parts  # t1: the read output
        (part,) = [p.id for p in parts]
        assert "def rule_7" in store.view("s1")
        s.redact([part], reason="secret")
        page = store.view("s1")
    assert "def rule_7" not in page and "def parse" not in page
    assert "[redacted: secret]" in page
