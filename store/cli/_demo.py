"""`sessionstore demo`: the main job, end to end, with no network and no model.

A scripted coding agent works through a task for 60 turns; on the way the store truncates
its one huge output, prunes old outputs and compacts the conversation. Then the demo audits
the session: the timeline of what changed the context, a replay to before the first
compaction compared with now, a pruned output restored byte for byte, and the hash chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sessionstore.cli._scripted import coding_session, drive
from sessionstore.events import ContextCompacted, OutputsPruned, ToolResultPart
from sessionstore.projections import LiveMessage, LiveToolResult, diff_contexts
from sessionstore.session import Session, SessionStore

DEMO_WINDOW = 128_000
DEMO_MODEL = "scripted-coder"


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the demo made and checked, for its caller (and its tests)."""

    session_id: str
    events: int
    llm_calls: int
    peak_tokens: int
    truncated: int
    prunes: int
    compactions: int
    replayed_at: int | None
    restored_part: str | None
    chain_ok: bool


def run_demo(store: SessionStore, say: Callable[[str], None], *, turns: int = 60) -> DemoResult:
    """Play the scripted session into `store`, telling `say` what happens, line by line."""
    s = store.create_session(
        model=DEMO_MODEL, context_window=DEMO_WINDOW, title="demo: fix the failing tests"
    )
    say(f"Playing a scripted coding agent for {turns} turns (reads, greps, edits, test runs)")
    say(f"into session {s.id}, window {DEMO_WINDOW:,} tokens; no network, no model.")
    report = drive(s, coding_session(turns))
    usable = DEMO_WINDOW - s.header.output_reserve
    events = store.read(s.id)
    truncated = [
        part
        for event in events
        if event.type == "MessageAppended"
        for part in event.payload.message.parts  # type: ignore[attr-defined]
        if isinstance(part, ToolResultPart) and part.truncation is not None
    ]
    prunes = [e for e in events if isinstance(e.payload, OutputsPruned)]
    compactions = [e for e in events if isinstance(e.payload, ContextCompacted)]
    say("")
    say(
        f"{s.version:,} events, {report.llm_calls:,} model calls; the largest context sent was "
        f"{report.peak_tokens:,} of {usable:,} usable tokens."
    )
    for part in truncated:
        assert part.truncation is not None
        say(
            f"Truncated on append: {part.name} output of {len(part.output.encode()):,} bytes, "
            f"shown as {len(part.truncation.shown.encode()):,} (part {part.id})."
        )
    freed = sum(e.payload.tokens_freed for e in prunes)  # type: ignore[attr-defined]
    say(f"Pruned old tool outputs {_times(len(prunes))}, {freed:,} tokens in all.")
    say(f"Compacted the conversation {_times(len(compactions))}.")

    say("")
    say("Timeline of what changed the context (`timeline` shows every event):")
    for row in s.timeline():
        if row.type not in ("MessageAppended", "MessagesReverted") or "truncated" in row.summary:
            say(f"  {row.seq:>5}  {row.time:%H:%M:%S}  {row.summary}")

    replayed_at = _replay(s, compactions[0].seq - 1 if compactions else None, say)
    restored = _restore(store, s, say)
    chain = store.verify(s.id)
    say("")
    say(
        f"Hash chain: {chain.events_checked:,} events verified, intact."
        if chain.ok
        else f"Hash chain BROKEN at seq {chain.first_broken_seq}: {chain.reason}"
    )
    return DemoResult(
        session_id=s.id,
        events=store.version(s.id),
        llm_calls=report.llm_calls,
        peak_tokens=report.peak_tokens,
        truncated=len(truncated),
        prunes=len(prunes),
        compactions=len(compactions),
        replayed_at=replayed_at,
        restored_part=restored,
        chain_ok=chain.ok,
    )


def _replay(s: Session, seq: int | None, say: Callable[[str], None]) -> int | None:
    if seq is None:
        return None
    then, now = s.context(at=seq), s.context()
    diff = diff_contexts(then, now)
    summaries = [m for m in diff.entered if m.summary]
    say("")
    say(f"Replay: the context at seq {seq}, just before the first compaction, against now:")
    say(f"  then: {len(then.messages)} messages, {then.tokens:,} tokens")
    say(f"  now:  {len(now.messages)} messages, {now.tokens:,} tokens")
    say(
        f"  {len(diff.left)} messages left the context, {len(diff.entered)} entered "
        f"({len(summaries)} of them summaries); {len(diff.changed)} outputs changed status."
    )
    for message in diff.left[:3]:
        say(f"  - {message.role} {message.id}: {_gist(message)}")
    say(f"  - ... and {len(diff.left) - 3} more" if len(diff.left) > 3 else "")
    for message in summaries[:1]:
        say(f"  + summary {message.id} ({message.tokens:,} tokens): {_gist(message)}")
    return seq


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _gist(message: LiveMessage) -> str:
    """The first words of a message, on one line."""
    part = message.parts[0]
    text = " ".join(str(getattr(part, "text", None) or getattr(part, "output", "")).split())
    return text if len(text) <= 70 else text[:69] + "…"


def _restore(store: SessionStore, s: Session, say: Callable[[str], None]) -> str | None:
    """Restore the largest pruned output still in the context that was not truncated (a
    truncated one would bring back its whole original, far more than the model was shown)."""
    originals = {
        part.id: part.output
        for event in store.read(s.id)
        if event.type == "MessageAppended"
        for part in event.payload.message.parts  # type: ignore[attr-defined]
        if isinstance(part, ToolResultPart) and part.truncation is None
    }
    pruned = [
        part
        for message in s.context().messages
        for part in message.parts
        if isinstance(part, LiveToolResult) and part.status == "pruned" and part.id in originals
    ]
    if not pruned:
        return None
    part = max(pruned, key=lambda p: len(originals[p.id]))
    event = s.restore([part.id])
    assert event is not None
    restored = s.context().message(_owner(s, part.id)).parts[0]
    assert isinstance(restored, LiveToolResult)
    same = "identical to" if restored.output == originals[part.id] else "DIFFERENT from"
    say("")
    say(f"Restore: part {part.id} was shown to the model as")
    say(f"  {part.output}")
    say(
        f"  restored at seq {event.seq}: {len(restored.output.encode()):,} bytes, "
        f"{restored.tokens:,} tokens, {same} the original output."
    )
    return part.id


def _owner(s: Session, part_id: str) -> str:
    return next(m.id for m in s.context().messages if any(p.id == part_id for p in m.parts))
