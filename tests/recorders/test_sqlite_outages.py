"""A SQLite file that stops being a database while a store has it open (replaced, say, by a
restore gone wrong): every public call that opens a new connection raises
`DatabaseUnavailable`, never the driver's own `sqlite3.DatabaseError`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import DatabaseUnavailable, Session, SessionStore
from sessionstore.storage._sqlite import SqliteRecorder

CALLS: dict[str, Callable[[SessionStore, Session], object]] = {
    "append": lambda store, s: s.append_user("one more"),
    "append to a new session": lambda store, s: store.create_session(model="m"),
    "read": lambda store, s: store.read(s.id),
    "resume": lambda store, s: store.session(s.id),
    "sessions": lambda store, s: store.sessions(),
    "redact": lambda store, s: s.redact(["any"], reason="a secret"),
    "purge": lambda store, s: store.purge(s.id, reason="gone"),
    "verify": lambda store, s: store.verify(s.id),
    "export": lambda store, s: list(store.export_session(s.id)),
    "stats": lambda store, s: store.stats(),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_file_that_is_no_longer_a_database_is_unavailable(tmp_path: Path, call: str) -> None:
    path = tmp_path / "store.db"
    store = SessionStore(f"sqlite:///{path}")
    s = store.create_session(model="m")
    s.append_user("hello")
    recorder = store._recorder
    assert isinstance(recorder, SqliteRecorder)
    recorder.engine.dispose()  # the next call connects anew
    for file in tmp_path.iterdir():
        file.unlink()
    path.write_bytes(b"not a database at all\n" * 100)

    with pytest.raises(DatabaseUnavailable) as raised:
        CALLS[call](store, s)

    assert str(raised.value) == f"sqlite:///{path}: file is not a database"
    assert path.read_bytes() == b"not a database at all\n" * 100
    store.close()
