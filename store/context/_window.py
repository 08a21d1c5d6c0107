"""Keeping one session's context inside its window: the checks and the compactions, applied.

`WindowKeeper` runs this package's policies and strategies on a session's live context and
appends the events they decide. It knows the session only by what it is handed (`SessionView`):
the fold and the live context as they are now, which it reads and never changes; an append that
takes payloads and returns them recorded (and folded in, so the next read sees them); a read of
the session's earlier events; the clock; token counting; the settings and the summarizer in
force. It opens no store and imports no session, so `Session` drives it, and a test drives it
with a fold in memory and a list for a log, alike.

The caller checks its own arguments and brings the fold up to date before each call (a
`Session` folds in what other writers appended), and holds the keeper's `WindowMemory`: what
one check leaves for the next, a compaction that failed to get under the limit (a cooldown)
and the artifact trail up to the last compaction (what a summarizer that takes anchors is
shown).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sessionstore.context._confirm import (
    CompactionProposal,
    CompactionRefused,
    Confirm,
    confirmed,
    oldest_turns,
    proposal_of,
    turns_to_drop,
)
from sessionstore.context._fit import floor_tokens, plan_fit
from sessionstore.context._observe import phase, strategy_of
from sessionstore.context._policies import (
    CompactionPlan,
    Measure,
    PrunePlan,
    attempt_limits,
    cooling_down,
    measure,
    plan_compaction,
    plan_prune,
    saves_enough,
    usable_window,
)
from sessionstore.context._provider import compacts_everything, planned, widened
from sessionstore.context._strategies import guard_compaction, plan_strategy
from sessionstore.context._summarize import (
    ProviderSummary,
    Summarizer,
    SummaryAnchors,
    accepts_anchors,
    marked_summary,
    run_summarizer,
)
from sessionstore.events import (
    CompactionError,
    CompactionReason,
    CompressionConfig,
    ConcurrencyError,
    ContextCompacted,
    Message,
    MessagesReverted,
    NativePart,
    OutputsPruned,
    Part,
    PartsPreviewed,
    Payload,
    RecordedEvent,
    TextPart,
)
from sessionstore.projections import ArtifactFold, Context, ContextFold, LiveMessage, native_text

log = logging.getLogger("sessionstore")

CheckPoint = Literal["before_llm_call", "after_tool"]
"""Where in an agent loop a check runs: before a model request, or after tool results."""


@dataclass(frozen=True, slots=True)
class ContextCheck:
    """What `before_llm_call` / `after_tool_result` found and did.

    `before` and `after` measure the context on entry and on return; `pruned` and `compactions`
    are the events appended on the way (none when it was within the window); `note` says why
    it stopped where it did. `skipped` holds the compactions planned but not appended because
    their summary saved too little (`minimum_compaction_saving`), each as (tokens it would
    replace, tokens of its summary).
    """

    point: Literal["before_llm_call", "after_tool"]
    before: Measure
    after: Measure
    pruned: RecordedEvent | None
    compactions: tuple[RecordedEvent, ...]
    note: str
    skipped: tuple[tuple[int, int], ...] = ()
    declined: CompactionProposal | None = None
    """The compaction a `confirm` callback refused (nothing of it was appended)."""
    drop_turns: int = 0
    """When a compaction was declined: the fewest oldest turns `Session.drop_oldest_turns`
    would take out to get under the limit (0 when only the current turn is left)."""
    previewed: RecordedEvent | None = None
    """The `PartsPreviewed` that cut tool fields (the newest step's results first) to head and
    tail previews because pruning and compaction left the context over the usable window;
    each original is restorable (`Session.restore`)."""
    beyond_window: bool = False
    """Whether what no check may shrink (the system prompt, pinned messages and the newest user
    request) is alone over the usable window: nothing can make this context fit; unpin, fork
    with a shorter request, or use a larger window."""

    @property
    def acted(self) -> bool:
        return self.pruned is not None or bool(self.compactions) or self.previewed is not None

    @property
    def over_window(self) -> bool:
        """Whether the context is still larger than the usable window, so sending it would
        fail. With automatic management on, only when `beyond_window` (or when a confirmed
        compaction was declined, or a message other than a tool field is itself larger than
        the window): tool fields are cut to previews until the rest fits."""
        return self.after.usable is not None and self.after.tokens > self.after.usable

    def stop(self) -> None:
        """The third way out of a declined compaction: raise `CompactionRefused`, whose message
        names the other two (`drop_oldest_turns`, `fork_with_summary`). Does nothing when no
        compaction was declined."""
        if self.declined is not None:
            raise CompactionRefused(self.declined, self.drop_turns)


@dataclass(frozen=True, slots=True)
class SessionView:
    """All a `WindowKeeper` sees of its session, as callables it calls when it needs them (the
    session may replace its fold, or its settings and summarizer may change, between calls).

    `fold` and `live` are read, never changed: the only way the keeper changes the session is
    `append`, which must fold what it records in before it returns. `read(first, last)` gives
    the session's own events `first` to `last` (both included); `count` is the session's
    token counter (its encoding's)."""

    fold: Callable[[], ContextFold]
    live: Callable[[], Context]
    append: Callable[[Sequence[Payload]], list[RecordedEvent]]
    read: Callable[[int, int], Sequence[RecordedEvent]]
    clock: Callable[[], datetime]
    count: Callable[[str], int]
    config: Callable[[], CompressionConfig]
    summarizer: Callable[[], Summarizer]
    """The session's own summarizer: a call that names none uses it, and `key_events`' summary
    is always its."""


@dataclass(slots=True)
class WindowMemory:
    """What one check leaves for the next on the same session, kept by the session's handle
    (a keeper may be made for each call)."""

    fruitless: tuple[int, int] | None = None
    """(seq, tokens) after the last check whose compactions left the context overflowing:
    the next checks rest until it grows or `cooldown_events` pass."""
    trail: ArtifactFold | None = None
    """The artifact trail up to the last compaction's replaced events, folded on from there
    for the next one (summarizers that take anchors)."""


class WindowKeeper:
    """Context management for one session, through its `SessionView`: the automatic checks
    (prune, a strategy's drop, then compaction), manual compaction as a proposal that is
    applied or refused, and the other ways out of a refused one. `memory` is what its checks
    keep for the next (a fresh one when not given)."""

    def __init__(self, view: SessionView, memory: WindowMemory | None = None) -> None:
        self._view = view
        self._memory = memory if memory is not None else WindowMemory()

    def measure(self) -> Measure:
        """How full the context is against its overflow limit, changing nothing."""
        return measure(self._view.fold(), self._view.config())

    def _model(self) -> str:
        """The session's model, for the spans' `gen_ai.request.model`."""
        header = self._view.fold().header
        return header.model if header is not None else ""

    def keep_in_window(
        self,
        point: CheckPoint,
        summarizer: Summarizer | None = None,
        confirm: Confirm | None = None,
    ) -> ContextCheck:
        """The check of `Session.before_llm_call` (`after_tool_result` at `after_tool`): the
        session's strategy drops what it drops, then pruning, then compaction in up to
        `max_attempts` tries that each keep less, each compaction shown to `confirm` first."""
        view = self._view
        config = view.config()
        before = measure(view.fold(), config)
        if not before.overflowing:
            return ContextCheck(point, before, before, None, (), "within the window")
        if not config.auto:
            note = "overflowing; automatic pruning and compaction are off"
            return ContextCheck(point, before, before, None, (), note)
        session_id = view.fold().session_id
        strategy = strategy_of(config)
        start = view.fold().seq
        compactions: list[RecordedEvent] = []
        if config.strategy != "incremental":
            with phase(
                session_id,
                point,
                "selective",
                strategy=strategy,
                reason=f"overflow at {point} ({strategy})",
                tokens_before=before.tokens,
                model=self._model(),
            ) as selecting:
                dropped = self._strategy_drop(point, before)
                before_incremental = measure(view.fold(), config)
                note = _strategy_note(strategy, [_said(e.payload) for e in dropped])
                selecting.tokens_after = before_incremental.tokens
                selecting.outcome = note if dropped else "nothing to do"
            early = next((e for e in dropped if isinstance(e.payload, OutputsPruned)), None)
            compactions.extend(e for e in dropped if e is not early)
            if dropped and not before_incremental.overflowing:
                now = before_incremental
                return ContextCheck(point, before, now, early, tuple(compactions), note)
        else:
            before_incremental = before
        # incremental (and the fallback of every other strategy): prune, then summarize
        label = _incremental_label(config)
        needed = (
            before_incremental.tokens - before_incremental.limit
            if before_incremental.limit is not None
            else None
        )
        pruned = None
        reason = f"overflow at {point} ({label})"
        with phase(
            session_id,
            point,
            "prune",
            strategy=strategy,
            reason=reason,
            tokens_before=before_incremental.tokens,
            model=self._model(),
        ) as pruning:
            plan = self._prune_plan(needed)
            if plan is not None and plan.worth_it:
                pruned = view.append([plan.event(reason)])[0]
            now = measure(view.fold(), config)
            pruning.tokens_after = now.tokens
            pruning.outcome = "pruned" if pruned else "nothing worth pruning"
        skipped: list[tuple[int, int]] = []
        declined: CompactionProposal | None = None
        note = "pruning was enough" if pruned else "within the window"
        if now.overflowing and self._resting(config, now, start):
            note = "still overflowing: compaction could not shrink it further; cooling down"
        elif now.overflowing:
            note = "still overflowing: nothing left that compaction can shrink; cooling down"
            with phase(
                session_id,
                point,
                "summary",
                strategy=strategy,
                reason=f"still overflowing at {point} after pruning",
                tokens_before=now.tokens,
                model=self._model(),
            ) as summarizing:
                for attempt in range(config.max_attempts):
                    keep_turns, keep_tokens = attempt_limits(config, attempt, now.usable)
                    messages = planned(view.live().messages)
                    cut = guard_compaction(
                        plan_compaction(messages, keep_turns=keep_turns, keep_tokens=keep_tokens),
                        messages,
                    )
                    if cut is None or all(m.summary for m in cut.replaced):
                        continue  # keeps too much, or would only summarize a summary: shrink more
                    try:
                        event = self._compaction(cut, summarizer or view.summarizer(), point)
                        if not isinstance(event, int):
                            why = (
                                f"summarized {len(cut.replaced)} message(s), keeping "
                                f"{keep_turns} turn(s) and {keep_tokens:,} tokens "
                                f"(attempt {attempt + 1})"
                            )
                            by = "adaptive" if config.strategy == "adaptive" else "incremental"
                            event = event.model_copy(
                                update={"strategy": by, "why": f"{label}: {why}"}
                            )
                            if confirm is not None:
                                fold = view.fold()
                                proposal = proposal_of(fold.session_id, fold.seq, event)
                                if not confirmed(confirm, proposal):
                                    declined = proposal
                                    note = "compaction declined: nothing appended for it"
                                    break
                    except CompactionError as error:
                        error.check = ContextCheck(
                            point,
                            before,
                            now,
                            pruned,
                            tuple(compactions),
                            f"failed: {error}",
                            tuple(skipped),
                        )
                        summarizing.outcome = f"failed: {error}"
                        raise
                    if isinstance(event, int):
                        skipped.append((cut.replaced_tokens, event))
                        continue  # the summary saved too little
                    compactions.extend(view.append([event]))
                    now = measure(view.fold(), config)
                    if not now.overflowing:
                        note = f"compacted in {attempt + 1} attempt(s)"
                        break
                if now.overflowing and declined is None:
                    self._memory.fruitless = (view.fold().seq, now.tokens)
                    if skipped and not compactions:
                        note = (
                            "still overflowing: every summary saved less than "
                            f"{config.minimum_compaction_saving:.0%} of what it would replace; "
                            "cooling down"
                        )
                summarizing.tokens_after = now.tokens
                summarizing.outcome = note
        drop = 0
        if declined is not None:
            excess = now.tokens - now.limit if now.limit is not None else None
            drop = turns_to_drop(planned(view.live().messages), excess)
        previewed, beyond = None, False
        if declined is None and now.usable is not None and now.tokens > now.usable:
            previewed, beyond, note = self._fit(point, now, note)
            now = measure(view.fold(), config)
        return ContextCheck(
            point,
            before,
            now,
            pruned,
            tuple(compactions),
            note,
            tuple(skipped),
            declined,
            drop,
            previewed,
            beyond,
        )

    def _fit(
        self, point: CheckPoint, now: Measure, note: str
    ) -> tuple[RecordedEvent | None, bool, str]:
        """The last step of a check that leaves the context over the usable window: tool fields
        cut to previews (`plan_fit`), appended, and whether what no check may cut is alone over
        the window; with the check's note extended to say so."""
        view = self._view
        assert now.usable is not None
        messages = planned(view.live().messages)  # a provider's compaction item is the floor's
        # a preview resets the provider's figure: the context is then measured by our counts
        # and the safety margin, so that is what must come under the window
        margin = view.config().budgets(now.usable).safety_margin
        over = max(view.fold().tokens + margin - now.usable, 1)
        beyond = floor_tokens(messages) + margin > now.usable
        with phase(
            view.fold().session_id,
            point,
            "fit",
            strategy=strategy_of(view.config()),
            reason=f"over the window at {point} after pruning and compaction",
            tokens_before=now.tokens,
            model=self._model(),
        ) as fitting:
            plan = plan_fit(messages, over=over, count=view.count)
            previewed = view.append([plan])[0] if plan is not None else None
            fitting.tokens_after = measure(view.fold(), view.config()).tokens
            fitting.outcome = "previewed" if previewed else "nothing to cut"
        if previewed is not None:
            assert isinstance(previewed.payload, PartsPreviewed)
            cut = len(previewed.payload.previews)
            note = f"{note}; then {cut} tool field(s) cut to previews to fit the window"
        if beyond:
            note = (
                f"{note}; beyond the window: the system prompt, pinned messages and the "
                "newest request alone are over it"
            )
        return previewed, beyond, note

    def propose_compaction(
        self,
        summarizer: Summarizer | None = None,
        reason: CompactionReason = "manual",
        *,
        keep_turns: int | None = None,
        keep_tokens: int | None = None,
    ) -> CompactionProposal:
        """The compaction `compact` appends, planned and summarized, appended by nobody yet;
        `CompactionError` when there is nothing to compact or the summary saves too little."""
        view = self._view
        config = view.config()
        fold = view.fold()
        assert fold.header is not None
        turns = config.keep_recent_turns if keep_turns is None else keep_turns
        scaled = config.budgets(usable_window(fold.header)).keep_recent_tokens
        kept_tokens = scaled if keep_tokens is None else keep_tokens
        plan = plan_compaction(
            planned(view.live().messages), keep_turns=turns, keep_tokens=kept_tokens
        )
        if plan is None:
            raise CompactionError(
                f"nothing to compact: the last {turns} turns and {kept_tokens:,} tokens are kept, "
                "and what lies before them is system, pinned or summarized already"
            )
        event = self._compaction(plan, summarizer or view.summarizer(), reason)
        if isinstance(event, int):
            raise CompactionError(
                f"the summary ({event:,} tokens) saves less than "
                f"{config.minimum_compaction_saving:.0%} of the {plan.replaced_tokens:,} tokens "
                "it would replace"
            )
        fold = view.fold()
        return proposal_of(fold.session_id, fold.seq, event)

    def apply(self, proposal: CompactionProposal) -> RecordedEvent:
        """Append the compaction `proposal` shows, exactly; `ConcurrencyError` (nothing
        appended) when the session moved on since it was proposed."""
        fold = self._view.fold()
        if fold.seq != proposal.version:
            raise ConcurrencyError(fold.session_id, proposal.version, fold.seq)
        return self._view.append([proposal.event])[0]

    def drop_oldest_turns(self, n: int) -> RecordedEvent | None:
        """Take the oldest `n` user turns out of the live context by one `MessagesReverted`
        (see `Session.drop_oldest_turns`); `None` when `n` is 0."""
        messages = planned(self._view.live().messages)
        leaving = oldest_turns(messages, n)
        if not leaving:
            return None
        first = next(k for k, m in enumerate(messages) if m.id == leaving[0])
        before = [m.id for m in messages[:first] if m.id not in leaving]
        staying = [m.id for m in messages if m.id not in leaving]
        after = before[-1] if before else staying[0]
        event = MessagesReverted(
            after_message_id=after,
            reverted_message_ids=leaving,
            strategy="drop_oldest_turns",
            why=f"the oldest {n} turn(s) left ({len(leaving)} message(s)) instead of a compaction",
        )
        return self._view.append([event])[0]

    def prune(self, *, dry_run: bool = False, reason: str = "manual") -> PrunePlan | None:
        """The prune plan, appended when it is worth it and not `dry_run`; `None` when nothing
        is old enough (see `Session.prune`)."""
        plan = self._prune_plan(None)
        if plan is not None and plan.worth_it and not dry_run:
            self._view.append([plan.event(reason)])
        return plan

    def _prune_plan(self, needed: int | None) -> PrunePlan | None:
        header = self._view.fold().header
        assert header is not None
        return plan_prune(
            planned(self._view.live().messages),
            self._view.config(),
            now=self._view.clock(),
            count=self._view.count,
            usable=usable_window(header),
            needed=needed,
        )

    def _strategy_drop(self, point: CheckPoint, before: Measure) -> list[RecordedEvent]:
        """The session's strategy's events (`sessionstore.context._strategies`), appended, down to
        `strategy_target_ratio` of the usable window; none when it takes nothing out."""
        view = self._view
        config = view.config()
        target = (
            None if before.usable is None else int(before.usable * config.strategy_target_ratio)
        )
        events = plan_strategy(
            planned(view.live().messages),
            config,
            reason=point,
            tokens_before=view.fold().tokens,
            needed=None if target is None else max(before.tokens - target, 0),
            count=view.count,
            pressure=None if not before.usable else before.tokens / before.usable,
            now=view.clock(),
            summarize=self._summary_of,
        )
        return view.append(list(events)) if events else []

    def _summary_of(self, messages: tuple[LiveMessage, ...]) -> tuple[str, str] | None:
        """`key_events`' summary of the blocks it takes out: the session's summarizer, marked;
        `None` (the marker stands in) when the summarizer fails or saves too little, as the
        originals stay in the log either way and a strategy's check must not fail."""
        config = self._view.config()
        try:
            text, name = run_summarizer(self._view.summarizer(), messages, config.summary_tokens)
        except CompactionError as error:
            log.warning("key_events: the summarizer failed (%s); a marker stands in", error)
            return None
        if isinstance(text, ProviderSummary):
            log.warning("key_events: a provider's compaction item cannot stand in as text")
            return None
        text = marked_summary(text)
        tokens = self._view.count(text)
        replaced = sum(m.tokens for m in messages)
        return (text, name) if saves_enough(config, replaced, tokens) else None

    def _resting(self, config: CompressionConfig, now: Measure, start: int) -> bool:
        """Whether compaction failed to get under the limit recently and the context has not
        grown since: trying again would only summarize summaries (or pay for a summary that
        is not shorter) on every call. A strategy's drop in this very check (after `start`)
        does not count: the summary is its fallback, for what the drop could not free."""
        fold = self._view.fold()
        last = fold.last_compaction
        if cooling_down(fold, config, now) and (last is None or last[0] <= start):
            return True
        if self._memory.fruitless is None:
            return False
        seq, tokens = self._memory.fruitless
        return fold.seq - seq < config.cooldown_events and now.tokens <= tokens

    def _compaction(
        self, plan: CompactionPlan, summarizer: Summarizer, reason: CompactionReason
    ) -> ContextCompacted | int:
        """The compaction event for `plan`, or its summary's token count when the summary
        saves less than `minimum_compaction_saving` of what it would replace (not appended)."""
        config = self._view.config()
        if compacts_everything(summarizer):
            plan = widened(plan, self._view.live().messages)
        anchors = self._anchors(plan) if accepts_anchors(summarizer) else None
        text, name = run_summarizer(summarizer, plan.replaced, config.summary_tokens, anchors)
        if isinstance(text, ProviderSummary):
            summary = self._counted(text.message)
            tokens = sum(part.tokens or 0 for part in summary.parts)
        else:
            text = marked_summary(text)
            tokens = self._view.count(text)
            summary = Message(role="user", parts=(TextPart(text=text, tokens=tokens),))
        if not saves_enough(config, plan.replaced_tokens, tokens):
            return tokens
        before = self._view.fold().tokens
        return ContextCompacted(
            summary=summary,
            first_kept_message_id=plan.first_kept_message_id,
            replaced_message_ids=tuple(m.id for m in plan.replaced),
            tokens_before=before,
            tokens_after=before - plan.replaced_tokens + tokens,
            reason=reason,
            summarizer=name,
        )

    def _counted(self, message: Message) -> Message:
        """A provider's summary with each part counted as an append counts it (a provider's
        item by what its own render sends back)."""
        parts = [
            part
            if part.tokens is not None
            else part.model_copy(update={"tokens": self._view.count(_part_text(part))})
            for part in message.parts
        ]
        return message.model_copy(update={"parts": tuple(parts)})

    def _anchors(self, plan: CompactionPlan) -> SummaryAnchors:
        """The previous summary among the replaced messages, and the artifact trail of the whole
        log so far: the summary is the session's state when it is written, so an error or a
        file that only a pruned output of the kept messages still shows is not lost with it.
        The trail is folded on from the last compaction's, so each compaction reads only the
        events since."""
        current = self._view.fold()
        assert current.header is not None
        fold = self._memory.trail if self._memory.trail is not None else ArtifactFold()
        for event in self._view.read(fold.seq + 1, current.seq):
            fold.apply(event)
        self._memory.trail = fold
        trail = fold.trail()
        previous = [
            "".join(p.text for p in m.parts if isinstance(p, TextPart))
            for m in plan.replaced
            if m.summary
        ]
        return SummaryAnchors(
            previous="\n\n".join(previous) if previous else None,
            trail=trail,
            encoding=current.header.encoding,
            usable=usable_window(current.header),
        )


def _part_text(part: Part) -> str:
    """The text a part of a provider's summary is counted by."""
    if isinstance(part, NativePart):
        return native_text(part)
    return part.text if isinstance(part, TextPart) else ""


def _said(payload: object) -> str:
    """What a strategy's event says of itself (`why`, or a prune's `reason`)."""
    return str(getattr(payload, "why", "") or getattr(payload, "reason", ""))


def _strategy_note(strategy: str, said: list[str]) -> str:
    """A check's note from what its strategy's events say: each account once (a drop's `why`
    may name the prune that came before it), under the strategy's name once."""
    unique = [w for w in dict.fromkeys(said) if w and not any(w != o and w in o for o in said)]
    text = "; ".join(unique)
    return text if text.startswith(f"{strategy}:") else f"{strategy}: {text}"


def _incremental_label(config: CompressionConfig) -> str:
    """What the prune-then-summarize path is, for the session's strategy: the strategy itself,
    adaptive's light stage, or the fallback of a dropping strategy that could not get under."""
    if config.strategy == "incremental":
        return "incremental"
    if config.strategy == "adaptive":
        return "adaptive, light stage"
    return f"incremental, fallback of {config.strategy}"
