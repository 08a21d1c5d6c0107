"""Compaction the user confirms, on every backend: the plan is shown before anything is
written, a refusal writes nothing and leaves three ways out (drop the oldest turns, a fork
that carries the summary, stop), and `propose_compaction`/`apply` are the same two steps."""

from __future__ import annotations

import asyncio

import pytest

from sessionstore import (
    AsyncSessionStore,
    CompactionError,
    CompactionProposal,
    CompactionRefused,
    ConcurrencyError,
    InvalidArgument,
    Session,
    SessionStore,
    ToolCall,
)
from sessionstore.events import MessagesReverted
from tests.conftest import Backend


def crowded_session(store: SessionStore) -> Session:
    """Eight turns of long user text (which no prune can clear) in a 3,000-token window."""
    s = store.create_session(model="m", context_window=3_000, output_reserve=0)
    s.configure(protect_tokens=200, minimum_prune=100, keep_recent_tokens=0, safety_margin=0)
    s.configure(user_message_ratio=1.0)
    for turn in range(8):
        s.append_user(f"turn {turn}: " + "please " * 400)
        s.append_assistant(tool_calls=[ToolCall(id=f"c{turn}", name="bash", input={})])
        s.append_tool_result(f"c{turn}", output="ok")
    return s


def test_an_accepted_compaction_is_the_one_the_callback_was_shown(store: SessionStore) -> None:
    s = crowded_session(store)
    shown: list[CompactionProposal] = []

    def confirm(proposal: CompactionProposal) -> bool:
        assert store.session(s.id).version == proposal.version  # nothing appended yet
        shown.append(proposal)
        return True

    check = s.before_llm_call(confirm=confirm)
    assert len(shown) == len(check.compactions) == 1
    proposal, event = shown[0], check.compactions[0]
    assert event.seq == proposal.version + 1
    assert event.payload == proposal.event
    assert event.payload.replaced_message_ids == proposal.leaving
    assert (proposal.tokens_before, proposal.tokens_after) == (
        event.payload.tokens_before,
        event.payload.tokens_after,
    )
    assert proposal.leaving_tokens - proposal.summary_tokens == (
        proposal.tokens_before - proposal.tokens_after
    )
    assert proposal.reason == "before_llm_call"
    assert proposal.summary.startswith("[Summary of earlier conversation]")
    assert check.declined is None and check.drop_turns == 0


def test_a_refused_compaction_writes_nothing_and_names_the_ways_out(store: SessionStore) -> None:
    s = crowded_session(store)
    version = s.version
    check = s.before_llm_call(confirm=lambda proposal: False)
    assert s.version == store.session(s.id).version == version
    assert (check.pruned, check.compactions) == (None, ())
    assert check.note == "compaction declined: nothing appended for it"
    assert check.declined is not None and check.declined.version == version
    assert check.after.tokens == check.before.tokens > check.after.limit  # type: ignore[operator]
    assert (check.before.tokens, check.before.limit) == (3_264, 2_400)
    assert check.drop_turns == 3  # 864 tokens over: three turns of about 410 tokens
    with pytest.raises(CompactionRefused) as refused:
        check.stop()
    assert str(refused.value) == (
        f"compaction of session {s.id!r} refused ({check.declined.tokens_before:,} -> "
        f"{check.declined.tokens_after:,} tokens); nothing was appended. Instead: "
        "s.drop_oldest_turns(3) takes the oldest turns out of the live context, or "
        "s.fork_with_summary(proposal) starts a new session with the summary and the kept "
        "messages"
    )
    assert refused.value.proposal is check.declined
    assert s.version == version


def test_a_confirm_that_fails_fails_the_compaction_and_writes_it_not(
    store: SessionStore,
) -> None:
    s = crowded_session(store)
    version = s.version
    with pytest.raises(CompactionError) as wrong:
        s.before_llm_call(confirm=lambda proposal: "yes")
    assert str(wrong.value) == "confirm must return True or False, got str 'yes'"
    assert wrong.value.check.compactions == ()  # type: ignore[attr-defined]

    def broken(proposal: CompactionProposal) -> bool:
        raise KeyError("tokens")

    with pytest.raises(CompactionError, match=r"^the confirm callback failed: KeyError: 'tokens'$"):
        s.after_tool_result(confirm=broken)
    with pytest.raises(InvalidArgument, match="confirm must be callable or None"):
        s.after_tool_result(confirm=True)  # type: ignore[arg-type]
    assert store.session(s.id).version == version


def test_dropping_the_oldest_turns_is_one_revert_that_replay_undoes(store: SessionStore) -> None:
    s = crowded_session(store)
    check = s.before_llm_call(confirm=lambda proposal: False)
    before = s.context()
    dropped = [m.id for m in before.messages[:9]]  # three turns: user, assistant, tool each
    event = s.drop_oldest_turns(check.drop_turns)
    assert event is not None and isinstance(event.payload, MessagesReverted)
    assert event.payload.reverted_message_ids == tuple(dropped)
    assert event.payload.after_message_id == before.messages[9].id  # nothing precedes them
    assert event.payload.strategy == "drop_oldest_turns"
    row = next(r for r in s.timeline() if r.seq == event.seq)
    assert row.summary == (
        "drop_oldest_turns: took 9 message(s) out of the context; the oldest 3 turn(s) left "
        "(9 message(s)) instead of a compaction"
    )
    assert s.restore_messages(event.seq) is not None  # an undo like any strategy's drop
    assert [m.id for m in s.context().messages] == [m.id for m in before.messages]
    s.drop_oldest_turns(check.drop_turns)
    assert [m.id for m in s.context().messages] == [m.id for m in before.messages[9:]]
    assert not s.measure().overflowing
    assert s.before_llm_call(confirm=lambda proposal: False).acted is False
    assert s.context(at=event.seq - 1) == before  # replay still has them
    assert store.session(s.id).context() == s.context()  # and replays the drop exactly
    back = store.fork(s.id, at=event.seq - 1)
    assert back.context().messages == before.messages
    with pytest.raises(InvalidArgument, match="less than the 5 user turn"):
        s.drop_oldest_turns(5)
    assert s.drop_oldest_turns(0) is None


def test_a_fork_with_the_summary_leaves_the_parent_untouched(store: SessionStore) -> None:
    s = crowded_session(store)
    version = s.version
    check = s.before_llm_call(confirm=lambda proposal: False)
    assert check.declined is not None
    fork = s.fork_with_summary(check.declined, title="carried on")
    assert store.session(s.id).version == s.version == version
    messages = fork.context().messages
    assert messages[0].summary and messages[0].parts[0].text == check.declined.summary  # type: ignore[union-attr]
    kept = [m.id for m in s.context().messages if m.id not in check.declined.leaving]
    assert [m.id for m in messages[1:]] == kept
    assert fork.header.parent_session_id == s.id and fork.header.parent_seq == version
    assert fork.header.title == "carried on"
    assert fork.version == 2  # its start and the compaction, in one transaction
    assert store.session(fork.id).context() == fork.context()  # replay is exact
    assert fork.context(at=1).messages == s.context().messages  # the originals are there
    assert fork.tokens == check.declined.tokens_after


def test_propose_and_apply_are_compact_in_two_steps(store: SessionStore) -> None:
    s = crowded_session(store)
    version = s.version
    proposal = s.propose_compaction(keep_turns=2)
    assert (proposal.reason, proposal.version, s.version) == ("manual", version, version)
    assert store.session(s.id).version == version  # proposing wrote nothing
    event = s.apply(proposal)
    assert event.payload == proposal.event and event.seq == version + 1
    with pytest.raises(ConcurrencyError):  # the same plan again: the session moved on
        s.apply(proposal)
    assert s.version == version + 1


def test_a_stale_proposal_is_refused_and_writes_nothing(store: SessionStore) -> None:
    s = crowded_session(store)
    proposal = s.propose_compaction(keep_turns=2)
    other = store.session(s.id)
    other.append_user("one more thing")  # another handle moves the session on
    with pytest.raises(ConcurrencyError) as stale:
        s.apply(proposal)
    assert (stale.value.expected, stale.value.actual) == (proposal.version, proposal.version + 1)
    assert store.session(s.id).version == proposal.version + 1
    unrelated = store.create_session(model="m")
    with pytest.raises(InvalidArgument, match="proposal is for session"):
        unrelated.apply(proposal)


def test_the_async_face_awaits_an_async_confirm(backend: Backend) -> None:
    async def run() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.session(crowded_session(store.sync).id)
            version = s.version
            asked: list[int] = []

            async def refuse(proposal: CompactionProposal) -> bool:
                await asyncio.sleep(0)
                asked.append(proposal.version)
                return False

            check = await s.before_llm_call(confirm=refuse)
            assert (asked, check.compactions, s.version) == ([version], (), version)
            assert check.declined is not None
            fork = await s.fork_with_summary(check.declined)
            assert fork.version == 2 and s.version == version

            async def accept(proposal: CompactionProposal) -> bool:
                return True

            check = await s.before_llm_call(confirm=accept)
            assert len(check.compactions) == 1 and s.version == version + 1
            proposal = await s.propose_compaction(keep_turns=1)
            assert (await s.apply(proposal)).payload == proposal.event
            assert await s.drop_oldest_turns(0) is None

    asyncio.run(run())
