"""Writing an importer's `Transcript`: a new session whole, with the source's times; the same
transcript again writes nothing; a grown one adds only its new entries; `strict` refuses a
transcript that skipped lines; subagents become sessions of their own, linked back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sessionstore import ImportRefused, SessionStore
from sessionstore.events import Message, MessageAppended, TextPart
from sessionstore.importers._import import Header, write_transcript
from sessionstore.importers._transcript import Link, Transcript, session_id_for

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def said(n: int, role: str = "user") -> MessageAppended:
    return MessageAppended(
        message=Message(id=f"m{n}", role=role, parts=(TextPart(id=f"m{n}.0", text=f"turn {n}"),))
    )


def transcript(count: int) -> Transcript:
    read = Transcript(format="codex", source_id="0199-abc", title="t", model="gpt-5")
    for n in range(count):
        read.add(f"line-{n}", said(n, "user" if n % 2 == 0 else "assistant"), T0.replace(minute=n))
    return read


def test_a_transcript_is_written_once_and_grows_by_its_new_entries(store: SessionStore) -> None:
    log = store._log
    [first] = write_transcript(log, transcript(3), Header("cl100k_base"))
    assert first.created and first.events_written == 5  # started, origin, 3 messages
    assert first.session_id == "codex-0199-abc"
    s = store.session(first.session_id)
    assert [m.id for m in s.context().messages] == ["m0", "m1", "m2"]
    assert s.state()["imported_from"] == {"format": "codex", "source_id": "0199-abc"}
    assert store.read(s.id)[-1].recorded_at == T0.replace(minute=2)  # the source's own time

    [again] = write_transcript(log, transcript(3), Header("cl100k_base"))
    assert (again.created, again.events_written) == (False, 0)
    [grown] = write_transcript(log, transcript(5), Header("cl100k_base"))
    assert (grown.created, grown.events_written) == (False, 2)
    s.refresh()
    assert [m.id for m in s.context().messages] == ["m0", "m1", "m2", "m3", "m4"]
    assert store.verify(s.id).ok


def test_strict_refuses_a_transcript_that_skipped_lines(store: SessionStore) -> None:
    read = transcript(2)
    read.skip(7, "not JSON")
    with pytest.raises(ImportRefused, match="line 7: not JSON"):
        write_transcript(store._log, read, Header("cl100k_base"), strict=True)
    assert store.sessions() == []
    [written] = write_transcript(store._log, read, Header("cl100k_base"))
    assert [str(skip) for skip in written.skipped] == ["7: not JSON"]


def test_a_subagent_is_its_own_session_linked_to_the_call(store: SessionStore) -> None:
    parent = transcript(2)
    child = Transcript(format="codex", source_id="agent-1", parent=Link("0199-abc", "call_9"))
    child.add("c0", said(10))
    parent.children.append(child)
    written = write_transcript(store._log, parent, Header("cl100k_base"))
    assert [w.session_id for w in written] == ["codex-0199-abc", "codex-agent-1"]
    state = store.session("codex-agent-1").state()
    assert state["imported_from"] == {
        "format": "codex",
        "source_id": "agent-1",
        "parent_session_id": "codex-0199-abc",
        "call_id": "call_9",
    }


def test_an_unreadable_source_id_becomes_a_digest() -> None:
    assert session_id_for("pi", "--Users-me-src--/2025.jsonl").startswith("pi-")
    assert len(session_id_for("pi", "x" * 300)) == 3 + 32


def test_an_empty_transcript_is_refused(store: SessionStore) -> None:
    with pytest.raises(ImportRefused, match="holds nothing"):
        write_transcript(store._log, transcript(0), Header("cl100k_base"))


def test_a_transcript_imported_as_it_grew_equals_one_imported_once(store: SessionStore) -> None:
    write_transcript(store._log, transcript(3), Header("cl100k_base"))
    [grown] = write_transcript(store._log, transcript(5), Header("cl100k_base"))
    assert grown.events_written == 2
    steps = store.read("codex-0199-abc")
    assert [e.recorded_at for e in steps[-2:]] == [T0.replace(minute=3), T0.replace(minute=4)]
    with SessionStore("sqlite://") as once:
        write_transcript(once._log, transcript(5), Header("cl100k_base"))
        whole = once.read("codex-0199-abc")
    assert [(e.event_id, e.recorded_at, e.payload, e.hash) for e in steps] == [
        (e.event_id, e.recorded_at, e.payload, e.hash) for e in whole
    ]
