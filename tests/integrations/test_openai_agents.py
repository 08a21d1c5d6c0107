"""`AgentsSession` under the Agents SDK's own `Runner`, with its `ScriptedModel` (no network):
items round-trip verbatim, and a 300 KB tool output reaches the model truncated inside the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.run_internal.items import fingerprint_input_item
from agents.testing.model import ModelStep, ScriptedModel
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from sessionstore import InvalidArgument, SessionStore
from sessionstore.integrations.openai_agents import AgentsSession, context_filter
from tests.conftest import full_in_slow

set_tracing_disabled(True)  # no network: the SDK would send its traces to OpenAI

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB


@function_tool
def read_log() -> str:
    """The whole build log."""
    return BIG


def said(text: str, n: int) -> ModelStep:
    content = ResponseOutputText(type="output_text", text=text, annotations=[])
    item = ResponseOutputMessage(
        id=f"msg_{n}", type="message", role="assistant", status="completed", content=[content]
    )
    return ModelStep(output=[item])


def calls_read_log(n: int) -> ModelStep:
    call = ResponseFunctionToolCall(
        id=f"fc_{n}", type="function_call", call_id=f"call_{n}", name="read_log", arguments="{}"
    )
    return ModelStep(output=[call])


def outputs_in(request: Any) -> list[str]:
    return [
        item["output"]
        for item in request
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_two_runs_a_truncated_output_and_a_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    model = ScriptedModel([calls_read_log(1), said("The build failed.", 2), said("Yes.", 3)])
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[read_log])

    async def runs() -> list[Any]:
        with SessionStore(url) as store:
            session = AgentsSession("run-1", store, model="gpt-4o", context_window=128_000)
            config = RunConfig(call_model_input_filter=context_filter(session))
            await Runner.run(agent, "Why did the build fail?", session=session, run_config=config)
            await Runner.run(agent, "Is it the log?", session=session, run_config=config)
            return await session.get_items()

    items = asyncio.run(runs())
    model.assert_complete()
    requests = [call.input for call in model.calls]
    shown = outputs_in(requests[1])  # the model's request right after the tool ran
    assert len(shown) == 1 and len(shown[0]) < len(BIG) // 4
    assert "truncated" in shown[0] or "restore" in shown[0]
    assert outputs_in(requests[2]) == shown  # the second run sees the same cut
    # stored whole, and every item as the SDK gave it
    [output] = [item for item in items if item.get("type") == "function_call_output"]
    assert output["output"] == BIG
    assert [item.get("role") or item.get("type") for item in items] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
        "assistant",
    ]

    async def resumed() -> list[Any]:
        with SessionStore(url) as store:
            return await AgentsSession("run-1", store).get_items()

    again = asyncio.run(resumed())
    assert [fingerprint_input_item(i) for i in again] == [fingerprint_input_item(i) for i in items]


def test_pop_limit_and_clear(tmp_path: Path) -> None:
    async def steps() -> None:
        with SessionStore(f"sqlite:///{tmp_path / 'a.db'}") as store:
            session = AgentsSession("s", store)
            first = {"role": "user", "content": "hello"}
            call = {
                "type": "function_call",
                "call_id": "c1",
                "name": "read_log",
                "arguments": "{}",
                "id": "fc_1",
                "status": "completed",
            }
            result = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
            await session.add_items([first, call, result])
            assert await session.get_items() == [first, call, result]
            assert await session.get_items(limit=1) == [result]
            assert await session.pop_item() == result  # a tool output too
            assert await session.get_items() == [first, call]
            await session.clear_session()
            assert await session.get_items() == [] and await session.pop_item() is None
            replay = session.session.context(at=4).messages
            assert [m.role for m in replay] == ["user", "assistant", "tool"]

    asyncio.run(steps())


def test_a_message_repeated_in_a_later_run_is_stored_again(tmp_path: Path) -> None:
    model = ScriptedModel([said("Hi.", 1), said("Hi again.", 2)])
    agent = Agent(name="helper", model=model)

    async def runs() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
            session = AgentsSession("again", store)
            config = RunConfig(call_model_input_filter=context_filter(session))
            await Runner.run(agent, "hello", session=session, run_config=config)
            await Runner.run(agent, "hello", session=session, run_config=config)
            return await session.get_items()

    items = asyncio.run(runs())
    assert [item.get("role") for item in items] == ["user", "assistant", "user", "assistant"]
    second = [item for item in model.calls[1].input if item.get("role") == "user"]
    assert [item["content"][0]["text"] for item in second] == ["hello", "hello"]


# What the SDK's own `SQLiteSession` round-trips, ours round-trips identically: it is the oracle.

EASY_ASSISTANT = {"role": "assistant", "content": "Hi there!"}
HISTORY: list[Any] = [
    {"role": "user", "content": "Hello"},
    EASY_ASSISTANT,
    {"type": "message", "role": "assistant", "content": "typed, string content"},
    {"role": "user", "content": "Unicode: 日本語 🎉"},
    {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "gAAAAAB..."},  # not an item at all
    {"type": "function_call_output", "call_id": "nobody", "output": "an answer to no call"},
    {"type": "reasoning", "summary": []},  # a modelled type without the id it needs
]


def sdk_sqlite_round_trip(items: list[Any]) -> tuple[list[Any], Any, list[Any]]:
    from agents import SQLiteSession

    async def steps() -> tuple[list[Any], Any, list[Any]]:
        oracle = SQLiteSession("oracle")
        await oracle.add_items(items)
        stored = await oracle.get_items()
        popped = await oracle.pop_item()
        rest = await oracle.get_items()
        oracle.close()
        return stored, popped, rest

    return asyncio.run(steps())


def test_every_item_sqlite_session_round_trips_comes_back_verbatim_in_order(
    tmp_path: Path,
) -> None:
    async def steps() -> tuple[list[Any], Any, list[Any], list[Any]]:
        with SessionStore(f"sqlite:///{tmp_path / 'v.db'}") as store:
            session = AgentsSession("verbatim", store)
            await session.add_items(HISTORY)
            stored = await session.get_items()
            popped = await session.pop_item()
            rest = await session.get_items()
            return stored, popped, rest, session.session.context().to_responses()

    stored, popped, rest, request = asyncio.run(steps())
    assert (stored, popped, rest) == sdk_sqlite_round_trip(HISTORY)
    assert stored == HISTORY
    # the messages reach the live context; what is no message is shown to no model
    from openai.types.responses import ResponseInputParam
    from pydantic import TypeAdapter

    TypeAdapter(ResponseInputParam).validate_python(request)
    assert EASY_ASSISTANT in request
    assert {"type": "message", "role": "assistant", "content": "typed, string content"} in request
    assert "__enc__" not in str(request) and "nobody" not in str(request)


def test_an_assistant_message_with_string_content_answers_in_a_run(tmp_path: Path) -> None:
    model = ScriptedModel([said("Fine.", 1)])
    agent = Agent(name="helper", model=model)

    async def run() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'e.db'}") as store:
            session = AgentsSession("easy", store)
            await session.add_items([{"role": "user", "content": "Hi"}, EASY_ASSISTANT])
            config = RunConfig(call_model_input_filter=context_filter(session))
            await Runner.run(agent, "How are you?", session=session, run_config=config)
            return await session.get_items()

    items = asyncio.run(run())
    assert items[:2] == [{"role": "user", "content": "Hi"}, EASY_ASSISTANT]
    assert EASY_ASSISTANT in model.calls[0].input


def test_the_sdk_encrypted_session_wraps_it(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from agents.extensions.memory.encrypt_session import EncryptedSession

    async def steps() -> tuple[list[Any], Any, list[Any], list[Any]]:
        with SessionStore(f"sqlite:///{tmp_path / 'enc.db'}") as store:
            backend = AgentsSession("secret", store)
            session = EncryptedSession("secret", backend, encryption_key="k" * 32, ttl=600)
            await session.add_items(HISTORY[:4])
            stored = await session.get_items()
            popped = await session.pop_item()
            raw = await backend.get_items()
            return stored, popped, await session.get_items(), raw

    stored, popped, rest, raw = asyncio.run(steps())
    assert stored == HISTORY[:4]
    assert popped == HISTORY[3] and rest == HISTORY[:3]
    assert [item["__enc__"] for item in raw] == [1, 1, 1]  # the store holds only envelopes
    assert "Hello" not in str(raw)


def test_session_settings_limit_is_the_default_of_get_items(tmp_path: Path) -> None:
    from agents.memory import SessionSettings

    items = [{"role": "user", "content": f"message {n}"} for n in range(5)]

    async def steps() -> tuple[Any, list[Any], list[Any], list[Any], list[Any]]:
        with SessionStore(f"sqlite:///{tmp_path / 'l.db'}") as store:
            plain = AgentsSession("plain", store)
            limited = AgentsSession("limited", store, session_settings=SessionSettings(limit=3))
            await limited.add_items(items)
            return (
                plain.session_settings,
                await limited.get_items(),
                await limited.get_items(limit=10),
                await limited.get_items(limit=0),
                await limited.get_items(limit=-1),
            )

    default, limited, explicit, none, negative = asyncio.run(steps())
    assert default == SessionSettings()
    assert limited == items[2:]
    assert explicit == items and none == [] and negative == items  # as SQLiteSession


class FakeCompactClient:
    """Stands in for `AsyncOpenAI` where the SDK's compaction session calls
    `client.responses.compact`: answers with a fixed output, and keeps each request."""

    def __init__(self, output: list[Any]) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responses = self
        self._output = output

    async def compact(self, **request: Any) -> Any:
        from types import SimpleNamespace

        self.requests.append(request)
        return SimpleNamespace(output=self._output, usage=None)


def test_the_sdk_compaction_replaces_only_the_tail_the_limit_shows(tmp_path: Path) -> None:
    from agents.memory import OpenAIResponsesCompactionSession

    old = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"old {n}"} for n in range(8)]
    summary = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "S"}]}
    ]
    client = FakeCompactClient(summary)
    model = ScriptedModel([said("Done.", 1)])
    agent = Agent(name="worker", model=model)

    async def run() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'c.db'}") as store:
            backend = AgentsSession("compact", store, session_settings={"limit": 2})
            await backend.add_items(old)
            session = OpenAIResponsesCompactionSession(
                "compact",
                backend,
                client=client,  # type: ignore[arg-type]
                should_trigger_compaction=lambda context: True,
            )
            await Runner.run(agent, "continue", session=session)
            return await backend.get_items(limit=100)

    items = asyncio.run(run())
    [request] = client.requests
    sent = str(request["input"])
    assert "old 5" not in sent and "old 6" in sent and "continue" in sent
    # the tail it summarised is replaced by the summary; what the limit hid stays as it was
    assert items[:6] == old[:6] and items[6:] == summary


def test_a_whole_history_replacement_is_one_transaction(store: SessionStore) -> None:
    from agents.memory import OpenAIResponsesCompactionSession

    old = [{"role": "user", "content": f"old {n}"} for n in range(3)]
    summary = [{"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}]
    client = FakeCompactClient(summary)

    async def not_in_two_steps() -> None:
        raise AssertionError("the compaction cleared, then added: not one transaction")

    async def steps() -> tuple[list[Any], list[str]]:
        backend = AgentsSession("whole", store)
        await backend.add_items(old)
        backend.clear_session = not_in_two_steps  # type: ignore[method-assign]
        session = OpenAIResponsesCompactionSession("whole", backend, client=client)  # type: ignore[arg-type]
        version = backend.session.version
        await session.run_compaction({"force": True})
        events = store.read("whole", version + 1)
        return await backend.get_items(), [event.type for event in events]

    items, events = asyncio.run(steps())
    assert items == summary
    assert events == ["SessionCleared", "MessageAppended"]


def test_close_lets_go_and_a_later_call_resumes(tmp_path: Path) -> None:
    async def steps() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
            session = AgentsSession("closing", store)
            await session.add_items([{"role": "user", "content": "before"}])
            session.close()
            await session.add_items([{"role": "user", "content": "after"}])
            return await session.get_items()

    assert [item["content"] for item in asyncio.run(steps())] == ["before", "after"]


def test_a_tail_replacement_after_another_write_writes_nothing(store: SessionStore) -> None:
    first = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]

    async def steps() -> tuple[bool, list[Any], bool, list[Any]]:
        session = AgentsSession("raced", store)
        await session.add_items(first)
        snapshot = await session._get_compaction_snapshot(10)
        assert snapshot is not None and snapshot.items == first and snapshot.complete
        late = AgentsSession("raced", store)  # another writer, its own handle
        await late.add_items([{"role": "user", "content": "three"}])
        refused = await snapshot.replace_suffix(0, [{"role": "user", "content": "S"}])
        after_refusal = await session.get_items()
        fresh = await session._get_compaction_snapshot(2)
        assert fresh is not None and not fresh.complete
        replaced = await fresh.replace_suffix(1, [{"role": "user", "content": "S"}])
        return refused, after_refusal, replaced, await session.get_items()

    refused, after_refusal, replaced, items = asyncio.run(steps())
    assert not refused and after_refusal == [*first, {"role": "user", "content": "three"}]
    assert replaced and items == [*first, {"role": "user", "content": "S"}]


def test_an_item_that_is_not_json_raises_and_writes_nothing(tmp_path: Path) -> None:
    async def steps() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'j.db'}") as store:
            session = AgentsSession("json", store)
            good = {"role": "user", "content": "fine"}
            with pytest.raises(InvalidArgument, match="must be JSON"):
                await session.add_items([good, {"role": "user", "content": object()}])
            with pytest.raises(InvalidArgument, match="must be JSON"):
                await session.add_items([{"role": "user", "content": float("nan")}])
            return await session.get_items()

    assert asyncio.run(steps()) == []


def test_a_subclass_replaces_through_its_own_methods(tmp_path: Path) -> None:
    """As the SDK's `SQLiteSession`: what a subclass does to the items (here it only counts
    them) is not bypassed by a replacement in one transaction."""
    from agents.memory import OpenAIResponsesCompactionSession

    class Counted(AgentsSession):
        added: list[Any]

        async def add_items(self, items: list[Any]) -> None:
            self.added.extend(items)
            await super().add_items(items)

    summary = [{"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}]
    client = FakeCompactClient(summary)

    async def steps() -> tuple[list[Any], list[Any], Any]:
        with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
            backend = Counted("sub", store)
            backend.added = []
            await backend.add_items([{"role": "user", "content": "old"}])
            session = OpenAIResponsesCompactionSession("sub", backend, client=client)  # type: ignore[arg-type]
            await session.run_compaction({"force": True})
            snapshot = await backend._get_compaction_snapshot(5)
            return backend.added, await backend.get_items(), snapshot

    added, items, snapshot = asyncio.run(steps())
    assert items == summary and added == [{"role": "user", "content": "old"}, *summary]
    assert snapshot is None


def test_two_session_objects_for_one_id_write_in_turn(store: SessionStore) -> None:
    """As two SDK `SQLiteSession`s of one id: each object's write lands after the other's."""

    def said(text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    async def steps() -> list[Any]:
        one, two = AgentsSession("shared", store), AgentsSession("shared", store)
        await one.add_items([said("1")])
        await two.add_items([said("2")])
        await one.add_items([said("3")])
        popped = [await two.pop_item(), await one.pop_item()]
        await one.add_items([said("4")])
        await two.clear_session()
        await one.add_items([said("5")])
        return [popped, await two.get_items()]

    popped, items = asyncio.run(steps())
    assert popped == [said("3"), said("2")] and items == [said("5")]


@full_in_slow("races", default=50, full=300)
def test_two_objects_popping_at_once_each_take_another_row(store: SessionStore, races: int) -> None:
    """The SDK's own `test_concurrent_pop_item_returns_each_row_once`, raced many times: a
    pop that loses the race to the other object's pop takes the next row, never the same."""

    async def race(number: int) -> list[Any]:
        writer, other = AgentsSession(f"pop-{number}", store), AgentsSession(f"pop-{number}", store)
        await writer.add_items(
            [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}]
        )
        return list(await asyncio.gather(writer.pop_item(), other.pop_item()))

    async def all_races() -> list[set[str]]:
        return [{item["content"] for item in await race(number)} for number in range(races)]

    assert asyncio.run(all_races()) == [{"first", "second"}] * races
