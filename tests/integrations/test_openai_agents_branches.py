"""`AdvancedAgentsSession`: the SDK's `AdvancedSQLiteSession` is the oracle of every return
shape (the same calls on both give the same values, but times), branches are forks, branch
names stay taken, usage follows the turn it was stored for, and turns are a fold of the items."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner
from agents.extensions.memory import AdvancedSQLiteSession
from agents.result import RunResult
from agents.run_context import RunContextWrapper
from agents.testing.model import ScriptedModel
from agents.usage import Usage
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from sessionstore import SessionStore
from sessionstore.integrations.openai_agents import AdvancedAgentsSession, context_filter
from sessionstore.integrations.openai_agents._turns import tool_usage, turn_items

ITEMS: list[Any] = [
    {"role": "user", "content": "Why did the build fail?"},
    {"type": "function_call", "name": "read_log", "arguments": "{}", "call_id": "c1"},
    {"type": "function_call_output", "call_id": "c1", "output": "ImportError: yaml"},
    {"role": "assistant", "content": "A missing import."},
    {"role": "user", "content": [{"type": "input_text", "text": "Fix it with a lazy import."}]},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": "And the tests?"},
    {"type": "function_call", "name": "run", "namespace": "ci", "arguments": "{}", "call_id": "c2"},
]


def run_result(input_tokens: int) -> RunResult:
    usage = Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=30,
        total_tokens=input_tokens + 30,
        input_tokens_details=InputTokensDetails(cached_tokens=10, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=5),
    )
    return RunResult(
        input="",
        new_items=[],
        raw_responses=[],
        final_output="",
        input_guardrail_results=[],
        output_guardrail_results=[],
        tool_input_guardrail_results=[],
        tool_output_guardrail_results=[],
        context_wrapper=RunContextWrapper(context=None, usage=usage),
        _last_agent=Agent(name="a", model=ScriptedModel()),
        interruptions=[],
    )


async def script(session: Any) -> list[Any]:
    """One conversation with branches, pops, usage and searches; every value it reads."""
    seen: list[Any] = []
    await session.add_items(ITEMS)
    await session.store_run_usage(run_result(50))
    seen += [await session.get_conversation_turns(), await session.find_turns_by_content("IMPORT")]
    seen += [await session.get_conversation_by_turns(), await session.get_tool_usage()]
    seen.append(await session.create_branch_from_turn(2, "lazy"))
    await session.add_items([{"role": "user", "content": "Fix it eagerly."}])
    await session.store_run_usage(run_result(70))
    seen += [await session.get_items(), await session.get_items(2, "main")]
    seen.append(await session.pop_item())
    seen += [await session.get_turn_usage(), await session.get_turn_usage(3, "main")]
    await session.add_items([{"role": "user", "content": "Fix it eagerly, again."}])
    seen += [await session.get_turn_usage(2), await session.get_session_usage()]
    await session.switch_to_branch("main")
    seen.append(await session.get_session_usage("main"))
    await session.delete_branch("lazy")
    seen.append(
        [{k: v for k, v in b.items() if k != "created_at"} for b in await session.list_branches()]
    )
    for failing in (
        session.create_branch_from_turn(2, "lazy"),
        session.switch_to_branch("lazy"),
        session.create_branch_from_turn(9),
        session.delete_branch("main"),
    ):
        try:
            await failing
        except ValueError as exc:
            seen.append(str(exc))
    await session.clear_session()
    seen += [await session.get_items(), await session.get_session_usage()]
    seen.append(await session.list_branches())
    return [without_times(value) for value in seen]


def without_times(value: Any) -> Any:
    if isinstance(value, list):
        return [without_times(v) for v in value]
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "timestamp"}
    return value


def test_every_call_returns_what_the_sdks_advanced_session_returns(store: SessionStore) -> None:
    oracle = AdvancedSQLiteSession(session_id="s", create_tables=True)
    try:
        expected = asyncio.run(script(oracle))
    finally:
        oracle.close()
    ours = AdvancedAgentsSession("s", store)
    assert asyncio.run(script(ours)) == expected
    assert expected[4] == "lazy"  # the script did branch: the comparison is not of nothing


def test_a_branch_is_a_fork_of_the_session_just_before_its_turn(store: SessionStore) -> None:
    session = AdvancedAgentsSession("s", store)
    asyncio.run(session.add_items(ITEMS))
    asyncio.run(session.create_branch_from_turn(3, "tests"))
    [fork] = [info for info in store.sessions() if info.id != "s"]
    turn_3_seq = [
        e.seq for e in store.read("s") if getattr(e.payload, "message", None) is not None
    ][6]
    assert (fork.parent_id, fork.parent_seq) == ("s", turn_3_seq - 1)
    assert asyncio.run(session.get_items()) == ITEMS[:6]
    assert store.session("s").state()["openai-agents.branch/tests"] == fork.id


def test_usage_of_a_popped_turn_is_not_reported_for_the_turn_that_takes_its_number(
    store: SessionStore,
) -> None:
    session = AdvancedAgentsSession("s", store)
    asyncio.run(session.add_items(ITEMS[:4]))
    asyncio.run(session.add_items([{"role": "user", "content": "second"}]))
    asyncio.run(session.store_run_usage(run_result(50)))
    stored = asyncio.run(session.get_turn_usage(2))
    assert isinstance(stored, dict)
    assert stored["input_tokens"] == 50
    asyncio.run(session.pop_item())
    asyncio.run(session.add_items([{"role": "user", "content": "second, again"}]))
    assert asyncio.run(session.get_turn_usage(2)) == {}
    assert asyncio.run(session.get_session_usage()) is None


def test_two_instances_racing_for_one_branch_name_give_it_to_one(store: SessionStore) -> None:
    first, second = AdvancedAgentsSession("s", store), AdvancedAgentsSession("s", store)
    asyncio.run(first.add_items(ITEMS))
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def take(session: AdvancedAgentsSession) -> None:
        start.wait()
        try:
            outcomes.append(asyncio.run(session.create_branch_from_turn(2, "only")))
        except ValueError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=take, args=(s,)) for s in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == [
        "Branch ID 'only' has already been used. Choose a new branch ID.",
        "only",
    ]
    assert [b["branch_id"] for b in asyncio.run(first.list_branches())] == ["main", "only"]


ROLES = st.sampled_from(
    [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "o"},
        {"type": "reasoning", "summary": []},
    ]
)


@settings(max_examples=200)
@given(st.lists(ROLES, max_size=30))
def test_a_turn_is_a_user_message_and_what_follows_it(items: list[Any]) -> None:
    rows = turn_items([(str(n), item) for n, item in enumerate(items)])
    for n, row in enumerate(rows):
        assert row.turn == sum(1 for item in items[: n + 1] if item.get("role") == "user")
    calls = [row.turn for row in rows if row.type == "function_call"]
    assert tool_usage(rows) == [("f", calls.count(t), t) for t in sorted(set(calls))]


def test_a_run_with_the_context_filter_stores_its_items_once_on_the_current_branch(
    store: SessionStore,
) -> None:
    session = AdvancedAgentsSession("s", store)
    asyncio.run(session.add_items(ITEMS[:4]))
    asyncio.run(session.create_branch_from_turn(1, "again"))
    agent = Agent(name="a", model=ScriptedModel([{"output": []}]))
    config = RunConfig(call_model_input_filter=context_filter(session), tracing_disabled=True)
    asyncio.run(Runner.run(agent, "Why, again?", session=session, run_config=config))
    assert asyncio.run(session.get_items()) == [{"content": "Why, again?", "role": "user"}]
    assert asyncio.run(session.get_items(branch_id="main")) == ITEMS[:4]
