"""The importers on real transcripts from public repositories, kept beside the repository in
`../shared/transcripts` (never copied into it; FORMATS.md and SOURCES.md there say what each
file is). Skipped when that folder is absent. What they check is what importing them once
got wrong: the web export refused, inline sidechains merged, prompts only in events lost,
grown transcripts imported at the import's time, Codex's items sent back as the SDK's types
refuse them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.importers.test_codex import check_responses_render

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "transcripts"
ROUND3 = SHARED / "round3"

pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared transcripts at {SHARED}")


@pytest.fixture
def store() -> Iterator[SessionStore]:
    with SessionStore("sqlite://") as opened:
        yield opened


@pytest.mark.slow  # every real transcript of ../shared, some 25 s
def test_every_transcript_imports_with_only_the_malformed_lines_skipped(
    store: SessionStore,
) -> None:
    result = store.import_session(SHARED)
    skipped = {(Path(s.file).name, s.line) for s in result.skipped}
    assert skipped == {
        ("edge_cases.jsonl", line) for line in (10, 11, 13, 14, 15, 16)
    } | {  # the subagents' meta files, which are none of the formats
        ("agent-showcol1.meta.json", None),
        ("agent-showcol2.meta.json", None),
    }
    assert all(store.verify(session_id).ok for session_id in result.session_ids)


def test_the_web_export_without_uuids_imports(store: SessionStore) -> None:
    path = SHARED / "claude-code-transcripts" / "sample_session.json"
    [imported] = store.import_session(path).sessions
    assert (imported.session_id, imported.skipped) == ("claude-code-sample_session", ())
    assert imported.events == 2 + 33  # every logline
    assert store.import_session(path).events_written == 0


def test_inline_sidechains_are_one_session_each_linked_to_their_task_call(
    store: SessionStore,
) -> None:
    path = ROUND3 / "claude-code" / "ccv-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    result = store.import_session(path)
    main, *sides = result.session_ids
    assert len(sides) == 5
    calls = set()
    for side in sides:
        origin = store.session(side).state()["imported_from"]
        assert isinstance(origin, dict) and origin["parent_session_id"] == main
        calls.add(origin["call_id"])
    assert len(calls) == 5 and None not in calls


def test_prompts_only_in_events_are_the_user_messages(store: SessionStore) -> None:
    path = (
        ROUND3 / "codex" / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
    )
    [imported] = store.import_session(path).sessions
    context = store.session(imported.session_id).context()
    assert context.messages[0].role == "user"
    assert [m.id for m in context.messages if m.role == "user"] == [
        "line-2.prompt",
        "line-31.prompt",
        "line-33.prompt",
    ]
    assert "continues from here" not in str(context.to_anthropic())


@pytest.mark.parametrize(
    "pair",
    [
        (ROUND3 / "codex" / "codemie-incremental" / "turn-1.jsonl",
         ROUND3 / "codex" / "codemie-incremental" / "turn-2.jsonl"),
        (ROUND3 / "claude-code" / "codemie-incremental-subagents-turn1" / "turn-1.jsonl",
         ROUND3 / "claude-code" / "codemie-incremental-subagents" / "turn-2.jsonl"),
    ],
    ids=["codex", "claude-code"],
)  # fmt: skip
def test_a_transcript_imported_as_it_grew_equals_one_imported_once(
    store: SessionStore, pair: tuple[Path, Path]
) -> None:
    early, late = pair
    store.import_session(early)
    steps = store.import_session(late)
    with SessionStore("sqlite://") as once:
        for session_id in once.import_session(late).session_ids:
            assert [(e.event_id, e.recorded_at, e.hash) for e in store.read(session_id)] == [
                (e.event_id, e.recorded_at, e.hash) for e in once.read(session_id)
            ]
    assert steps.events_written > 0


def test_codex_s_items_go_back_as_the_api_takes_them(store: SessionStore) -> None:
    for path in sorted((ROUND3 / "codex").glob("rollout-*.jsonl")):
        [imported] = store.import_session(path).sessions
        check_responses_render(store.session(imported.session_id).context().to_responses())
