"""What a context check did, for a reader of a long session: log records and trace spans.

Each phase of a check (prune, selective, summary, fit) is one `phase(...)`: a DEBUG record when it
starts, an INFO record when it is done, with the session, the check point, the strategy, the
reason and the tokens before and after, as `extra` fields a structured handler can read
(`record.sessionstore`, a dict) and as text. When `opentelemetry` is importable the phase is
also a span of the tracer `sessionstore`, with the same values as `sessionstore.*`
attributes; without it nothing is traced and nothing is imported.

Nothing is printed by default: the records go to the logger `sessionstore.checks` (under
`sessionstore`, as the store's other loggers), which has no handler of its own, and none is
above INFO, so Python's last-resort handler (WARNING and above) stays silent.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger("sessionstore.checks")

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
) -> Iterator[PhaseRecord]:
    """Log (and trace) one phase of a check around the block; the block fills in the record."""
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
    with _span(name, record):
        yield record
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
def _span(name: Phase, record: PhaseRecord) -> Iterator[None]:
    if not _TRACING:
        yield
        return
    from opentelemetry import trace

    tracer = trace.get_tracer("sessionstore")
    with tracer.start_as_current_span(f"sessionstore.{name}") as span:
        yield
        for key, value in record.fields().items():
            span.set_attribute(f"sessionstore.{key}", value)
