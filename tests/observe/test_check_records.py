"""What a context check tells a reader of a long session: one DEBUG record when a phase
starts and one INFO record when it is done, on `sessionstore.checks`, nothing above INFO;
and, with OpenTelemetry's SDK installed, one span per phase with the same values."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sessionstore import SessionStore
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


def test_each_phase_is_a_span_with_its_tokens(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)  # other tests' (ADK) setting
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    s = crowded_session(store)
    # the global provider can be set once per process: hand ours to this test only
    monkeypatch.setattr(trace, "get_tracer", provider.get_tracer)
    check = s.before_llm_call()
    spans = exporter.get_finished_spans()
    assert [span.name for span in spans] == ["sessionstore.prune", "sessionstore.summary"]
    assert dict(spans[1].attributes or {}) == {
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
