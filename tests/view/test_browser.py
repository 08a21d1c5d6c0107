"""The view in a real browser (Debian's chromium driven by Playwright; nothing downloads a
browser): the page runs without an error or a network request, its curve and marks, a mark
taking the reader to its event, the replay slider against `context(at=)`, the diff between
two points, a pruned output's original one click away, and the index's sorting and search.
One browser for the module; screenshots are kept in the test's folder (or in
$SESSIONSTORE_VIEW_SHOTS when set)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.projections import diff_contexts
from tests.cli.conftest import READ_OUTPUT, fixed_clock
from tests.view.conftest import HOSTILE, build_view_session

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():  # pragma: no cover - CI installs it
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionStore, Path]]:
    """The fixed session's pages and index, written as `view --all` writes them."""
    folder = tmp_path_factory.mktemp("view")
    with SessionStore(f"sqlite:///{folder / 'store.db'}", clock=fixed_clock()) as store:
        build_view_session(store)
        for info in store.sessions():
            (folder / f"{info.id}.html").write_text(store.view(info.id), encoding="utf-8")
        (folder / "index.html").write_text(store.view_index(), encoding="utf-8")
        yield store, folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Opened:
    """A page of the site, with what it logged and every request it made."""

    def __init__(self, browser: Any, file: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.route("**/*", self._route)
        self.page.goto(file.as_uri())

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(message.text)

    def _route(self, route: Any) -> None:
        self.requests.append(route.request.url)
        if route.request.url.startswith("file:") and len(self.requests) == 1:
            route.continue_()
        else:
            route.abort()

    def seq(self, which: str, seq: int) -> None:
        self.page.fill(f"#seq-{which}-n", str(seq))

    def shown_ids(self, where: str = "#context") -> list[str]:
        ids: list[str] = self.page.eval_on_selector_all(
            f"{where} article", "els => els.map(e => e.dataset.id)"
        )
        return ids


@pytest.fixture
def s1(browser: Any, site: tuple[SessionStore, Path]) -> Iterator[Opened]:
    opened = Opened(browser, site[1] / "s1.html")
    yield opened
    opened.page.close()


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("SESSIONSTORE_VIEW_SHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_page_runs_with_no_error_and_no_request(s1: Opened, tmp_path: Path) -> None:
    assert s1.problems == []
    assert len(s1.requests) == 1 and s1.requests[0].endswith("/s1.html")
    assert s1.page.evaluate("window.hacked") is None  # the hostile text ran nowhere
    assert s1.page.locator("#context article").count() == 11
    # the compaction's replaced messages beside its summary
    columns = s1.page.locator("#compaction-11 .versions")
    assert columns.nth(0).locator("article").count() == 4
    assert columns.nth(1).locator("article.summary").count() == 1
    s1.page.screenshot(path=str(shots(tmp_path) / "view.png"), full_page=True)


def test_the_curve_has_a_point_per_event_and_the_marks(s1: Opened) -> None:
    points = s1.page.eval_on_selector("#tokens", "line => line.points.numberOfItems")
    assert points == 23
    marks = s1.page.eval_on_selector_all(
        "g.mark", "gs => gs.map(g => [Number(g.dataset.seq), g.classList[1]])"
    )
    assert marks == [
        [11, "compaction"],
        [15, "truncation"],
        [19, "prune"],
        [20, "restore"],
        [23, "revert"],
    ]
    title = s1.page.text_content("g.mark.compaction title")
    assert title is not None and title.startswith("event 11, compaction: compacted 4 message(s)")


def test_clicking_a_mark_takes_the_reader_to_its_event(s1: Opened) -> None:
    s1.page.locator("#event-list").evaluate("el => window.scrollTo(0, 0)")
    s1.page.click("g.mark.prune circle")
    row = s1.page.locator("#ev-19")
    assert row.get_attribute("class") == "event kind-prune current"
    assert row.is_visible()
    in_view = row.evaluate(
        "el => { const r = el.getBoundingClientRect(); "
        "return r.top >= 0 && r.bottom <= innerHeight; }"
    )
    assert in_view is True
    assert s1.page.input_value("#seq-a-n") == "19"


def test_the_slider_shows_the_context_at_each_event(
    s1: Opened, site: tuple[SessionStore, Path]
) -> None:
    session = site[0].session("s1")
    for seq in range(1, session.version + 1):
        s1.page.eval_on_selector(
            "#seq-a",
            "(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }",
            str(seq),
        )
        live = session.context(at=seq)
        assert s1.shown_ids() == [m.id for m in live.messages], seq
        outputs = s1.page.eval_on_selector_all(
            "#context .result pre.shown", "els => els.map(e => e.textContent)"
        )
        expected = [p.output for m in live.messages for p in m.parts if p.type == "tool_result"]
        assert outputs == expected, seq


def test_the_diff_between_two_events(s1: Opened, site: tuple[SessionStore, Path]) -> None:
    session = site[0].session("s1")
    s1.seq("a", 10)
    s1.seq("b", 16)
    changes = diff_contexts(session.context(at=10), session.context(at=16))
    assert s1.shown_ids("#diff-entered") == [m.id for m in changes.entered]
    assert s1.shown_ids("#diff-left") == [m.id for m in changes.left]
    assert len(changes.entered) == 5 and len(changes.left) == 4
    s1.seq("a", 16)
    s1.seq("b", 19)
    changes = diff_contexts(session.context(at=16), session.context(at=19))
    assert s1.shown_ids("#diff-entered") == [m.id for m in changes.entered]
    assert s1.shown_ids("#diff-left") == [m.id for m in changes.left]
    # the outputs shown differently, and the page also shows a6 again: its thinking cleared
    pruned = {c.message_id for c in changes.changed}
    assert set(s1.shown_ids("#diff-changed")) == pruned | {"a6"}
    assert len(pruned) == 1


def test_a_pruned_output_shows_its_original_one_click_away(
    s1: Opened, site: tuple[SessionStore, Path]
) -> None:
    live = site[0].session("s1").context(at=19)
    (message,) = [
        m
        for m in live.messages
        if any(p.type == "tool_result" and p.status == "pruned" for p in m.parts)
    ]
    s1.seq("a", 19)
    result = s1.page.locator(f'#context article[data-id="{message.id}"] .result')
    assert result.get_attribute("class") == "result status-pruned"
    original = result.locator("details.original")
    assert not original.locator("pre").is_visible()
    original.locator("summary").click()  # the page writes the original in on the toggle
    sync_api.expect(original.locator("pre")).to_be_visible()
    assert original.locator("pre").text_content() == READ_OUTPUT + HOSTILE


def test_the_index_sorts_and_searches(browser: Any, site: tuple[SessionStore, Path]) -> None:
    index = Opened(browser, site[1] / "index.html")
    titles = "rows => rows.filter(r => !r.hidden).map(r => r.dataset.title)"
    assert index.problems == [] and len(index.requests) == 1
    assert index.page.eval_on_selector_all("#sessions tbody tr", titles) == [
        "try another way",
        "fix the parser",
    ]
    index.page.click('th[data-key="size"]')  # the largest first
    assert index.page.eval_on_selector_all("#sessions tbody tr", titles) == [
        "fix the parser",
        "try another way",
    ]
    index.page.click('th[data-key="size"]')
    assert index.page.get_attribute('th[data-key="size"]', "aria-sort") == "ascending"
    index.page.fill("#search", "PARSER")
    assert index.page.eval_on_selector_all("#sessions tbody tr", titles) == ["fix the parser"]
    assert index.page.text_content("#count") == "1 of 2 sessions"
    index.page.close()
