"""Redaction reaches every copy of a text and every text derived from one: an undo's restored
copies, the compaction summaries written after it, a native part's stand-in, a file's URL, the
title and the state's values. After `purge` no secret is left in the database (its files on
SQLite, every row of every table on PostgreSQL), in an export, or in what any render sends."""

from __future__ import annotations

import base64
import json
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import InvalidArgument, Session, SessionStore, ToolCall
from sessionstore.events import (
    GENESIS_HASH,
    ContentRedacted,
    FilePart,
    Message,
    Native,
    NativePart,
    NewEvent,
    OutputsPruned,
    ReasoningPart,
    TextPart,
    canonical_json,
)
from sessionstore.log._append import Encoded, chain
from sessionstore.log._transfer import insert_links
from sessionstore.projections import LiveMessage
from tests.conftest import Backend
from tests.providers.request_types import check_anthropic, check_chat, check_responses

JsonObject = dict[str, Any]

PAD = " ".join(f"word{n}" for n in range(400))
"""Enough text that a compaction saves what it must."""


def secret(kind: str) -> str:
    return f"sk-{kind}-LEAKED-7Hq2ZZ9x"


def database_holdings(backend: Backend) -> bytes:
    """Everything the database holds, as bytes to search: on SQLite its files (the database
    and its WAL), on PostgreSQL every row of every table of the test's schema, bodies
    decompressed."""
    if backend.name == "sqlite":
        path = Path(sa.make_url(backend.url).database or "")
        return b"".join(
            p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name)
        )
    engine = backend.raw_engine()
    found: list[bytes] = []
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                sa.text(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            ).scalars()
            for table in list(tables):
                for row in conn.execute(sa.text(f'SELECT t::text, t.* FROM "{table}" t')):
                    found.extend(_readable(value) for value in row)
    finally:
        engine.dispose()
    return b"\n".join(found)


def _readable(value: object) -> bytes:
    if isinstance(value, bytes | memoryview):
        raw = bytes(value)
        try:
            return raw + zlib.decompress(raw)
        except zlib.error:
            return raw
    return str(value).encode("utf-8")


def found(secrets: Sequence[str], *places: bytes | str) -> list[str]:
    text = b"\n".join(p.encode("utf-8") if isinstance(p, str) else p for p in places)
    return [s for s in secrets if s.encode("utf-8") in text]


def sent(session: Session) -> str:
    """What each render of the live context sends the model."""
    context = session.context()
    return json.dumps([context.to_openai(), context.to_anthropic(), context.to_responses()])


@contextmanager
def another_connection(backend: Backend) -> Iterator[None]:
    """A second connection open on a SQLite file meanwhile (idle, as another process's
    store would be): what a redaction deleted must still leave the WAL."""
    if backend.name != "sqlite":
        yield
        return
    connection = sqlite3.connect(sa.make_url(backend.url).database or "")
    try:
        connection.execute("SELECT count(*) FROM events").fetchone()
        yield
    finally:
        connection.close()


# each place a secret could hide, one test each


def compacted_and_undone(s: Session, text: str) -> tuple[Message, int]:
    """A user turn saying `text`, compacted away, then brought back by an undo."""
    request = s.append_user(f"{text} {PAD}")
    s.append_assistant(f"done. {PAD}")
    s.append_user("next")
    s.append_assistant("ok")
    compaction = s.compact(keep_turns=1, keep_tokens=0)
    restored = s.undo(compaction.seq)
    assert restored is not None and restored.type == "MessagesRestored"
    return request, compaction.seq


def test_an_undos_restored_copies_are_redacted_with_their_originals(backend: Backend) -> None:
    leak = secret("restored")
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m", context_window=200_000)
        request, _ = compacted_and_undone(s, leak)
        assert found([leak], database_holdings(backend)) == [leak]

        event = s.redact([request.parts[0].id], reason="leaked")

        assert event is not None
        resumed = store.session(s.id)
        assert resumed.context() == s.context()
        assert found([leak], sent(s), sent(resumed), *store.export_session(s.id)) == []
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


@pytest.mark.parametrize("kept", [False, True], ids=["replaced", "kept"])
def test_redacting_a_request_redacts_every_summary_that_could_quote_it(
    backend: Backend, kept: bool
) -> None:
    """The extractive summary quotes the user's requests word for word, those of the kept
    turns too (it reads the artifact trail of the whole log); a later summary folds the
    earlier one in. Both are redacted with the request, in the same event."""
    leak = secret("summary")
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m", context_window=200_000)
        s.append_user(f"first: {PAD}")
        s.append_assistant(f"ok. {PAD}")
        request = s.append_user(f"use {leak} to deploy")
        s.append_assistant(f"deployed. {PAD}")
        s.append_user("more")
        s.append_assistant("ok")
        first = s.compact(keep_turns=2 if kept else 1, keep_tokens=0)  # kept: its turn stays
        replaced = first.payload.replaced_message_ids  # type: ignore[attr-defined]
        assert (request.id in replaced) is not kept
        s.append_user(f"then: {PAD}")
        s.append_assistant(f"fine. {PAD}")
        s.append_user("last")
        s.append_assistant("ok")
        second = s.compact(keep_turns=1, keep_tokens=0)
        summaries = [e.payload.summary.parts[0].id for e in (first, second)]  # type: ignore[attr-defined]
        assert found([leak], sent(s)) == [leak]

        event = s.redact([request.parts[0].id], reason="leaked")

        assert event is not None and isinstance(event.payload, ContentRedacted)
        assert set(summaries) <= set(event.payload.part_ids)
        assert found([leak], sent(s), sent(store.session(s.id))) == []
        assert "[redacted: leaked]" in sent(s)
        assert store.session(s.id).context() == s.context()
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


def test_a_summary_written_before_the_part_is_left_alone(store: SessionStore) -> None:
    """Only what could have read the part is derived from it: a summary older than the part,
    and a strategy's marker (a count and a name), keep their text."""
    s = store.create_session(model="m", context_window=200_000)
    s.append_user(f"first: {PAD}")
    s.append_assistant(f"ok. {PAD}")
    s.append_user("next")
    s.append_assistant("ok")
    older = s.compact(keep_turns=1, keep_tokens=0)
    later = s.append_user(f"use {secret('late')}")
    event = s.redact([later.parts[0].id], reason="leaked")
    assert event is not None and isinstance(event.payload, ContentRedacted)
    assert event.payload.part_ids == (later.parts[0].id,)
    summary = older.payload.summary.parts[0]  # type: ignore[attr-defined]
    live = next(p for m in s.context().messages for p in m.parts if p.id == summary.id)
    assert live == summary


def test_a_native_parts_stand_in_is_redacted_with_it(backend: Backend) -> None:
    """A server tool's block is sent back as it came to its own API, and as its stand-in text
    (`[web_search {...}]`) to the others: both hold the query."""
    leak, envelope_leak = secret("standin"), secret("native")
    block = {"type": "server_tool_use", "id": "srv_1", "name": "web_search"}
    part = NativePart(
        native=Native(api="anthropic.messages", value={**block, "input": {"q": envelope_leak}}),
        text=f'[web_search {{"query": "{leak}"}}]',
    )
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        s.append_user("search")
        s.append_message(Message(role="assistant", parts=(part,)))
        assert found([leak], sent(s)) == [leak]

        s.redact([part.id], reason="leaked")

        assert found([leak, envelope_leak], sent(s), *store.export_session(s.id)) == []
        shown = store.session(s.id).context().messages[-1].parts[0]
        assert isinstance(shown, NativePart) and shown.text == "[redacted: leaked]"
        assert store.verify(s.id).ok
    assert found([leak, envelope_leak], database_holdings(backend)) == []


def test_a_file_parts_url_and_name_are_redacted(backend: Backend) -> None:
    leak = secret("url")
    image = FilePart(
        media_type="image/png", url=f"https://files.example/{leak}.png", filename=f"{leak}.png"
    )
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        s.append_message(Message(role="user", parts=(TextPart(text="look"), image)))

        event = s.redact([image.id], reason="leaked")

        assert event is not None
        shown = store.session(s.id).context().messages[0].parts[1]
        assert isinstance(shown, FilePart)
        assert (shown.url, shown.filename) == ("[redacted: leaked]", "[redacted: leaked]")
        assert found([leak], *store.export_session(s.id)) == []
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


FILE_BLOCKS = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})


def file_blocks(value: object) -> list[object]:
    """Every block of a render that sends a file (as opposed to text)."""
    if isinstance(value, list):
        return [b for item in value for b in file_blocks(item)]
    if not isinstance(value, dict):
        return []
    own = [value] if value.get("type") in FILE_BLOCKS else []
    return own + [b for item in value.values() for b in file_blocks(item)]


def test_a_redacted_file_is_mentioned_as_text_in_every_render(store: SessionStore) -> None:
    """No API takes a placeholder as an image's URL or data: a redacted file, in a user turn
    or in a tool's result, is sent as its mention, and the request stays valid."""
    image = FilePart(media_type="image/png", url="https://files.example/a.png")
    shot = FilePart(media_type="image/png", data=base64.b64encode(b"png").decode())
    s = store.create_session(model="m")
    s.append_message(Message(role="user", parts=(TextPart(text="look"), image)))
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="screenshot", input={})])
    result = s.append_tool_result("c1", [TextPart(text="here"), shot])
    context = s.context()
    renders = [context.to_anthropic()["messages"], context.to_openai(), context.to_responses()]
    assert [len(file_blocks(r)) for r in renders] == [2, 2, 2]

    s.redact([image.id, result.parts[0].id], reason="leaked")

    context = s.context()
    renders = [context.to_anthropic()["messages"], context.to_openai(), context.to_responses()]
    assert [file_blocks(r) for r in renders] == [[], [], []]
    check_anthropic(context.to_anthropic())
    check_chat(context.to_openai())
    check_responses(context.to_responses())
    for render in map(json.dumps, renders):
        assert "[file [redacted: leaked] (image/png)]" in render  # the URL's
        assert "[file attached (image/png)]" in render  # the data's


def claude_code_transcript(title: str, request: str) -> list[str]:
    entry = {
        "type": "user",
        "uuid": "7d0c1a52-3f6e-4b8a-9c21-5e4f8a2b0001",
        "parentUuid": None,
        "sessionId": "3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10",
        "timestamp": "2025-08-27T14:00:00.000Z",
        "message": {"role": "user", "content": request},
    }
    summary = {"type": "summary", "summary": title, "leafUuid": entry["uuid"]}
    return [json.dumps(summary), json.dumps(entry)]


def test_purge_removes_an_imported_title_from_the_event_and_the_sessions_row(
    backend: Backend,
) -> None:
    leak = secret("title")
    with SessionStore(backend.url) as store:
        s = store.import_session(claude_code_transcript(leak, "fix it"), format="claude-code")
        assert store.session_info(s.id).title == leak

        store.purge(s.id, reason="user asked")

        assert store.session_info(s.id).title == "[redacted: user asked]"
        s.refresh()
        assert s.header.title == "[redacted: user asked]"
        assert store.session(s.id).header.title == "[redacted: user asked]"
        assert [i.title for i in store.sessions()] == ["[redacted: user asked]"]
        assert found([leak], *store.export_session(s.id)) == []
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


def test_redacting_the_line_a_title_was_taken_from_redacts_the_title(backend: Backend) -> None:
    """A Claude Code transcript's title is its `summary` line, which the import keeps as a
    record: redacting that record's part takes the title with it."""
    leak = secret("summary-line")
    with SessionStore(backend.url) as store:
        s = store.import_session(claude_code_transcript(leak, "fix it"), format="claude-code")
        [line] = [
            e.payload.record.parts[0].id  # type: ignore[attr-defined]
            for e in store.read(s.id)
            if e.type == "RecordAppended" and e.payload.record.kind == "summary"  # type: ignore[attr-defined]
        ]

        s.redact([line], reason="leaked")

        assert store.session_info(s.id).title == "[redacted: leaked]"
        assert s.header.title == "[redacted: leaked]"
        assert store.session(s.id).header.title == "[redacted: leaked]"
        assert s.context().messages[0].parts[0].text == "fix it"  # type: ignore[union-attr]
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


def test_a_title_no_redacted_text_quotes_and_the_state_stay(store: SessionStore) -> None:
    s = store.create_session(model="m", title="deploy notes")
    s.update_state({"stage": "deploy"})
    request = s.append_user(f"deploy: the key is {secret('other')}")
    s.redact([request.parts[0].id], reason="leaked")
    assert (s.header.title, store.session_info(s.id).title) == ("deploy notes", "deploy notes")
    assert s.state() == store.session(s.id).state() == {"stage": "deploy"}


def test_a_session_with_only_a_title_is_purged(store: SessionStore) -> None:
    s = store.create_session(model="m", title=secret("bare"))
    event = store.purge(s.id)
    assert event is not None and isinstance(event.payload, ContentRedacted)
    assert event.payload.part_ids == ()
    assert store.session_info(s.id).title == "[redacted: purged]"
    assert store.purge(s.id) is None


def test_purge_removes_the_states_values(backend: Backend) -> None:
    leak = secret("state")
    with SessionStore(backend.url) as store:
        s = store.create_session(model="m")
        s.update_state({"draft": {"note": leak}, "count": 2})
        before = s.version

        store.purge(s.id)

        expected = {"draft": "[redacted: purged]", "count": "[redacted: purged]"}
        assert s.state() == expected
        assert store.session(s.id).state() == expected
        assert store.session(s.id).state(at=before) == expected
        assert store.verify(s.id).ok
    assert found([leak], database_holdings(backend)) == []


def test_an_event_written_before_a_field_was_a_body_stays_readable(store: SessionStore) -> None:
    """Events stored with their title, URL, stand-in, restored messages or state inline (as
    every earlier version wrote them) read as they were, and a redaction of such a part says
    it cannot delete it."""
    url_part = {"type": "file", "id": "f1", "media_type": "image/png", "url": "https://x/y.png"}
    stand_in = {"type": "native", "id": "n1", "native": {"api": "a", "value": 1}, "text": "[s]"}
    restored = {"id": "m2", "role": "user", "parts": [{"type": "text", "id": "t2", "text": "back"}]}
    rows: list[tuple[str, JsonObject]] = [
        ("SessionStarted", {"title": "inline title", "model": "m"}),
        ("MessageAppended", {"message": {"id": "m1", "role": "user", "parts": [url_part]}}),
        ("MessagesRestored", {"undone_seq": 2, "messages": [restored]}),
        ("MessageAppended", {"message": {"id": "m3", "role": "user", "parts": [stand_in]}}),
        ("StateChanged", {"values": {"k": "v"}, "removed": []}),
    ]
    write_inline(store, "old", rows)
    s = store.session("old")
    assert (s.header.title, s.state()) == ("inline title", {"k": "v"})
    [first, back, native] = [m.parts[0] for m in s.context().messages]
    assert first == FilePart(id="f1", media_type="image/png", url="https://x/y.png")
    assert back == TextPart(id="t2", text="back")
    assert native == NativePart(id="n1", native=Native(api="a", value=1), text="[s]")
    assert store.verify("old").ok
    with pytest.raises(InvalidArgument, match="inline"):
        s.redact(["f1"], reason="x")


def write_inline(store: SessionStore, session_id: str, rows: list[tuple[str, JsonObject]]) -> None:
    """Events stored exactly as given, content inline (no bodies split off), through the
    import write path, as an earlier version stored them."""
    batch = [
        Encoded(NewEvent({"type": kind, **data}), data, canonical_json(data)) for kind, data in rows
    ]
    times = [datetime(2025, 1, 1, tzinfo=UTC)] * len(batch)
    insert_links(store._recorder, session_id, chain(session_id, batch, 0, GENESIS_HASH, times))


# everything at once


def planted_session(store: SessionStore, tmp_path: Path) -> tuple[Session, list[str]]:
    """A session with a secret in every kind of part and field; returns it and the secrets."""
    s = store.import_session(
        claude_code_transcript(secret("title"), f"imported {secret('imported')}"),
        format="claude-code",
        context_window=200_000,
    )
    s.update_state({"draft": secret("state")})
    s.append_record("note", Native(api="app", value={"text": secret("record")}))
    envelope = Native(api="openai.chat", value={"refusal": secret("envelope")})
    data = base64.b64encode(secret("data").encode()).decode()
    s.append_message(
        Message(
            role="user",
            parts=(
                TextPart(text=f"{secret('user')} {PAD}"),
                FilePart(media_type="image/png", url=f"https://f.example/{secret('url')}"),
                FilePart(media_type="image/png", data=data, filename=f"{secret('filename')}"),
            ),
            native=envelope,
        )
    )
    stand_in = NativePart(
        native=Native(api="anthropic.messages", value={"type": "x", "q": secret("native")}),
        text=f"[web_search {secret('standin')}]",
    )
    s.append_message(
        Message(
            role="assistant",
            parts=(
                ReasoningPart(text=secret("reasoning")),
                TextPart(text=f"{secret('assistant')} {PAD}"),
                stand_in,
                ToolCall(id="c1", name="bash", input={"cmd": secret("arguments")}).to_part(),
                ToolCall(id="c2", name="bash", input={"cmd": "env"}).to_part(),
            ),
        )
    )
    pruned = s.append_tool_result("c1", f"{secret('pruned')}\n")
    long_output = f"{secret('shown')}\n" + "x\n" * 3_000 + f"{secret('truncated')}\n"
    s.append_tool_result("c2", long_output)
    s.append_events(
        [OutputsPruned(part_ids=(pruned.parts[0].id,), placeholder="[pruned]", tokens_freed=9)]
    )
    s.append_user("next")
    s.append_assistant("ok")
    extractive = s.compact(keep_turns=1, keep_tokens=0)
    s.undo(extractive.seq)  # the originals come back as copies

    def summarizer(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        return f"the model's own summary: {secret('summarizer')}"

    s.compact(summarizer, keep_turns=1, keep_tokens=0)
    kinds = [
        "title", "imported", "state", "record", "envelope", "user", "url", "filename",
        "native", "standin", "reasoning", "assistant", "arguments", "pruned", "shown",
        "truncated", "summarizer",
    ]  # fmt: skip
    return s, [*map(secret, kinds), data]


def test_after_purge_no_secret_is_left_anywhere(backend: Backend, tmp_path: Path) -> None:
    with SessionStore(backend.url) as store:
        s, secrets = planted_session(store, tmp_path)
        before = found(secrets, database_holdings(backend), *store.export_session(s.id))
        assert before == secrets  # each is there first: the test can fail

        with another_connection(backend):
            store.purge(s.id, reason="user asked")
            s.refresh()
            assert found(secrets, database_holdings(backend)) == []

        export = tmp_path / "export.jsonl"
        export.write_text("\n".join(store.export_session(s.id)), encoding="utf-8")
        resumed = store.session(s.id)
        assert found(secrets, sent(s), sent(resumed), export.read_bytes()) == []
        assert found(secrets, json.dumps([str(e.payload) for e in store.read(s.id)])) == []
        assert resumed.context() == s.context()
        assert store.verify(s.id).ok
        assert found(secrets, database_holdings(backend)) == []
