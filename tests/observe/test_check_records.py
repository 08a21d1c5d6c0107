"""What a context check tells a reader of a long session: one DEBUG record when a phase
starts and one INFO record when it is done, on `sessionstore.checks`, nothing above INFO;
and one span per phase with the same values, and one per append, each with the OpenTelemetry
GenAI conventions' attributes beside our own (read with the SDK's in-memory exporter)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from sessionstore import ConcurrencyError, SessionStore, Usage
from sessionstore.context._observe import strategy_of
from tests.contract.test_confirmed_compaction import crowded_session


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(f"sqlite:///{tmp_path / 'observe.db'}")


def test_a_check_that_compacts_logs_each_phase_exactly(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    s = crowded_session(store)
    with caplog.at_level(logging.DEBUG, logger="sessionstore.checks"):
        check = s.before_llm_call()
    after = check.after.tokens
    records = [r for r in caplog.records if r.name == "sessionstore.checks"]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        (
            "DEBUG",
            f"prune start: session {s.id} at before_llm_call, strategy incremental, 3264 tokens "
            "(overflow at before_llm_call (incremental))",
        ),
        (
            "INFO",
            f"prune done: session {s.id} at before_llm_call, strategy incremental, 3264 -> 3264 "
            "tokens (overflow at before_llm_call (incremental)): nothing worth pruning",
        ),
        (
            "DEBUG",
            f"summary start: session {s.id} at before_llm_call, strategy incremental, 3264 tokens "
            "(still overflowing at before_llm_call after pruning)",
        ),
        (
            "INFO",
            f"summary done: session {s.id} at before_llm_call, strategy incremental, 3264 -> "
            f"{after} tokens (still overflowing at before_llm_call after pruning): "
            "compacted in 1 attempt(s)",
        ),
    ]
    assert records[-1].sessionstore == {  # type: ignore[attr-defined]
        "session_id": s.id,
        "point": "before_llm_call",
        "phase": "summary",
        "strategy": "incremental",
        "reason": "still overflowing at before_llm_call after pruning",
        "tokens_before": 3264,
        "tokens_after": after,
        "outcome": "compacted in 1 attempt(s)",
    }
    assert after == check.compactions[0].payload.tokens_after  # type: ignore[attr-defined]


def test_a_check_within_the_window_logs_nothing(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    s = store.create_session(model="m", context_window=128_000)
    s.append_user("hello")
    with caplog.at_level(logging.DEBUG, logger="sessionstore.checks"):
        s.before_llm_call()
    assert [r for r in caplog.records if r.name == "sessionstore.checks"] == []


def test_nothing_is_printed_by_default(
    store: SessionStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # no handler of ours, nothing above INFO: the last-resort handler (WARNING) stays silent
    assert logging.getLogger("sessionstore.checks").handlers == []
    crowded_session(store).before_llm_call(confirm=lambda proposal: False)
    assert capsys.readouterr() == ("", "")


def test_the_strategy_is_read_from_the_config_when_it_has_one() -> None:
    class Named:
        name = "sliding_window"

    class Config:
        def __init__(self, strategy: object) -> None:
            self.strategy = strategy

    assert strategy_of(object()) == "default"
    assert strategy_of(Config(None)) == "default"
    assert strategy_of(Config("adaptive")) == "adaptive"
    assert strategy_of(Config(Named())) == "sliding_window"


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """The spans the test's calls make, finished, in memory: the SDK's own exporter behind a
    tracer provider handed to this test alone, as `get_tracer_provider` hands out the one an
    application set (the global one can be set once per process)."""
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)  # other tests' (ADK) setting
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return exporter


def test_each_phase_is_a_span_with_its_tokens_and_the_gen_ai_attributes(
    store: SessionStore, exporter: InMemorySpanExporter
) -> None:
    s = crowded_session(store)
    exporter.clear()
    check = s.before_llm_call()
    spans = exporter.get_finished_spans()
    assert [span.name for span in spans] == [
        "sessionstore.prune",
        "sessionstore.append",  # the compaction, appended inside the summary phase
        "sessionstore.summary",
    ]
    assert spans[1].parent is not None and spans[2].context is not None
    assert spans[1].parent.span_id == spans[2].context.span_id
    assert dict(spans[2].attributes or {}) == {
        "gen_ai.conversation.id": s.id,
        "gen_ai.operation.name": "sessionstore.summary",
        "gen_ai.request.model": "m",
        "sessionstore.session_id": s.id,
        "sessionstore.point": "before_llm_call",
        "sessionstore.phase": "summary",
        "sessionstore.strategy": "incremental",
        "sessionstore.reason": "still overflowing at before_llm_call after pruning",
        "sessionstore.tokens_before": 3264,
        "sessionstore.tokens_after": check.after.tokens,
        "sessionstore.outcome": "compacted in 1 attempt(s)",
    }
    assert dict(spans[0].attributes or {})["sessionstore.tokens_after"] == 3264
    assert dict(spans[0].attributes or {})["gen_ai.operation.name"] == "sessionstore.prune"


def test_an_assistants_append_is_a_span_with_its_usage_in_gen_ai_terms(
    store: SessionStore, exporter: InMemorySpanExporter
) -> None:
    s = store.create_session(model="claude-sonnet-4-5", context_window=200_000)
    s.append_user("hello")
    usage = Usage(input=12, output=30, cache_read=2_000, cache_write=100)
    s.append_assistant("Hi.", usage=usage)
    spans = exporter.get_finished_spans()
    # the session's start is written by the store; each append to the session is a span
    assert [span.name for span in spans] == ["sessionstore.append"] * 2
    user, assistant = (dict(span.attributes or {}) for span in spans)
    gen_ai = {
        "gen_ai.conversation.id": s.id,
        "gen_ai.operation.name": "sessionstore.append",
        "gen_ai.request.model": "claude-sonnet-4-5",
    }
    assert user == {
        **gen_ai,
        "sessionstore.session_id": s.id,
        "sessionstore.events": 1,
        "sessionstore.types": ("MessageAppended",),
        "sessionstore.first_seq": 2,
        "sessionstore.last_seq": 2,
    }
    assert assistant == {
        **gen_ai,
        "sessionstore.session_id": s.id,
        "sessionstore.events": 1,
        "sessionstore.types": ("MessageAppended",),
        "sessionstore.first_seq": 3,
        "sessionstore.last_seq": 3,
        "gen_ai.usage.input_tokens": 2_112,  # the whole prompt: uncached, read and written
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 2_000,
        "gen_ai.usage.cache_creation.input_tokens": 100,
    }


def test_an_append_that_fails_ends_its_span_with_the_error_and_no_figures(
    store: SessionStore, exporter: InMemorySpanExporter
) -> None:
    s = store.create_session(model="", context_window=1_000)
    stale = store.session(s.id)
    s.append_user("first")
    exporter.clear()
    with pytest.raises(ConcurrencyError):
        stale.append_user("second")
    (span,) = exporter.get_finished_spans()
    assert span.name == "sessionstore.append"
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {}) == {  # a session without a model names none
        "gen_ai.conversation.id": s.id,
        "gen_ai.operation.name": "sessionstore.append",
    }


def test_without_a_tracer_provider_an_append_starts_no_span(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until an application sets a provider, OpenTelemetry's proxy would hand out spans that
    record nothing: an append does not ask it for a tracer at all."""
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    asked: list[str] = []

    def get_tracer(self: object, name: str, *args: object, **kwargs: object) -> trace.Tracer:
        asked.append(name)
        return trace.NoOpTracer()

    monkeypatch.setattr(trace.ProxyTracerProvider, "get_tracer", get_tracer)
    s = store.create_session(model="gpt-4o", context_window=128_000)
    s.append_user("hello")
    s.append_assistant("Hi.", usage=Usage(input=12, output=30))
    assert asked == []
    assert [m.role for m in s.context().messages] == ["user", "assistant"]


def test_the_gen_ai_names_are_opentelemetrys_own() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv

    from sessionstore.context import _observe as ours

    for name in (
        "GEN_AI_CONVERSATION_ID",
        "GEN_AI_OPERATION_NAME",
        "GEN_AI_REQUEST_MODEL",
        "GEN_AI_USAGE_INPUT_TOKENS",
        "GEN_AI_USAGE_OUTPUT_TOKENS",
        "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS",
        "GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS",
    ):
        assert getattr(ours, name) == getattr(semconv, name), name
    # no well-known operation describes a store's append or a window check: ours are custom
    known = {value.value for value in semconv.GenAiOperationNameValues}
    assert not known & {"sessionstore.append", "sessionstore.prune", "sessionstore.summary"}


def test_a_strategys_stage_is_logged_before_its_fallback(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    s = crowded_session(store)
    s.configure(strategy="sliding_window", window_messages=6)
    with caplog.at_level(logging.DEBUG, logger="sessionstore.checks"):
        check = s.before_llm_call()
    records = [r for r in caplog.records if r.name == "sessionstore.checks"]
    assert [(r.levelname, r.sessionstore["phase"]) for r in records][:2] == [  # type: ignore[attr-defined]
        ("DEBUG", "selective"),
        ("INFO", "selective"),
    ]
    done = records[1].sessionstore  # type: ignore[attr-defined]
    drop = check.compactions[0].payload
    assert done["strategy"] == "sliding_window"
    assert done["reason"] == "overflow at before_llm_call (sliding_window)"
    assert done["tokens_before"] == check.before.tokens
    assert done["tokens_after"] == drop.tokens_after  # type: ignore[attr-defined]
    assert done["outcome"] == f"sliding_window: {drop.why}"  # type: ignore[attr-defined]
