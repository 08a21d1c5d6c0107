"""Redaction deletes content for good and keeps every chain whole: the secret's bytes leave the
database and its files, the session shows `[redacted: <reason>]` where it was (live, in
replays and in exports), `verify` passes, and a restore says it cannot."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from sessionstore import InvalidArgument, Session, SessionStore, ToolCall
from sessionstore.events import ContentRedacted, Message, MessageAppended, Native, ToolResultPart
from sessionstore.storage._migrate import alembic_config
from tests.builders import started, user
from tests.conftest import Backend

SECRET = "sk-proj-7Hq2LEAKEDkeyZZ9x0QwErTy"


def leaky_session(store: SessionStore) -> tuple[Session, str, str]:
    """A session whose tool printed the secret (once as the output, once inside a longer one,
    which truncation cuts): returns it and the two parts' ids."""
    s = store.create_session(model="m", context_window=200_000)
    s.append_user("show me the config")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "cat .env"})])
    short = s.append_tool_result("c1", f"OPENAI_API_KEY={SECRET}\n")
    s.append_assistant(tool_calls=[ToolCall(id="c2", name="bash", input={"cmd": "env"})])
    long_output = "".join(f"VAR_{n}=value {n}\n" for n in range(5_000)) + f"KEY={SECRET}\n"
    long = s.append_tool_result("c2", long_output)
    s.append_assistant("the key is set")
    return s, short.parts[0].id, long.parts[0].id


def files_of(url: str) -> list[Path]:
    path = Path(sa.make_url(url).database or "")
    return [p for p in path.parent.iterdir() if p.name.startswith(path.name)]


def found_in_files(url: str, secret: str) -> list[str]:
    return [p.name for p in files_of(url) if secret.encode() in p.read_bytes()]


def test_a_redacted_secret_is_gone_from_the_sqlite_files(sqlite_backend: Backend) -> None:
    url = sqlite_backend.url
    store = SessionStore(url)
    s, short, long = leaky_session(store)
    assert found_in_files(url, SECRET) != []  # the test can fail: it is there first

    event = s.redact([short, long], reason="leaked API key")
    store.close()

    assert event is not None and event.type == "ContentRedacted"
    assert found_in_files(url, SECRET) == []
    with SessionStore(url) as reopened:
        assert reopened.verify(s.id).ok
        text = json.dumps(reopened.session(s.id).context().to_openai())
        assert SECRET not in text and "[redacted: leaked API key]" in text


def test_the_live_context_a_replay_and_a_resume_agree_after_a_redaction(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s, short, _ = leaky_session(store)
        before = s.version
        s.redact([short], reason="leaked")
        live = s.context()
        resumed = store.session(s.id).context()
        from_scratch = store._log.fold_from_scratch(s.id, s.version)
        assert live == resumed
        assert [m.id for m in live.messages] == [m.id for m in resumed.messages]
        shown = next(p for m in live.messages for p in m.parts if p.id == short)
        assert shown.output == "[redacted: leaked]"  # type: ignore[union-attr]
        assert from_scratch.tokens == store._log.fold_at(s.id, s.version).tokens
        # history before the redaction reads the placeholder too: the bytes are gone
        past = s.context(at=before)
        assert SECRET not in json.dumps(past.to_openai()).split("KEY=")[0]
        assert store.verify(s.id).ok


def test_the_database_refuses_deleting_a_body_no_redaction_names(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        leaky_session(store)
    with pytest.raises(sa.exc.DatabaseError, match="redaction"):
        backend.execute("DELETE FROM blobs")
    with pytest.raises(sa.exc.DatabaseError, match="UPDATE refused"):
        backend.execute("UPDATE blobs SET digest = digest")


def test_a_redacted_output_cannot_be_restored(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s, _, long = leaky_session(store)
        s.redact([long], reason="leaked")
        with pytest.raises(InvalidArgument, match=r"was redacted .*cannot be restored"):
            s.restore([long])
        assert s.restore() is None


def test_an_export_shows_the_placeholder_and_imports_elsewhere(
    backend: Backend, tmp_path: Path
) -> None:
    with SessionStore(backend.url) as store:
        s, short, _ = leaky_session(store)
        s.redact([short], reason="leaked")
        lines = list(store.export_session(s.id))
        context = s.context()
    assert SECRET not in "\n".join(lines).split("KEY=")[0]
    assert any(json.loads(line).get("redacted") == "[redacted: leaked]" for line in lines)
    with SessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        imported = copy.import_session(lines)
        assert imported.context() == context
        assert copy.verify(s.id).ok


def test_purge_redacts_every_body_and_keeps_the_chain(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s, _, _ = leaky_session(store)
        other = store.create_session(model="m")
        other.append_user(f"OPENAI_API_KEY={SECRET}\n")  # the same bytes as a body of s
        event = store.purge(s.id, reason="user asked")
        assert event is not None
        assert store.purge(s.id) is None  # nothing left
        texts = [
            getattr(p, "text", None) or getattr(p, "output", None) or getattr(p, "arguments", "")
            for m in store.session(s.id).context().messages
            for p in m.parts
        ]
        assert set(texts) == {"[redacted: user asked]"}
        assert store.verify(s.id).ok
        # the other session holds those bytes too, and keeps them
        assert other.context().messages[0].parts[0].text == f"OPENAI_API_KEY={SECRET}\n"  # type: ignore[union-attr]
        assert store.verify(other.id).ok


def test_parts_with_the_same_text_are_redacted_together(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        first = s.append_user(SECRET)
        second = s.append_user(SECRET)
        event = s.redact([first.parts[0].id], reason="leaked")
        assert event is not None
        assert set(event.payload.part_ids) == {first.parts[0].id, second.parts[0].id}  # type: ignore[attr-defined]
        assert store.session(s.id).context() == s.context()


def test_a_fork_shows_its_parents_redaction(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s, short, _ = leaky_session(store)
        fork = store.fork(s.id)
        with pytest.raises(InvalidArgument, match="redacted in the parent"):
            fork.redact([short], reason="leaked")
        s.redact([short], reason="leaked")
        resumed = store.session(fork.id).context()
        shown = next(p for m in resumed.messages for p in m.parts if p.id == short)
        assert shown.output == "[redacted: leaked]"  # type: ignore[union-attr]
        assert store.verify(fork.id).ok


def test_a_hand_made_redaction_must_name_bodies_the_session_holds(store: SessionStore) -> None:
    from sessionstore.events import ContentRedacted, InvalidEvent

    s = store.create_session(model="m")
    s.append_user("hello")
    forged = ContentRedacted(part_ids=("p",), digests=("0" * 64,), reason="x")
    with pytest.raises(InvalidEvent, match="holds no body"):
        store.append(s.id, [forged], expected_version=None)


def test_verify_finds_a_body_whose_bytes_changed(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s, _, _ = leaky_session(store)
        assert store.verify(s.id).ok
    backend.drop_body_guards()
    changed = b"OPENAI_API_KEY=sk-something-else\n"
    backend.execute(
        "UPDATE blobs SET data = :data WHERE compression = 'none' AND size = :size",
        data=changed,
        size=len(f"OPENAI_API_KEY={SECRET}\n"),
    )
    with SessionStore(backend.url) as store:
        report = store.verify(s.id)
    assert not report.ok
    assert any("does not have its digest" in p for p in report.problems)


def test_snapshots_folded_from_redacted_content_are_dropped_and_verify_passes(
    backend: Backend,
) -> None:
    """A part appended without a token count is estimated from its text; once redacted, its
    text is the placeholder in every replay, so snapshots taken before (of the session and of
    its forks) no longer describe the log: they go, and verify holds."""
    from sessionstore.events import Message, MessageAppended, TextPart

    with SessionStore(backend.url, snapshot_every=2) as store:
        s = store.create_session(model="m")
        uncounted = MessageAppended(
            message=Message(role="user", parts=(TextPart(text=SECRET * 40),))
        )
        [event] = store.append(s.id, [uncounted], expected_version=1)
        s.refresh()
        for n in range(4):
            s.append_user(f"turn {n}")
        fork = store.fork(s.id, at=3)
        fork.append_user("on the fork")
        part_id = event.payload.message.parts[0].id  # type: ignore[attr-defined]
        s.redact([part_id], reason="leaked")
        assert store.session(s.id).context() == s.context()
        assert store.verify(s.id).ok and store.verify(fork.id).ok
        assert store._log.fold_from_scratch(s.id, s.version).tokens == s.tokens


def test_a_tool_results_native_is_a_body_redacted_with_its_output(
    sqlite_backend: Backend,
) -> None:
    """A framework's own form of a result (a Claude Code entry holds the output again in
    `toolUseResult`) is content: it leaves the files with the output."""
    url = sqlite_backend.url
    store = SessionStore(url)
    s = store.create_session(model="m", context_window=200_000)
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "env"})])
    entry = {"type": "user", "toolUseResult": {"stdout": f"KEY={SECRET}"}}
    result = s.append_tool_result("c1", "done", native=None)
    assert result.parts[0].native is None  # absent: stored and hashed as before
    s.append_assistant(tool_calls=[ToolCall(id="c2", name="bash", input={"cmd": "env"})])
    part = ToolResultPart(
        call_id="c2", name="bash", output="ok", native=Native(api="cc", value=entry)
    )
    appended = s.append_message(Message(role="tool", parts=(part,)))
    last = store.read(s.id)[-1]
    stored = last.payload
    assert isinstance(stored, MessageAppended)
    assert stored.message.parts[0].native == Native(api="cc", value=entry)
    assert found_in_files(url, SECRET) != []

    s.redact([appended.parts[0].id], reason="leaked")
    store.close()

    assert found_in_files(url, SECRET) == []
    with SessionStore(url) as reopened:
        assert reopened.verify(s.id).ok
        redacted = reopened.read(s.id, last.seq, last.seq)[0].payload
        assert isinstance(redacted, MessageAppended)
        assert redacted.message.parts[0].native == Native(
            api="sessionstore.redacted", value="[redacted: leaked]"
        )


def test_a_secret_in_a_message_envelope_is_redacted_with_its_parts(
    sqlite_backend: Backend,
) -> None:
    """An imported entry's fields (a tool's structured result, a `cwd`) are the message's
    envelope: a body like its parts' content, deleted when any part of it is redacted."""
    from sessionstore.events import Message, Native, TextPart

    url = sqlite_backend.url
    store = SessionStore(url)
    s = store.create_session(model="m")
    envelope = Native(api="claude-code", value={"toolUseResult": {"stdout": f"KEY={SECRET}"}})
    message = s.append_message(
        Message(role="user", parts=(TextPart(text="the config"),), native=envelope)
    )
    assert found_in_files(url, SECRET) != []
    s.redact([message.parts[0].id], reason="leaked")
    store.close()
    assert found_in_files(url, SECRET) == []
    with SessionStore(url) as reopened:
        assert reopened.verify(s.id).ok
        [stored] = reopened.session(s.id).context().messages
        assert stored.native == Native(api="sessionstore.redacted", value="[redacted: leaked]")
        assert SECRET not in "\n".join(reopened.export_session(s.id))


def test_parts_to_purge_names_what_purge_would_delete_and_appends_nothing(
    store: SessionStore, backend: Backend
) -> None:
    s = store.create_session(model="m")
    ids = [s.append_user(f"message {n}").parts[0].id for n in range(3)]
    before = backend.table_rows()
    assert store.parts_to_purge(s.id) == tuple(ids)
    assert backend.table_rows() == before
    s.redact([ids[1]], reason="one")
    assert store.parts_to_purge(s.id) == tuple(ids)  # as purge names them: each part again
    purged = store.purge(s.id, reason="all")
    assert purged is not None and purged.payload.part_ids == tuple(ids)  # type: ignore[attr-defined]
    assert store.parts_to_purge(s.id) == ()
    assert store.version(s.id) == 6  # start, 3 messages, redaction, purge: no previews


def test_a_text_redacted_then_sent_again_is_redacted_again(
    store: SessionStore, backend: Backend
) -> None:
    s = store.create_session(model="m")
    first = s.append_user(f"my key is {SECRET}")
    assert s.redact([first.parts[0].id], reason="leaked") is not None
    again = s.append_user(f"my key is {SECRET}")  # the user pastes it once more

    redaction = s.redact([again.parts[0].id], reason="leaked again")

    assert redaction is not None  # it was "all redacted already", and the text stayed
    assert isinstance(redaction.payload, ContentRedacted)
    assert redaction.payload.part_ids == (first.parts[0].id, again.parts[0].id)
    shown = [m.parts[0].text for m in store.session(s.id).context().messages]  # type: ignore[union-attr]
    assert shown == ["[redacted: leaked again]", "[redacted: leaked again]"]
    assert SECRET not in "\n".join(store.export_session(s.id))
    if backend.name == "sqlite":
        assert found_in_files(backend.url, SECRET) == []


def test_a_message_after_a_redaction_of_the_same_text_in_one_batch_keeps_it(
    store: SessionStore,
) -> None:
    text = f"OPENAI_API_KEY={SECRET}"
    first = store.append("s", [started(), user(text)], expected_version=0)[1]
    assert isinstance(first.payload, MessageAppended)
    part = first.payload.message.parts[0].id
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    redaction = ContentRedacted(part_ids=(part,), digests=(digest,), reason="leaked")

    store.append("s", [redaction, user(text)], expected_version=2)

    later = store.read("s", 4, 4)[0].payload
    assert isinstance(later, MessageAppended)
    assert later.message.parts[0].text == text  # type: ignore[union-attr]
    shown = [m.parts[0].text for m in store.session("s").context().messages]  # type: ignore[union-attr]
    assert shown == ["[redacted: leaked]", text]
    assert store.verify("s").ok


REDACT_THEN_DIE = """
import os, sys
from sessionstore import SessionStore
from sessionstore.storage._sqlite import SqliteRecorder

store = SessionStore(sys.argv[1])
SqliteRecorder.scrub = lambda self, wait=True: os._exit(3)  # dies right after the commit
session = store.session(sys.argv[2])
if sys.argv[3] == "purge":
    store.purge(session.id, reason="leaked")
else:
    session.redact([sys.argv[4]], reason="leaked")
"""


def redaction_killed_before_its_scrub(url: str, session_id: str, how: str, part: str) -> None:
    """Redact (or purge) in a process that dies between the commit and the WAL checkpoint."""
    died = subprocess.run(
        [sys.executable, "-c", REDACT_THEN_DIE, url, session_id, how, part],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == 3, died.stderr


@pytest.mark.parametrize("how", ["redact", "purge"])
def test_a_redaction_retried_after_a_crash_scrubs_the_wal(
    sqlite_backend: Backend, how: str
) -> None:
    url = sqlite_backend.url
    holder = sqlite3.connect(str(sa.make_url(url).database))  # another process keeps it open
    try:
        with SessionStore(url) as store:
            s = store.create_session(model="m")
            part = s.append_user(f"OPENAI_API_KEY={SECRET}").parts[0].id
            holder.execute("SELECT count(*) FROM events").fetchall()
            redaction_killed_before_its_scrub(url, s.id, how, part)
            assert found_in_files(url, SECRET) != []  # the test can fail: the bytes are there

            retried = store.purge(s.id) if how == "purge" else s.redact([part], reason="leaked")

            assert retried is None  # nothing was left to delete, but the files were scrubbed
            assert found_in_files(url, SECRET) == []
            assert store.verify(s.id).ok
    finally:
        holder.close()


def test_opening_the_store_scrubs_what_a_crashed_redaction_left(sqlite_backend: Backend) -> None:
    url = sqlite_backend.url
    holder = sqlite3.connect(str(sa.make_url(url).database))
    try:
        with SessionStore(url) as store:
            s = store.create_session(model="m")
            part = s.append_user(f"OPENAI_API_KEY={SECRET}").parts[0].id
            holder.execute("SELECT count(*) FROM events").fetchall()
        redaction_killed_before_its_scrub(url, s.id, "redact", part)
        assert found_in_files(url, SECRET) != []

        with SessionStore(url) as reopened:
            assert found_in_files(url, SECRET) == []
            assert reopened.verify(s.id).ok
    finally:
        holder.close()


def at_0007_with_a_body_no_session_references(backend: Backend) -> tuple[str, str, str]:
    """A database taken back to revision 0007 (one `blobs` row per body, a `blob_refs` row per
    session holding it), where two sessions hold one body, one of them redacted the secret,
    and the secret's body was stored again with no reference: what two sessions redacting it
    at the same moment could leave before 0008. Returns the two sessions and the secret's
    digest."""
    text = f"OPENAI_API_KEY={SECRET}"
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        s.append_user("held by both")
        s.redact([s.append_user(text).parts[0].id], reason="leaked")
        other = store.create_session(model="m")
        other.append_user("held by both")
    command.downgrade(alembic_config(backend.url), "0007")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    backend.execute(
        "INSERT INTO blobs (digest, size, compression, data) VALUES (:d, :n, 'none', :b)",
        d=digest,
        n=len(text),
        b=text.encode("utf-8"),
    )
    return s.id, other.id, digest


def test_the_upgrade_to_bodies_per_session_copies_what_each_session_holds(
    backend: Backend,
) -> None:
    """Revision 0008 gives each session its own rows of the bodies it referenced; a body no
    session referenced is not copied, and its bytes are gone from a SQLite file."""
    redacted, other, digest = at_0007_with_a_body_no_session_references(backend)
    shared = hashlib.sha256(b"held by both").hexdigest()
    with SessionStore(backend.url) as store:  # opening upgrades
        engine = backend.raw_engine()
        with engine.connect() as conn:
            rows = {
                tuple(row) for row in conn.execute(sa.text("SELECT session_id, digest FROM blobs"))
            }
        engine.dispose()
        assert rows == {(redacted, shared), (other, shared)}
        texts = [
            [m.parts[0].text for m in store.session(sid).context().messages]  # type: ignore[union-attr]
            for sid in (redacted, other)
        ]
        assert texts == [["held by both", "[redacted: leaked]"], ["held by both"]]
        assert store.verify(redacted).ok and store.verify(other).ok
    if backend.name == "sqlite":
        assert found_in_files(backend.url, SECRET) == []
    assert digest not in {row[1] for row in rows}
