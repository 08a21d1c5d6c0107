"""Records: a framework's entries that are not messages (a Claude Code `file-history-snapshot`
line, an ADK event that only changes state) are kept verbatim in the log, in order with the
messages, on every backend: stored as bodies, exported, imported, verified and redactable, and
never in the context."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessionstore import AsyncSessionStore, InvalidArgument, PayloadTooLarge, SessionStore
from sessionstore.events import Native, RecordAppended
from tests.conftest import Backend

SECRET = "ghp_0123456789abcdefLEAKEDtoken"
SNAPSHOT = {
    "type": "file-history-snapshot",
    "messageId": "m1",
    "snapshot": {"trackedFileBackups": {"/repo/a.py": {"backupFileName": None, "version": 1}}},
    "isSnapshotUpdate": False,
    "token": SECRET,
    "nested": [1, 2.5, True, None, "ünïcode"],
}


def test_a_record_is_in_the_log_in_order_and_not_in_the_context(store: SessionStore) -> None:
    s = store.create_session(model="m", context_window=100_000)
    s.append_user("hi")
    record = s.append_record("file-history-snapshot", Native(api="claude-code", value=SNAPSHOT))
    s.append_user("again")
    assert [m.role for m in s.context().messages] == ["user", "user"]
    events = store.read(s.id)
    assert [e.type for e in events] == [
        "SessionStarted",
        "MessageAppended",
        "RecordAppended",
        "MessageAppended",
    ]
    stored = events[2].payload
    assert isinstance(stored, RecordAppended) and stored.record == record
    assert stored.record.parts[0].native.value == SNAPSHOT  # verbatim, deep-equal
    assert "kept a file-history-snapshot record" in s.timeline()[2].summary
    assert store.session(s.id).context() == s.context()  # a resume agrees


def test_bad_records_write_nothing(store: SessionStore) -> None:
    s = store.create_session(model="m", context_window=100_000)
    version = s.version
    with pytest.raises(InvalidArgument):
        s.append_record("x")  # no parts
    with pytest.raises(InvalidArgument):
        s.append_record("", Native(api="a", value=1))
    with pytest.raises(InvalidArgument):
        s.append_record("x", {"api": "a", "value": 1})  # type: ignore[arg-type]
    assert store.version(s.id) == version


def test_an_oversized_record_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}", max_payload_bytes=10_000) as store:
        s = store.create_session(model="m")
        with pytest.raises(PayloadTooLarge):
            s.append_record("big", Native(api="a", value={"text": "x" * 20_000}))
        assert store.version(s.id) == 1


def test_a_record_exports_imports_and_verifies(backend: Backend, tmp_path: Path) -> None:
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        s.append_record("summary", Native(api="claude-code", value={"type": "summary", "x": 1}))
        lines = list(store.export_session(s.id))
        original = store.read(s.id)
        assert store.verify(s.id).ok
    with SessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        imported = copy.import_session(lines)
        assert [e.payload for e in copy.read(imported.id)] == [e.payload for e in original]
        assert copy.verify(imported.id).ok


def test_a_secret_in_a_record_can_be_redacted(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        record = s.append_record("snapshot", Native(api="claude-code", value=SNAPSHOT))
        assert SECRET in json.dumps(store.read(s.id)[1].payload.model_dump())
        event = s.redact([record.parts[0].id], reason="leaked token")
        assert event is not None
        assert SECRET not in "\n".join(store.export_session(s.id))
        assert store.verify(s.id).ok


def test_the_async_face_appends_records(tmp_path: Path) -> None:
    async def run() -> list[str]:
        async with AsyncSessionStore(f"sqlite:///{tmp_path / 'a.db'}") as store:
            s = await store.create_session(model="m")
            await s.append_record("state", Native(api="adk", value={"actions": {}}))
            return [e.type for e in await store.read(s.id)]

    assert asyncio.run(run()) == ["SessionStarted", "RecordAppended"]
