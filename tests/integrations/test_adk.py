"""`SessionStoreService` under ADK's own `Runner` with a scripted `BaseLlm` (no network): events
come back equal to what was appended, state scopes behave as ADK's `DatabaseSessionService`,
and a 300 KB function response reaches the model truncated; then ADK's session-service cases
(create, get with its config, list, delete, stale sessions, temp state) on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

os.environ["OTEL_SDK_DISABLED"] = "true"  # no traces, metrics or logs exported anywhere

from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import Session as AdkSession
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import Field

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.events._errors import IdempotencyError
from sessionstore.integrations.adk import SessionStoreService, context_callback
from sessionstore.projections import LiveToolResult
from tests.conftest import Backend

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may leave the machine: no OpenTelemetry endpoint, no Google credentials."""
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP") or name.startswith("GOOGLE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key-never-sent")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    fixture = "sqlite_backend" if request.param == "sqlite" else "postgres_backend"
    backend: Backend = request.getfixturevalue(fixture)
    yield backend.url


class RecordingService(SessionStoreService):
    """The service, keeping every event the Runner appended (it yields only the agents')."""

    appended: list[Event]

    async def append_event(self, session: AdkSession, event: Event) -> Event:
        stored = await super().append_event(session, event)
        if not event.partial:
            self.appended.append(stored.model_copy(deep=True))
        return stored


class ScriptedLlm(BaseLlm):
    """Answers each request with the next scripted response, and keeps the requests."""

    model: str = "scripted"
    script: list[LlmResponse] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        yield self.script.pop(0)


def read_log(tool_context: ToolContext) -> str:
    """The whole build log."""
    tool_context.state["city"] = "Paris"
    tool_context.state["user:name"] = "Ada"
    tool_context.state["app:motd"] = "builds are green"
    tool_context.state["temp:scratch"] = 1
    return BIG


def model_says(*parts: types.Part) -> LlmResponse:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1_200, cached_content_token_count=200, candidates_token_count=30
    )
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), usage_metadata=usage)


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def responses_in(request: LlmRequest) -> list[dict[str, Any] | None]:
    return [
        part.function_response.response
        for content in request.contents
        for part in content.parts or ()
        if part.function_response is not None
    ]


def test_a_runner_two_turns_a_truncated_response_state_scopes_and_a_resume(url: str) -> None:
    thinking = types.Part(text="The log will say.", thought=True, thought_signature=b"sig\x00\xff")
    call = types.Part(function_call=types.FunctionCall(name="read_log", args={"tail": 0}))
    model = ScriptedLlm(
        script=[
            model_says(thinking, call),
            model_says(types.Part(text="The build failed.")),
            model_says(types.Part(text="Yes.")),
        ]
    )
    agent = LlmAgent(
        name="helper",
        model=model,
        instruction="Be brief.",
        tools=[read_log],
        before_model_callback=context_callback_of_the_service,
    )

    async def runs() -> tuple[list[Event], AdkSession | None]:
        with SessionStore(url) as store:
            service = RecordingService(store, context_window=1_000_000)
            service.appended = []
            SERVICES.append(service)
            runner = Runner(app_name="builds", agent=agent, session_service=service)
            await service.create_session(app_name="builds", user_id="ada", session_id="s1")
            for text in ("Why did the build fail?", "Is it the log?"):
                async for _ in runner.run_async(
                    user_id="ada", session_id="s1", new_message=user(text)
                ):
                    pass
            stored = service.session("builds", "ada", "s1")
            [result] = [
                part
                for message in stored.context(restore_pruned=True).messages
                for part in message.parts
                if isinstance(part, LiveToolResult)
            ]
            assert result.output == BIG  # stored whole
            got = await service.get_session(app_name="builds", user_id="ada", session_id="s1")
            return service.appended, got

    seen, got = asyncio.run(runs())
    assert not model.script
    # the model's request right after the tool ran, and the next turn's: the truncated view
    [shown] = responses_in(model.requests[1])
    assert shown is not None and len(shown["result"]) < len(BIG) // 4
    assert shown["result"].startswith("line 0: ") and "the full output is kept" in shown["result"]
    assert responses_in(model.requests[2]) == [shown]
    # ... while ADK's own events keep the whole response
    assert got is not None and got.events == seen
    [response] = [r for e in got.events for r in e.get_function_responses()]
    assert response.response == {"result": BIG}
    assert [e.author for e in got.events] == [
        "user",
        "helper",
        "helper",
        "helper",
        "user",
        "helper",
    ]
    assert got.events[1].content.parts[0].thought_signature == b"sig\x00\xff"  # type: ignore[union-attr,index]
    assert got.state == {"city": "Paris", "user:name": "Ada", "app:motd": "builds are green"}

    async def resumed() -> None:
        async with AsyncSessionStore(url) as store:  # the async face works as well
            service = SessionStoreService(store)
            again = await service.get_session(app_name="builds", user_id="ada", session_id="s1")
            assert again is not None and again.events == seen and again.state == got.state
            assert again.last_update_time == got.last_update_time
            other = await service.create_session(app_name="builds", user_id="ada")
            assert other.state == {"user:name": "Ada", "app:motd": "builds are green"}
            stranger = await service.create_session(app_name="builds", user_id="bob")
            assert stranger.state == {"app:motd": "builds are green"}
            assert await service.get_user_state(app_name="builds", user_id="ada") == {"name": "Ada"}

    asyncio.run(resumed())


SERVICES: list[SessionStoreService] = []


async def context_callback_of_the_service(
    callback_context: Any, llm_request: LlmRequest
) -> LlmResponse | None:
    """The test's agent is built before its store opens: the callback of the service in use."""
    return await context_callback(SERVICES[-1])(callback_context, llm_request)


def event(author: str, **fields: Any) -> Event:
    return Event(invocation_id="inv-1", author=author, **fields)


def test_create_get_list_and_delete_as_adk_does(url: str) -> None:
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            first = await service.create_session(
                app_name="app",
                user_id="u1",
                session_id="s1",
                state={"k": 1, "user:u": "x", "app:a": True, "temp:t": 0},
            )
            assert first.id == "s1" and first.events == []
            assert first.state == {"k": 1, "user:u": "x", "app:a": True}
            with pytest.raises(AlreadyExistsError):
                await service.create_session(app_name="app", user_id="u1", session_id="s1")
            # ids are per app and user: the same id elsewhere is another session
            second = await service.create_session(app_name="app", user_id="u2", session_id="s1")
            assert second.state == {"app:a": True}
            generated = await service.create_session(app_name="app", user_id="u1")
            assert generated.id and generated.id != "s1"
            assert await service.get_session(app_name="app", user_id="u3", session_id="s1") is None
            assert (
                await service.get_session(app_name="other", user_id="u1", session_id="s1") is None
            )

            everyone = (await service.list_sessions(app_name="app")).sessions
            assert sorted((s.user_id, s.id) for s in everyone) == sorted(
                [("u1", "s1"), ("u2", "s1"), ("u1", generated.id)]
            )
            times = [s.last_update_time for s in everyone]
            assert times == sorted(times)
            mine = (await service.list_sessions(app_name="app", user_id="u1")).sessions
            assert {s.id for s in mine} == {"s1", generated.id}
            listed = next(s for s in mine if s.id == "s1")
            assert listed.events == [] and listed.state == first.state
            assert (await service.list_sessions(app_name="nobody")).sessions == []

            got = await service.get_session(app_name="app", user_id="u1", session_id="s1")
            assert got is not None
            said = event("user", content=user("hello"), actions=EventActions(state_delta={"k": 2}))
            await service.append_event(got, said)
            await service.delete_session(app_name="app", user_id="u1", session_id="s1")
            assert await service.get_session(app_name="app", user_id="u1", session_id="s1") is None
            mine = (await service.list_sessions(app_name="app", user_id="u1")).sessions
            assert [s.id for s in mine] == [generated.id]
            with pytest.raises(SessionNotFoundError):
                await service.append_event(got, event("user", content=user("late")))
            await service.delete_session(app_name="app", user_id="u1", session_id="s1")  # again
            # what was said is gone from the database; the id can be used again
            stored = service.session("app", "u1", "s1")
            assert "hello" not in str([e.payload for e in store.read(stored.id)])
            again = await service.create_session(app_name="app", user_id="u1", session_id="s1")
            assert again.events == [] and again.state == {"user:u": "x", "app:a": True}
            back = await service.get_session(app_name="app", user_id="u1", session_id="s1")
            assert back is not None and back.events == [] and back.state == again.state

    asyncio.run(steps())


def test_names_that_are_not_labels_still_work(url: str) -> None:
    app, owner = "a" * 300, "user\nwith a newline"

    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            made = await service.create_session(app_name=app, user_id=owner, state={"user:x": 1})
            await service.append_event(made, event("user", content=user("hi")))
            [listed] = (await service.list_sessions(app_name=app, user_id=owner)).sessions
            assert (listed.app_name, listed.user_id, listed.id) == (app, owner, made.id)
            got = await service.get_session(app_name=app, user_id=owner, session_id=made.id)
            assert got is not None and got.events == made.events and got.state == {"user:x": 1}

    asyncio.run(steps())


def test_get_session_config_num_recent_events_and_after_timestamp(url: str) -> None:
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            session = await service.create_session(app_name="app", user_id="u", session_id="s")
            appended = []
            for n in range(5):
                said = event("user", content=user(f"turn {n}"), timestamp=1_000.0 + n)
                appended.append(await service.append_event(session, said))

            async def read(**config: Any) -> list[Event]:
                got = await service.get_session(
                    app_name="app", user_id="u", session_id="s", config=GetSessionConfig(**config)
                )
                assert got is not None
                return got.events

            assert await read() == appended
            assert await read(num_recent_events=2) == appended[-2:]
            assert await read(num_recent_events=0) == []
            assert await read(num_recent_events=9) == appended
            assert await read(after_timestamp=1_002.0) == appended[2:]
            assert await read(after_timestamp=1_001.0, num_recent_events=3) == appended[2:]
            assert await read(after_timestamp=2_000.0) == []

    asyncio.run(steps())


def test_a_stale_session_object_is_refused_and_nothing_is_written(url: str) -> None:
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            await service.create_session(app_name="app", user_id="u", session_id="s")
            mine = await service.get_session(app_name="app", user_id="u", session_id="s")
            theirs = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert mine is not None and theirs is not None
            await service.append_event(mine, event("user", content=user("first")))
            head = store.version(service.session("app", "u", "s").id)
            with pytest.raises(StaleSessionError):
                await service.append_event(theirs, event("user", content=user("second")))
            assert store.version(service.session("app", "u", "s").id) == head
            # what ADK does not read (a policy's event) leaves a session object fresh
            service.session("app", "u", "s").configure(minimum_prune=1_000)
            await service.append_event(mine, event("user", content=user("third")))
            # a session object built by hand is checked by its last event, as ADK does
            fresh = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert fresh is not None
            by_hand = AdkSession(id="s", app_name="app", user_id="u", events=fresh.events)
            await service.append_event(by_hand, event("user", content=user("fourth")))
            old = AdkSession(id="s", app_name="app", user_id="u", events=fresh.events[:1])
            with pytest.raises(StaleSessionError):
                await service.append_event(old, event("user", content=user("fifth")))

    asyncio.run(steps())


def test_events_without_content_are_records_partial_and_temp_are_not_stored(url: str) -> None:
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            session = await service.create_session(app_name="app", user_id="u", session_id="s")
            actions = EventActions(
                state_delta={"step": 2, "temp:draft": "x", "user:seen": True},
                escalate=True,
                transfer_to_agent="billing",
            )
            only_state = await service.append_event(session, event("router", actions=actions))
            assert only_state.actions.state_delta == {"step": 2, "user:seen": True}
            assert session.state["temp:draft"] == "x"  # for the rest of the invocation only
            partial = event("helper", content=user("hal"), partial=True)
            await service.append_event(session, partial)
            ours = service.session("app", "u", "s")
            kinds = [e.type for e in store.read(ours.id)]
            assert kinds == [
                "SessionStarted",
                "RecordAppended",  # the session's creation
                "RecordAppended",  # the event without content
                "StateChanged",  # its session state, in the same transaction
            ]
            assert ours.context().messages == ()
            got = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert got is not None and got.events == [only_state]
            assert got.state == {"step": 2, "user:seen": True}

    asyncio.run(steps())


def test_parallel_function_responses_are_one_tool_message_and_come_back_equal(url: str) -> None:
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            session = await service.create_session(app_name="app", user_id="u", session_id="s")
            calls = [
                types.Part(function_call=types.FunctionCall(id="c1", name="weather", args={})),
                types.Part(function_call=types.FunctionCall(id="c2", name="time", args={"tz": 1})),
            ]
            model = event("helper", content=types.Content(role="model", parts=calls))
            answers = [
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="weather", response={"result": "sunny"}
                    )
                ),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c2", name="time", response={"hour": 9, "nested": [1.5, None]}
                    )
                ),
            ]
            answered = event("helper", content=types.Content(role="user", parts=answers))
            stray = types.FunctionResponse(id="c9", name="x", response={"result": "?"})
            orphan = event(
                "helper",
                content=types.Content(role="user", parts=[types.Part(function_response=stray)]),
            )
            for item in (model, answered, orphan):
                await service.append_event(session, item)
            messages = service.session("app", "u", "s").context().messages
            assert [m.role for m in messages] == ["assistant", "tool"]
            outputs = [p.output for p in messages[1].parts]  # type: ignore[union-attr]
            assert outputs == ["sunny", '{"hour": 9, "nested": [1.5, null]}']
            got = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert got is not None and got.events == [model, answered, orphan]

    asyncio.run(steps())


def test_without_adk_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "google.adk.agents.callback_context", None)
    monkeypatch.delitem(sys.modules, "sessionstore.integrations.adk")
    with pytest.raises(ImportError, match=r"pip install 'sessionstore\[adk\]'"):
        importlib.import_module("sessionstore.integrations.adk")


# ADK's own `DatabaseSessionService` is the oracle of what follows: each case runs on it too
# (when its `db` extra, SQLAlchemy's asyncio with greenlet, is installed; skipped otherwise).

Service = SessionStoreService | DatabaseSessionService
Steps = Callable[[Service], Awaitable[Any]]


@pytest.fixture(params=["sqlite", "postgresql", "adk-database"])
def run_steps(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[Steps], Any]:
    """Runs `steps` on our service over SQLite or PostgreSQL, or on `DatabaseSessionService`."""
    if request.param == "adk-database":
        try:
            adk = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
        except ImportError as exc:
            pytest.skip(f"DatabaseSessionService needs google-adk[db]: {exc}")

        def on_adk(steps: Steps) -> Any:
            async def run() -> Any:
                async with adk:
                    return await steps(adk)

            return asyncio.run(run())

        return on_adk
    fixture = "sqlite_backend" if request.param == "sqlite" else "postgres_backend"
    url = request.getfixturevalue(fixture).url

    def on_ours(steps: Steps) -> Any:
        async def run() -> Any:
            with SessionStore(url) as store:
                return await steps(SessionStoreService(store))

        return asyncio.run(run())

    return on_ours


def test_last_update_time_is_the_last_events_timestamp(run_steps: Callable[[Steps], Any]) -> None:
    async def steps(service: Service) -> list[float]:
        made = await service.create_session(app_name="app", user_id="u", session_id="s")
        await service.append_event(made, event("user", content=user("a"), timestamp=1_000.0))
        await service.append_event(made, event("user", content=user("b"), timestamp=1_001.5))
        got = await service.get_session(app_name="app", user_id="u", session_id="s")
        [listed] = (await service.list_sessions(app_name="app", user_id="u")).sessions
        assert got is not None
        return [made.last_update_time, got.last_update_time, listed.last_update_time]

    assert run_steps(steps) == [1_001.5, 1_001.5, 1_001.5]


def test_events_come_back_ordered_by_timestamp_then_id(run_steps: Callable[[Steps], Any]) -> None:
    async def steps(service: Service) -> list[list[str]]:
        made = await service.create_session(app_name="app", user_id="u", session_id="s")
        for event_id, stamp in [("c", 1_000.0), ("a", 1_000.0), ("b", 1_000.0), ("d", 999.0)]:
            said = event("user", id=event_id, content=user(event_id), timestamp=stamp)
            await service.append_event(made, said)
        reads = []
        for config in (None, GetSessionConfig(num_recent_events=2)):
            got = await service.get_session(
                app_name="app", user_id="u", session_id="s", config=config
            )
            assert got is not None
            reads.append([e.id for e in got.events])
        return reads

    assert run_steps(steps) == [["d", "a", "b", "c"], ["b", "c"]]


def test_an_event_id_is_stored_once(run_steps: Callable[[Steps], Any]) -> None:
    async def steps(service: Service) -> tuple[int, list[str]]:
        made = await service.create_session(app_name="app", user_id="u", session_id="s")
        said = event("user", id="once", content=user("hello"))
        refused = 0
        for _ in range(3):
            try:
                await service.append_event(made, said)
            except Exception:  # ADK's: SQLAlchemy's IntegrityError; ours: IdempotencyError
                refused += 1
        got = await service.get_session(app_name="app", user_id="u", session_id="s")
        assert got is not None
        return refused, [e.id for e in got.events]

    assert run_steps(steps) == (2, ["once"])


def test_an_event_id_appended_again_is_refused_and_stored_once(url: str) -> None:
    async def steps() -> tuple[list[str], list[str]]:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            made = await service.create_session(app_name="app", user_id="u", session_id="s")
            said = event("user", id="once", content=user("hello"))
            await service.append_event(made, said)
            head = store.version(service.session("app", "u", "s").id)
            for repeated in (said, said.model_copy(update={"content": user("other")})):
                with pytest.raises(IdempotencyError, match="in the session already"):
                    await service.append_event(made, repeated)
            assert store.version(service.session("app", "u", "s").id) == head
            # a state-only event (a record) and an answer are keyed the same way
            quiet = event("agent", id="quiet", actions=EventActions(state_delta={"k": 1}))
            await service.append_event(made, quiet)
            with pytest.raises(IdempotencyError):
                await service.append_event(made, quiet)
            got = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert got is not None
            # deleted and created again, the session starts a new life: the ids are free
            await service.delete_session(app_name="app", user_id="u", session_id="s")
            made = await service.create_session(app_name="app", user_id="u", session_id="s")
            await service.append_event(made, event("user", id="once", content=user("hi again")))
            back = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert back is not None
            return [e.id for e in got.events], [e.id for e in back.events]

    ids, after_recreate = asyncio.run(steps())
    assert ids == ["once", "quiet"] and after_recreate == ["once"]


class CountingStore(SessionStore):
    """Counts the events `read` returns: what a `get_session` costs."""

    events_read = 0

    def read(self, session_id: str, from_seq: int = 1, to_seq: int | None = None) -> Any:
        events = super().read(session_id, from_seq, to_seq)
        self.events_read += len(events)
        return events


def test_get_session_reads_only_the_newest_events_it_needs(url: str) -> None:
    async def steps() -> dict[str, tuple[int, int]]:
        store = CountingStore(url)
        with store:
            service = SessionStoreService(store)
            made = await service.create_session(app_name="app", user_id="u", session_id="s")
            for n in range(300):
                said = event("user", content=user(f"turn {n}"), timestamp=1_000.0 + n)
                await service.append_event(made, said)
            costs = {}
            for name, config in {
                "all": None,
                "recent": GetSessionConfig(num_recent_events=3),
                "after": GetSessionConfig(after_timestamp=1_295.0),
                "none": GetSessionConfig(num_recent_events=0),
            }.items():
                store.events_read = 0
                got = await service.get_session(
                    app_name="app", user_id="u", session_id="s", config=config
                )
                assert got is not None
                costs[name] = (len(got.events), store.events_read)
            return costs

    costs = asyncio.run(steps())
    assert costs["all"][0] == 300 and costs["all"][1] >= 300
    assert costs["recent"] == (3, 32) and costs["after"] == (5, 32) and costs["none"] == (0, 32)


def test_the_service_closes_as_an_async_context_manager(tmp_path: Path) -> None:
    async def steps() -> list[str]:
        with SessionStore(f"sqlite:///{tmp_path / 'c.db'}") as store:
            async with SessionStoreService(store) as service:
                made = await service.create_session(app_name="app", user_id="u", session_id="s")
                await service.append_event(made, event("user", content=user("hi")))
            await service.close()  # again: nothing held, nothing to do
            got = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert got is not None
            return [
                str(e.content.parts[0].text) for e in got.events if e.content and e.content.parts
            ]

    assert asyncio.run(steps()) == ["hi"]
