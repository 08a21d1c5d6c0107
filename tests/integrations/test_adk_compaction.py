"""ADK's compaction events (`actions.compaction`) are compactions of the live context (issue 27,
item 7): the live context is what ADK's own request builder makes of the events, so
`context_callback` measures and prunes what ADK sends; the event comes back as appended, and
replay before it shows the turns it covers. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

pytest.importorskip("google.adk")

os.environ["OTEL_SDK_DISABLED"] = "true"

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.flows.llm_flows.contents import _process_compaction_events
from google.genai import types

from sessionstore import SessionStore
from sessionstore.events import ContextCompacted
from sessionstore.integrations.adk import SessionStoreService
from tests.integrations.test_adk import url  # noqa: F401 (the backends' fixture)

SUMMARY = "The user asked for the weather in Paris; the tool said sunny, 21 C."


def at(timestamp: float, author: str, **fields: Any) -> Event:
    return Event(invocation_id="inv-1", author=author, timestamp=timestamp, **fields)


def said(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def texts_of(contents: list[types.Content | None]) -> list[str]:
    return [
        part.text or (part.function_call.name if part.function_call else "") or "response"
        for content in contents
        if content is not None
        for part in content.parts or ()
    ]


def test_an_adk_compaction_event_compacts_the_live_context_as_adk_does(url: str) -> None:  # noqa: F811
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            session = await service.create_session(app_name="app", user_id="u", session_id="s")
            call = types.FunctionCall(id="c1", name="weather", args={"city": "Paris"})
            response = types.FunctionResponse(id="c1", name="weather", response={"result": "sunny"})
            events = [
                at(1.0, "user", content=said("user", "Weather in Paris?")),
                at(
                    2.0,
                    "helper",
                    content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                ),
                at(
                    3.0,
                    "helper",
                    content=types.Content(
                        role="user", parts=[types.Part(function_response=response)]
                    ),
                ),
                at(4.0, "helper", content=said("model", "Sunny, 21 C.")),
                at(5.0, "user", content=said("user", "And tomorrow?")),
                at(
                    6.0,
                    "user",
                    actions=EventActions(
                        compaction=EventCompaction(
                            start_timestamp=1.0,
                            end_timestamp=4.0,
                            compacted_content=said("model", SUMMARY),
                        )
                    ),
                ),
            ]
            for item in events:
                await service.append_event(session, item)

            ours = service.session("app", "u", "s")
            live = ours.context()
            # what ADK sends: the summary at the range's end, then what came after it
            adk = _process_compaction_events(events, agent_name="helper")
            assert texts_of([e.content for e in adk]) == [SUMMARY, "And tomorrow?"]
            assert [m.role for m in live.messages] == ["assistant", "user"]
            assert [m.parts[0].text for m in live.messages] == [SUMMARY, "And tomorrow?"]  # type: ignore[union-attr]

            ((seq, compaction),) = [
                (e.seq, e.payload)
                for e in store.read(ours.id)
                if isinstance(e.payload, ContextCompacted)
            ]
            assert (compaction.reason, compaction.summarizer) == ("provider", "adk")
            assert len(compaction.replaced_message_ids) == 4
            # replay before it shows the turns it covers; ADK reads its events back unchanged
            assert len(ours.context(at=seq - 1).messages) == 5
            got = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert got is not None and got.events == events

    asyncio.run(steps())


def test_a_compaction_that_covers_no_live_message_is_only_a_record(url: str) -> None:  # noqa: F811
    async def steps() -> None:
        with SessionStore(url) as store:
            service = SessionStoreService(store)
            session = await service.create_session(app_name="app", user_id="u", session_id="s")
            await service.append_event(session, at(5.0, "user", content=said("user", "Hi")))
            compaction = EventCompaction(
                start_timestamp=1.0, end_timestamp=2.0, compacted_content=said("model", SUMMARY)
            )
            await service.append_event(
                session, at(6.0, "user", actions=EventActions(compaction=compaction))
            )
            ours = service.session("app", "u", "s")
            assert [e.type for e in store.read(ours.id)][-1] == "RecordAppended"
            assert [m.parts[0].text for m in ours.context().messages] == ["Hi"]  # type: ignore[union-attr]

    asyncio.run(steps())
