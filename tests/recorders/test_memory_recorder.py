"""The recorder contract on memory databases (`memory://`, private, and `memory://NAME`,
shared in the process), and what is their own: which URLs name them, and who shares one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseUnavailable, SessionStore
from sessionstore.storage import open_recorder
from sessionstore.storage._memory import MemoryRecorder, discard
from sessionstore.storage._migrate import ensure_schema
from sessionstore.storage._recorder import Recorder
from tests.recorders.recorder_contract import NEW, RecorderContract, rows


class MemoryContract(RecorderContract):
    scheme = "memory"


class TestPrivateMemoryRecorder(MemoryContract):
    @pytest.fixture
    def recorder(self) -> Iterator[Recorder]:
        recorder = open_recorder("memory://")
        ensure_schema(recorder, migrate=True)
        yield recorder
        recorder.close()


class TestNamedMemoryRecorder(MemoryContract):
    @pytest.fixture
    def recorder(self) -> Iterator[Recorder]:
        name = f"contract-{uuid.uuid4().hex}"
        recorder = open_recorder(f"memory://{name}")
        ensure_schema(recorder, migrate=True)
        yield recorder
        recorder.close()
        discard(name)


def test_a_named_database_is_shared_by_the_process_and_a_private_one_by_nobody() -> None:
    name = f"shared-{uuid.uuid4().hex}"
    try:
        first, second = open_recorder(f"memory://{name}"), open_recorder(f"memory://{name}")
        first.write("s1", None, rows("s1", 1, 2), NEW)
        first.close()
        assert [e.seq for e in second.events("s1", 1, 9)] == [1, 2]
        assert open_recorder(f"memory://{name}").session_ids() == ["s1"]
        assert open_recorder("memory://other-" + name).session_ids() == []
        private = open_recorder("memory://")
        private.write("s1", None, rows("s1", 1, 1), NEW)
        assert open_recorder("memory://").session_ids() == []
        assert (first.shown_url, private.shown_url) == (f"memory://{name}", "memory://")
    finally:
        discard(name)
    assert open_recorder(f"memory://{name}").session_ids() == []


@pytest.mark.parametrize(
    "url",
    ["memory:///path", "memory://user:secret@name", "memory://name:5", "memory://name?x=1"],
)
def test_a_memory_url_names_a_database_and_nothing_else(url: str) -> None:
    with pytest.raises(DatabaseUnavailable, match="memory database's URL is memory://") as raised:
        MemoryRecorder(sa.make_url(url))
    assert "secret" not in str(raised.value)


def test_a_memory_url_takes_no_partitions() -> None:
    with pytest.raises(
        DatabaseUnavailable,
        match=r"^memory://name\?partitions=4: `partitions` is an option of PostgreSQL URLs "
        r"\(tables hash-partitioned by session\); a memory database has none$",
    ):
        open_recorder("memory://name?partitions=4")


def test_a_store_on_a_named_database_finds_what_another_store_wrote() -> None:
    name = f"store-{uuid.uuid4().hex}"
    try:
        with SessionStore(f"memory://{name}") as writer:
            session = writer.create_session(model="m", title="kept")
            session.append_user("hello")
        with SessionStore(f"memory://{name}", migrate=False, create=False) as reader:
            assert repr(reader) == f"SessionStore('memory://{name}')"
            assert [info.title for info in reader.sessions()] == ["kept"]
            assert reader.verify(session.id).ok
    finally:
        discard(name)
