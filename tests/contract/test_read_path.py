"""The read path builds no models: a resume folds each appended message as its stored JSON and
the renders read it as such; models are built only when a caller asks for them
(`Context.messages`). A stored message edited by hand so that it no longer fits its model is
refused with `InvalidEvent`, never a crash of the fold or of a render, whether the resume
starts from a snapshot or from the first event."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from sessionstore import SessionStore, ToolCall
from sessionstore.events import (
    InvalidEvent,
    Message,
    MessageAppended,
    OutputsPruned,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.projections import LiveMessage, LiveToolResult
from sessionstore.projections._render import APIS
from tests.conftest import Backend

MODELS = (
    Message,
    MessageAppended,
    LiveMessage,
    LiveToolResult,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


def coding_session(store: SessionStore) -> str:
    """A system prompt, a task, two tool calls (the first output truncated at append, then
    pruned), a reply with usage, and a last user turn."""
    s = store.create_session(model="gpt-4o", title="read path")
    s.append_system("You are a careful coding agent.")
    s.append_user("Make the tests pass.")
    s.append_assistant("Reading.", tool_calls=[ToolCall(id="c0", name="read", input={"p": "a"})])
    s.append_tool_result("c0", output="x = 1\n" * 12_000)  # 72 KB: truncated at append
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="grep", input={"q": "x"})])
    s.append_tool_result("c1", output="a.py:1: x = 1")
    first = next(
        part.id
        for message in s.context().messages
        for part in message.parts
        if isinstance(part, LiveToolResult) and part.call_id == "c0"
    )
    s.append_events([OutputsPruned(part_ids=(first,), placeholder="[pruned]", tokens_freed=1)])
    s.append_user("And now?")
    return s.id


def renders(store: SessionStore, session_id: str) -> dict[str, Any]:
    context = store.session(session_id).context()
    return {
        "openai": context.to_openai(),
        "anthropic": context.to_anthropic(),
        "responses": context.to_responses(),
        "tokens": [context.tokens_for(api) for api in APIS],
    }


def refuse_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way a message model is built raises from here on."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a message model was built to render a request")

    for model in MODELS:
        for name in ("model_validate", "model_validate_json"):
            monkeypatch.setattr(model, name, classmethod(refuse))
        monkeypatch.setattr(model, "__init__", refuse)


@pytest.mark.parametrize("snapshot_every", [2, 100_000], ids=["from-snapshots", "from-event-1"])
def test_a_resume_renders_every_api_without_building_a_model(
    backend: Backend, snapshot_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SessionStore(backend.url, snapshot_every=snapshot_every) as store:
        session_id = coding_session(store)
    with SessionStore(backend.url) as store:
        expected = renders(store, session_id)
    assert expected["openai"][3]["content"] == "[pruned]"
    assert expected["openai"][5]["content"] == "a.py:1: x = 1"

    refuse_models(monkeypatch)
    with SessionStore(backend.url) as store:
        assert renders(store, session_id) == expected
        context = store.session(session_id).context()
        monkeypatch.undo()
        # the models are there when asked for, and say what the renders sent
        assert [m.role for m in context.messages] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user",
        ]
        pruned = context.messages[3].parts[0]
        assert isinstance(pruned, LiveToolResult) and pruned.status == "pruned"


def stored_message(backend: Backend, session_id: str, seq: int, message: dict[str, Any]) -> None:
    backend.drop_immutability_triggers()
    payload = json.dumps({"message": message})
    cast = "CAST(:p AS jsonb)" if backend.name == "postgresql" else ":p"
    backend.execute(
        f"UPDATE events SET payload = {cast} WHERE session_id = :s AND seq = :seq",
        p=payload,
        s=session_id,
        seq=seq,
    )


UNFIT: dict[str, dict[str, Any]] = {
    "text not a string": {"parts": [{"type": "text", "id": "p", "text": 5, "tokens": 1}]},
    "parts not a list": {"parts": "hello"},
    "no parts": {"parts": []},
    "unknown part type": {"parts": [{"type": "sound", "id": "p", "tokens": 1}]},
    "tokens not a count": {"parts": [{"type": "text", "id": "p", "text": "hi", "tokens": "many"}]},
    "usage not counts": {
        "parts": [{"type": "text", "id": "p", "text": "hi"}],
        "usage": {"input": "lots"},
    },
    "truncation without its view": {
        "parts": [{"type": "text", "id": "p", "text": "hi", "truncation": {"shown": None}}]
    },
    "native without its api": {
        "parts": [{"type": "text", "id": "p", "text": "hi", "native": {"value": 1}}]
    },
}


@pytest.mark.parametrize("snapshot_every", [2, 100_000], ids=["from-snapshots", "from-event-1"])
@pytest.mark.parametrize("unfit", list(UNFIT))
def test_a_stored_message_that_does_not_fit_is_refused_by_name(
    backend: Backend, unfit: str, snapshot_every: int
) -> None:
    with SessionStore(backend.url, snapshot_every=snapshot_every) as store:
        session_id = coding_session(store)
    stored_message(backend, session_id, 3, {"id": "m", "role": "user", **UNFIT[unfit]})
    refused = f"the message stored at seq 3 of '{session_id}'"
    with SessionStore(backend.url) as store, pytest.raises(InvalidEvent, match=refused):
        store.session(session_id).context().to_openai()


def test_a_stored_message_the_model_takes_is_read(backend: Backend) -> None:
    """A hand-written row that the cheap check doubts but the model accepts (a whole number
    of tokens written as 1.0) is read as the model reads it."""
    with SessionStore(backend.url) as store:
        session_id = coding_session(store)
    part = {"type": "text", "id": "p", "text": "written by hand", "tokens": 1.0}
    stored_message(backend, session_id, 3, {"id": "m", "role": "user", "parts": [part]})
    with SessionStore(backend.url) as store:
        context = store.session(session_id).context()
        assert context.to_openai()[1] == {"role": "user", "content": "written by hand"}
        assert context.messages[1].parts[0].tokens == 1


def body_reads(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The digests of every body the store reads from here on, in the order it asks."""
    read: list[str] = []
    reading = store._recorder.bodies

    def bodies(session: str, digests: Any) -> Any:
        read.extend(digests)
        return reading(session, digests)

    monkeypatch.setattr(store._recorder, "bodies", bodies)
    return read


def test_a_resume_reads_no_original_a_truncation_cut_until_a_restore_shows_it(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 72 KB output of `coding_session` was truncated at append: a resume shows its view
    and reads its original's body only when something shows the original."""
    with SessionStore(backend.url, snapshot_every=100_000) as store:
        s = store.create_session(model="gpt-4o", title="big output")
        s.append_user("Run the tests.")
        s.append_assistant(tool_calls=[ToolCall(id="c0", name="bash", input={"cmd": "pytest"})])
        original = "".join(f"test_{n} PASSED\n" for n in range(6_000))  # 94 KB
        s.append_tool_result("c0", output=original)
        session_id = s.id
    original_digest = hashlib.sha256(original.encode()).hexdigest()
    with SessionStore(backend.url) as store:
        read = body_reads(store, monkeypatch)
        s = store.session(session_id)
        shown = s.context().to_openai()[2]["content"]
        assert shown.startswith("test_0 PASSED") and len(shown) < len(original)
        assert original_digest not in read

        result = s.context().messages[2].parts[0]
        assert isinstance(result, LiveToolResult) and result.status == "truncated"
        s.restore([result.id])
        assert s.context().to_openai()[2]["content"] == original
        assert original_digest in read
    with SessionStore(backend.url) as store:  # a replay reads it as the restore showed it
        assert store.session(session_id).context().to_openai()[2]["content"] == original


def test_a_resume_from_a_snapshot_reads_no_pruned_output_until_a_restore_shows_it(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot names the outputs pruned at its seq: a resume from it shows their
    placeholders and leaves their bodies unread, reading one only when a restore (an event
    after the snapshot, or `restore_pruned`) shows it; the context is the one the writer's
    own fold (every event applied in turn) has."""
    outputs = [f"output {n}\n" + "".join(f"line {i}\n" for i in range(400)) for n in range(3)]
    with SessionStore(backend.url, snapshot_every=2) as store:
        s = store.create_session(model="gpt-4o", title="pruned outputs")
        s.append_user("Look around.")
        for n, output in enumerate(outputs):
            s.append_assistant(tool_calls=[ToolCall(id=f"c{n}", name="cat", input={"n": n})])
            s.append_tool_result(f"c{n}", output=output)
        results = [
            part.id
            for message in s.context().messages
            for part in message.parts
            if isinstance(part, LiveToolResult)
        ]
        s.append_events(
            [OutputsPruned(part_ids=tuple(results[:2]), placeholder="[pruned]", tokens_freed=1)]
        )
        s.append_user("Go on.")
        session_id = s.id
        expected = (s.context().to_openai(), s.context().tokens)
        restored_all = s.context(restore_pruned=True).to_openai()
    assert restored_all[2]["content"] == outputs[0]
    pruned = {hashlib.sha256(output.encode()).hexdigest() for output in outputs[:2]}
    with SessionStore(backend.url) as store:
        read = body_reads(store, monkeypatch)
        s = store.session(session_id)
        assert s._snapshot_seq == 9  # the prune's: the resume starts from its state
        context = s.context()
        assert (context.to_openai(), context.tokens) == expected
        assert [m["content"] for m in context.to_openai()[2:7:2]] == [
            "[pruned]",
            "[pruned]",
            outputs[2],
        ]
        assert read and not pruned & set(read)

        assert s.context(restore_pruned=True).to_openai() == restored_all
        assert pruned <= set(read)
        s = store.session(session_id)
        read.clear()
        s.restore([results[0]])
        assert s.context().to_openai()[2]["content"] == outputs[0]
        assert s.context().to_openai()[4]["content"] == "[pruned]"
        assert hashlib.sha256(outputs[0].encode()).hexdigest() in read
        assert hashlib.sha256(outputs[1].encode()).hexdigest() not in read
