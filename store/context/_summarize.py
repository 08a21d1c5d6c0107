"""Summarizers for compaction: anything that turns the messages to replace into text.

A `Summarizer` is a callable `(messages, target_tokens) -> str`, or one returning an awaitable
of it. One that also takes a keyword `anchors` (`SummaryAnchors`: the previous summary, the
artifact trail computed from the log, the session's encoding) is given them: the session
inspects its signature, so a two-argument summarizer keeps working unchanged.
`ExtractiveSummarizer` works offline with no model and writes the structured summary of
`sessionstore.projections._summary`; `sessionstore.context._summarize_model` asks a model (any
OpenAI-compatible chat endpoint) and completes its answer with the same exact sections.

A summarizer may answer an `AttributedSummary`, text that names who actually wrote it (a
fallback, say): the compaction event records that name; or a `ProviderSummary`, a provider's
own compaction item, which the compaction records verbatim as its summary.

Where an awaitable summary is awaited: when `AsyncSession` runs the sync core in a worker
thread, on its caller's event loop (see `CallerLoop`); in a thread with no running loop, in
a loop of its own (`asyncio.run`); in a thread whose loop is running, nowhere: blocking that
loop on its own work would deadlock it, so it is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, Self

from sessionstore.context._tokens import count
from sessionstore.events import (
    DEFAULT_ENCODING,
    CompactionError,
    InvalidEvent,
    Message,
    MessageAppended,
    RecordedEvent,
    TextPart,
    ToolResultPart,
    check_json_value,
    described,
)
from sessionstore.projections import (
    SUMMARY_MARKER,
    ArtifactFold,
    ArtifactTrail,
    LiveMessage,
    LiveToolResult,
    StructuredSummary,
    merge,
    parse_summary,
    render_summary,
    requests_tokens,
    summary_from_trail,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

log = logging.getLogger("sessionstore.summarize")


class PlainSummarizer(Protocol):
    def __call__(
        self, messages: Sequence[LiveMessage], target_tokens: int
    ) -> str | Awaitable[str]: ...


class AnchoredSummarizer(Protocol):
    def __call__(
        self, messages: Sequence[LiveMessage], target_tokens: int, *, anchors: SummaryAnchors
    ) -> str | Awaitable[str]: ...


Summarizer = PlainSummarizer | AnchoredSummarizer
"""A summarizer: `(messages, target_tokens)`, with or without a keyword `anchors`."""


@dataclass(frozen=True, slots=True)
class SummaryAnchors:
    """What a summarizer that asks for `anchors` is given besides the messages to replace.

    `previous` is the text of the summary among them (the one compacting again merges into),
    or `None`; `trail` is the session's artifact trail up to the last event replaced, read
    from the log (originals, not what pruning left); `encoding` is the session's tiktoken
    encoding, to count the summary as the session will; `usable` is the session's usable window
    (its context window less the output reserve), `None` when unknown: the user's requests get
    a share of it, so a larger window keeps more of them word for word."""

    previous: str | None
    trail: ArtifactTrail
    encoding: str = DEFAULT_ENCODING
    usable: int | None = None


class AttributedSummary(str):
    """Summary text naming the summarizer that wrote it, when that is not the one called (a
    model summarizer's fallback): the compaction event records this name."""

    summarizer: str

    def __new__(cls, text: str, summarizer: str) -> Self:
        made = super().__new__(cls, text)
        made.summarizer = summarizer
        return made


class ProviderSummary(AttributedSummary):
    """A summary a provider made (its compaction item, see `_summarize_provider`): the text is
    what another provider's render shows of it, and `message` holds the provider's items
    verbatim, which the compaction records as its summary. Everything before the boundary but
    the system prompt is replaced, pins too: the provider's item stands for all of it."""

    message: Message

    def __new__(cls, text: str, summarizer: str, message: Message) -> ProviderSummary:
        made = super().__new__(cls, text, summarizer)
        made.message = message
        return made


def fallen_back(
    fallback: Summarizer,
    failed: str,
    error: Exception,
    messages: Sequence[LiveMessage],
    target_tokens: int,
    anchors: SummaryAnchors | None,
) -> AttributedSummary:
    """The summary `fallback` writes when the summarizer `failed` raised `error`, named as
    such in the compaction event. `TypeError` when the fallback returns no text."""
    call: Callable[..., object] = fallback
    name = summarizer_name(call)
    log.warning("the summarizer %s failed (%s); %s writes the summary", failed, error, name)
    if anchors is not None and accepts_anchors(call):
        result = call(messages, target_tokens, anchors=anchors)
    else:
        result = call(messages, target_tokens)
    if inspect.isawaitable(result):
        result = _await(result)
    if not isinstance(result, str):
        raise TypeError(f"the fallback {name} returned {type(result).__name__}, not text")
    return AttributedSummary(result, f"{name} (fallback: {failed} failed)")


def marked_summary(text: str) -> str:
    """`text` opening with `SUMMARY_MARKER`, so every render shows the model this user turn is
    a summary, whoever wrote it (a summarizer of one's own, a model)."""
    return text if text.startswith(SUMMARY_MARKER) else f"{SUMMARY_MARKER}\n{text}"


def summarizer_name(summarizer: Callable[..., object]) -> str:
    """What the compaction event records as its `summarizer`: its `name` or `__name__` when
    that is text, else its type's name."""
    for attribute in ("name", "__name__"):
        name = getattr(summarizer, attribute, None)
        if isinstance(name, str) and name:
            return name
    return type(summarizer).__name__


def accepts_anchors(summarizer: Callable[..., object]) -> bool:
    """Whether `summarizer` takes a keyword `anchors` (named, not only through `**kwargs`: a
    wrapper passing everything on to a two-argument function would break). A class's
    `__call__` is inspected once per class."""
    if inspect.isfunction(summarizer) or inspect.ismethod(summarizer):
        return _takes_anchors(summarizer)
    kind = type(summarizer)
    known = _ANCHORED.get(kind)
    if known is None:
        call = getattr(kind, "__call__", None)  # noqa: B004 (the class's, not the instance's)
        known = _ANCHORED[kind] = call is not None and _takes_anchors(call)
    return known


_ANCHORED: dict[type, bool] = {}
"""Whether each summarizer class's `__call__` takes anchors (an idempotent cache: a race only
inspects twice)."""


def _takes_anchors(function: Callable[..., object]) -> bool:
    try:
        parameter = inspect.signature(function).parameters.get("anchors")
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return parameter is not None and parameter.kind in kinds


def run_summarizer(
    summarizer: Summarizer,
    messages: Sequence[LiveMessage],
    target_tokens: int,
    anchors: SummaryAnchors | None = None,
) -> tuple[str, str]:
    """The summary text and the name of the summarizer that wrote it; `anchors` are passed
    when given (give them only to a summarizer that `accepts_anchors`). `CompactionError` when
    the summarizer fails, returns something that is not text (or an awaitable of text),
    returns blank text, or text that cannot be stored."""
    name = summarizer_name(summarizer)
    call: Callable[..., object] = summarizer
    result = called_back(
        f"the summarizer {name}",
        lambda: (
            call(messages, target_tokens)
            if anchors is None
            else call(messages, target_tokens, anchors=anchors)
        ),
    )
    if not isinstance(result, str):
        raise CompactionError(f"the summarizer {name} returned {described(result)}, not text")
    if isinstance(result, AttributedSummary):
        name = result.summarizer
    if not result.strip():
        raise CompactionError(f"the summarizer {name} returned no text")
    text = result if isinstance(result, ProviderSummary) else str(result)
    try:
        check_json_value(text, "summary")
    except InvalidEvent as exc:
        message = f"the summarizer {name} returned text that cannot be stored: {exc}"
        raise CompactionError(message) from None
    return text, name


def called_back(who: str, call: Callable[[], object]) -> object:
    """What a caller's callback (a summarizer, a confirm) returns, awaited when it is an
    awaitable (on the caller's loop: see `CallerLoop`). `CompactionError` naming `who` and
    the error when it raises: the compaction fails, and nothing of it is appended."""
    try:
        result = call()
        if inspect.isawaitable(result):
            result = _await(result)
    except Exception as exc:
        raise CompactionError(f"{who} failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    return result


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:200] if lines else ""


def _await(result: Awaitable[object]) -> object:
    async def wait() -> object:
        return await result

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        caller = _CALLER_LOOP.get()
        return asyncio.run(wait()) if caller is None else caller.wait_for(wait(), result)
    if inspect.iscoroutine(result):
        result.close()  # never awaited: close it rather than leave a warning behind
    raise RuntimeError(
        "an async summarizer cannot run while this thread's event loop is running; "
        "use AsyncSession (await s.before_llm_call()), or run the sync check on the store's "
        "workers (await AsyncSessionStore.from_store(store).run_sync(s.before_llm_call))"
    )


class CallerLoop:
    """The event loop of an `AsyncSession` caller whose sync call runs in a worker thread.

    An async summary met on the way is awaited there, natively: the loop is free, its caller
    being suspended on the worker. `cancel()` (the caller was cancelled, or timed out) cancels
    the summary in flight and refuses any later one, so the compaction fails with
    `CompactionError` and appends nothing instead of landing after its caller gave up.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._cancelled = False
        self._summary: concurrent.futures.Future[object] | None = None

    @contextmanager
    def awaiting(self) -> Iterator[None]:
        """Within it (in the worker), async summaries are awaited on this loop."""
        token = _CALLER_LOOP.set(self)
        try:
            yield
        finally:
            _CALLER_LOOP.reset(token)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._summary is not None:
                self._summary.cancel()

    def wait_for(self, coroutine: Coroutine[Any, Any, object], result: object) -> object:
        """`coroutine`'s value, computed on the loop; this (worker) thread waits for it."""
        with self._lock:
            try:
                if self._cancelled:
                    raise concurrent.futures.CancelledError("its caller was cancelled")
                summary = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
            except BaseException:  # cancelled, or the loop is closed: it will never run
                coroutine.close()
                if inspect.iscoroutine(result):
                    result.close()
                raise
            self._summary = summary
        try:
            return summary.result()
        except concurrent.futures.CancelledError:
            if self._cancelled:  # not the summarizer's own doing: say whose
                raise concurrent.futures.CancelledError("its caller was cancelled") from None
            raise
        finally:
            with self._lock:
                self._summary = None


_CALLER_LOOP: ContextVar[CallerLoop | None] = ContextVar("sessionstore_caller_loop", default=None)


# offline


class ExtractiveSummarizer:
    """The structured summary (`sessionstore.projections._summary`), built with no model: the user's
    requests in order, decisions and preferences in their words, files and what was done to
    each, commands and errors with their fixes, the current state and the next steps, merged
    into the previous summary's sections and fitted to `target_tokens`, the requests to a
    budget of their own (a tenth of the anchors' `usable` window).

    With anchors, the sections come from the session's artifact trail (every event up to the
    compaction, originals included); without (called directly, or by code that passes only
    the messages), from the messages themselves, and the summary among them is the previous
    one."""

    name = "extractive"

    def __call__(
        self,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        *,
        anchors: SummaryAnchors | None = None,
    ) -> str:
        summary = structured_summary(messages, anchors)
        encoding = anchors.encoding if anchors is not None else DEFAULT_ENCODING
        usable = anchors.usable if anchors is not None else None

        def counted(text: str) -> int:
            return count(text, encoding)

        replacing, carried = replaced(messages, anchors, counted)
        return render_summary(
            summary, target_tokens, counted, usable=usable, replacing=replacing, carried=carried
        )


def replaced(
    messages: Sequence[LiveMessage], anchors: SummaryAnchors | None, count: Callable[[str], int]
) -> tuple[int, int]:
    """(the tokens a summary of `messages` replaces, the tokens the previous summary among
    them gave the user's requests). The previous summary is the anchors' `previous` (the one
    among `messages`, or one a caller gives apart from them), else the summaries among
    `messages`; its tokens are counted from its text."""
    tokens = sum(m.tokens for m in messages if not m.summary)
    if anchors is not None:
        previous = anchors.previous
    else:
        previous = "\n\n".join(_text(m) for m in messages if m.summary) or None
    if previous is None:
        return tokens, 0
    parsed = parse_summary(previous)
    carried = requests_tokens(parsed, count) if parsed is not None else 0
    return tokens + count(previous), carried


def structured_summary(
    messages: Sequence[LiveMessage], anchors: SummaryAnchors | None
) -> StructuredSummary:
    """The sections of `messages` (with their anchors when given), merged into the previous
    summary's. A previous summary in another format is kept as notes, whole, to shrink with
    the rest rather than nest."""
    if anchors is not None:
        new = summary_from_trail(anchors.trail, messages)
        previous = [anchors.previous] if anchors.previous is not None else []
    else:
        new = summary_from_trail(trail_of_messages(messages), messages, exact_seqs=False)
        previous = [_text(m) for m in messages if m.summary]
    merged: StructuredSummary | None = None
    for text in previous:
        parsed = parse_summary(text)
        if parsed is None:  # an older summary, or one written by another summarizer
            parsed = StructuredSummary(compactions=1, notes=text, notes_by="an earlier summary")
        merged = parsed if merged is None else merge(merged, parsed)
    return new if merged is None else merge(merged, new)


def _text(message: LiveMessage) -> str:
    return "".join(p.text for p in message.parts if isinstance(p, TextPart))


def trail_of_messages(messages: Sequence[LiveMessage]) -> ArtifactTrail:
    """The artifact trail of live messages (a summary among them left out), as if they had
    been appended in order: what a summarizer called without anchors can know. Outputs are as
    the model was shown them (a pruned one is its placeholder)."""
    fold = ArtifactFold()
    for n, message in enumerate(messages, 1):
        if message.summary:
            continue
        parts = tuple(
            ToolResultPart(
                id=p.id, call_id=p.call_id, name=p.name, output=p.output, is_error=p.is_error
            )
            if isinstance(p, LiveToolResult)
            else p
            for p in message.parts
        )
        stored = Message.model_construct(
            id=message.id, role=message.role, parts=parts, usage=None, native=message.native
        )  # built from a live message that was valid when stored: no need to validate it again
        fold.apply(_appended(stored, n))
    return fold.trail()


def _appended(message: Message, seq: int) -> RecordedEvent:
    return RecordedEvent(
        position=seq,
        session_id="",
        seq=seq,
        event_id="",
        type="MessageAppended",
        schema_version=1,
        recorded_at=_EPOCH,
        prev_hash="",
        hash="",
        payload=MessageAppended.model_construct(message=message),
    )
