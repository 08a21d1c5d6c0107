"""What a context check did, for a reader of a long session: log records and trace spans.

Each phase of a check (prune, selective, summary, fit) is one `phase(...)`: a DEBUG record when it
starts, an INFO record when it is done, with the session, the check point, the strategy, the
reason and the tokens before and after, as `extra` fields a structured handler can read
(`record.sessionstore`, a dict) and as text. When `opentelemetry` is importable the phase is
also a span of the tracer `sessionstore`, with the same values as `sessionstore.*`
attributes; without it nothing is traced and nothing is imported. Each append through a
`Session` is a span too (`append_span`).

Beside our own attributes, every span carries the OpenTelemetry GenAI semantic conventions'
(`gen_ai.conversation.id`, `gen_ai.operation.name`, `gen_ai.request.model`, and on an append
of an assistant message whose usage is known `gen_ai.usage.*`), so tools that group traces
into conversations (Langfuse, Phoenix, Datadog) read them without a mapping. No well-known
`gen_ai.operation.name` (`chat`, `execute_tool`, `invoke_agent`...) describes storing an event
or checking the window, so the operation is named as the span is (`sessionstore.append`,
`sessionstore.prune`...), as the conventions allow for operations they do not list.

Nothing is printed by default: the records go to the logger `sessionstore.checks` (under
`sessionstore`, as the store's other loggers), which has no handler of its own, and none is
above INFO, so Python's last-resort handler (WARNING and above) stays silent.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from sessionstore.events import MessageAppended, RecordedEvent, Usage

log = logging.getLogger("sessionstore.checks")

GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
"""The GenAI semantic conventions' attribute names (OpenTelemetry semantic-conventions-genai;
`opentelemetry.semconv`'s `gen_ai_attributes` spells the same, which the tests check)."""

Attributes = Mapping[str, str | int | Sequence[str]]

Phase = Literal["prune", "selective", "summary", "fit"]


def _tracing_available() -> bool:
    """Whether `opentelemetry.trace` (the API) can be imported, without importing it: another
    `opentelemetry-*` package alone provides the namespace but not the API."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except ImportError:
        return False


_TRACING = _tracing_available()


def strategy_of(config: object) -> str:
    """The session's strategy name: `config.strategy` when the config has one (a name, or an
    object with a `name`), else "default"."""
    strategy = getattr(config, "strategy", None)
    if strategy is None:
        return "default"
    if isinstance(strategy, str):
        return strategy
    name = getattr(strategy, "name", None)
    return name if isinstance(name, str) else type(strategy).__name__


def gen_ai_attributes(session_id: str, operation: str, model: str) -> dict[str, str]:
    """The GenAI conventions' attributes of every span of ours: the session is the
    conversation, and its model the one requests go to (left out when the session names
    none)."""
    attributes = {GEN_AI_CONVERSATION_ID: session_id, GEN_AI_OPERATION_NAME: operation}
    if model:
        attributes[GEN_AI_REQUEST_MODEL] = model
    return attributes


def usage_attributes(usage: Usage) -> dict[str, int]:
    """A provider's reported usage in the GenAI conventions' terms: their input tokens count
    every token of the prompt, cached ones included, where ours (Anthropic's way) count the
    uncached ones alone; cache reads and writes are also given apart."""
    return {
        GEN_AI_USAGE_INPUT_TOKENS: usage.input + usage.cache_read + usage.cache_write,
        GEN_AI_USAGE_OUTPUT_TOKENS: usage.output,
        GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read,
        GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write,
    }


@dataclass(slots=True)
class PhaseRecord:
    """The values of one phase; the phase's body sets `tokens_after` (and may add `outcome`)."""

    session_id: str
    point: str
    phase: Phase
    strategy: str
    reason: str
    tokens_before: int
    tokens_after: int | None = None
    outcome: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "session_id": self.session_id,
            "point": self.point,
            "phase": self.phase,
            "strategy": self.strategy,
            "reason": self.reason,
            "tokens_before": self.tokens_before,
        }
        if self.tokens_after is not None:
            values["tokens_after"] = self.tokens_after
        if self.outcome:
            values["outcome"] = self.outcome
        return values


@contextmanager
def phase(
    session_id: str,
    point: str,
    name: Phase,
    *,
    strategy: str,
    reason: str,
    tokens_before: int,
    model: str = "",
) -> Iterator[PhaseRecord]:
    """Log (and trace) one phase of a check around the block; the block fills in the record.
    `model` is the session's, for the span's `gen_ai.request.model`."""
    record = PhaseRecord(session_id, point, name, strategy, reason, tokens_before)
    log.debug(
        "%s start: session %s at %s, strategy %s, %s tokens (%s)",
        name,
        session_id,
        point,
        strategy,
        tokens_before,
        reason,
        extra={"sessionstore": record.fields()},
    )
    span = f"sessionstore.{name}"
    with traced(span, gen_ai_attributes(session_id, span, model)) as attach:
        yield record
        attach({f"sessionstore.{key}": value for key, value in record.fields().items()})
    after = record.tokens_after if record.tokens_after is not None else tokens_before
    log.info(
        "%s done: session %s at %s, strategy %s, %s -> %s tokens (%s)%s",
        name,
        session_id,
        point,
        strategy,
        tokens_before,
        after,
        reason,
        f": {record.outcome}" if record.outcome else "",
        extra={"sessionstore": {**record.fields(), "tokens_after": after}},
    )


@contextmanager
def append_span(session_id: str, model: str) -> Iterator[Callable[[Sequence[RecordedEvent]], None]]:
    """Trace one append of a session's events around the block (a span `sessionstore.append`
    of the tracer `sessionstore`); the block hands the recorded events to the function it is
    given. An append that raises ends its span with the error and the GenAI attributes only.
    An assistant message's reported usage goes on the span as `gen_ai.usage.*` (the newest
    one's, if the append holds several)."""
    span = "sessionstore.append"
    with traced(span, gen_ai_attributes(session_id, span, model)) as attach:

        def appended(events: Sequence[RecordedEvent]) -> None:
            if attach is _ignored:  # nothing records the span: build nothing for it
                return
            attributes: dict[str, Any] = {
                "sessionstore.session_id": session_id,
                "sessionstore.events": len(events),
                "sessionstore.types": [event.type for event in events],
            }
            if events:
                attributes["sessionstore.first_seq"] = events[0].seq
                attributes["sessionstore.last_seq"] = events[-1].seq
            usages = [
                event.payload.message.usage
                for event in events
                if isinstance(event.payload, MessageAppended)
                and event.payload.message.usage is not None
            ]
            if usages:
                attributes.update(usage_attributes(usages[-1]))
            attach(attributes)

        yield appended


@contextmanager
def traced(name: str, attributes: Attributes) -> Iterator[Callable[[Attributes], None]]:
    """A span `name` of the tracer `sessionstore` with `attributes` around the block, which is
    given a function that adds more; with no OpenTelemetry API installed, nothing (the
    function then ignores what it is given)."""
    if not _TRACING:
        yield _ignored
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        # No SDK is set up (yet): every span would be a no-op that still costs an append
        # about 20 us to start, enter and end. Once an application sets a provider, this is
        # no longer the proxy, and spans start.
        yield _ignored
        return
    tracer = provider.get_tracer("sessionstore")
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        # a tracer no SDK backs records nothing: build nothing more for it
        yield span.set_attributes if span.is_recording() else _ignored


def _ignored(attributes: Attributes) -> None:
    """What a span's attributes go to when nothing is traced."""
