"""`Context`: the live context at one point of a session, ready for a model API."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from sessionstore.events import (
    InvalidArgument,
    RecordedEvent,
    StoredAppend,
    brief,
    collection_paused,
)
from sessionstore.projections._fold import ContextFold
from sessionstore.projections._live import LiveMessage, ShownMessage
from sessionstore.projections._render import APIS, Shown, api_order, recorded_api, sent_tokens
from sessionstore.projections._render_anthropic import to_anthropic
from sessionstore.projections._render_openai import to_openai
from sessionstore.projections._render_responses import to_responses


@dataclass(frozen=True)
class Context:
    """What the model is shown after event `seq` of session `session_id`.

    `messages` are the live messages in order, as stored (a tool call still waiting for its
    result is there as it is). The renderers make the context valid for the API (see
    `api_messages`).

    `tokens` counts what the render for `api` sends (`tokens_for(api)`): `api` is the API the
    newest assistant message was recorded from by `append_anthropic`, `append_openai` or
    `append_openai_response` (the one the agent loop talks to), else Chat Completions. So it
    counts reasoning only when it goes back to its own provider, another provider's block by
    what that render shows of it, and the synthetic result of a call still pending. The counts
    are those recorded at append; nothing is re-tokenized. Each message's own `tokens` is the
    sum of its recorded part counts, whatever a render sends of it.
    """

    session_id: str
    seq: int
    time: datetime
    model: str
    context_window: int | None
    output_reserve: int
    encoding: str
    shown: tuple[ShownMessage, ...]
    """The live messages as the renders read them; `messages` are their models."""

    @cached_property
    def messages(self) -> tuple[LiveMessage, ...]:
        """The live messages in order, as models (built when first asked for: a render needs
        none)."""
        return tuple(shown.model() for shown in self.shown)

    @cached_property
    def _plain(self) -> list[Shown]:
        return [shown.plain for shown in self.shown]

    @cached_property
    def api(self) -> str:
        """The API the session talks to: the one the newest assistant message was recorded
        from by `append_anthropic`, `append_openai` or `append_openai_response`; Chat
        Completions (`OPENAI_CHAT`) when none was."""
        return recorded_api(self._plain)

    @cached_property
    def tokens(self) -> int:
        """Tokens of what the render for `api` sends: `tokens_for(api)`."""
        return sent_tokens(self._plain, self.api)

    def tokens_for(self, api: str) -> int:
        """Tokens of what the render for `api` (`ANTHROPIC`, `OPENAI_CHAT`, `OPENAI_RESPONSES`)
        sends of this context; the rules are `sessionstore.projections._render.sent_tokens`'s."""
        if api not in APIS:
            raise InvalidArgument(f"no render for the API {brief(api)}; one of {', '.join(APIS)}")
        return self.tokens if api == self.api else sent_tokens(self._plain, api)

    @collection_paused()
    def to_openai(self) -> list[Any]:
        """The `messages` argument of OpenAI Chat Completions: JSON dicts, typed `Any` so a
        type-checked caller can pass them to the SDK's TypedDict parameters as they are."""
        return to_openai(self._plain)

    @collection_paused()
    def to_anthropic(self) -> dict[str, Any]:
        """`system` and `messages` for the Anthropic Messages API."""
        return to_anthropic(self._plain)

    @collection_paused()
    def to_responses(self) -> list[Any]:
        """The `input` item list of the OpenAI Responses API (JSON dicts, typed `Any` as for
        `to_openai`)."""
        return to_responses(self._plain)

    @collection_paused()
    def to_dicts(self) -> list[dict[str, Any]]:
        """The API-valid messages in sessionstore's own shape, as JSON-ready dicts."""
        ordered = api_order(self._plain)
        return [LiveMessage.model_validate(m).model_dump(mode="json") for m in ordered]

    def message(self, message_id: str) -> LiveMessage:
        """A live message by id (`KeyError` when it is not in this context)."""
        for shown in self.shown:
            if shown.plain["id"] == message_id:
                return shown.model()
        raise KeyError(message_id)


@collection_paused()
def context_of(fold: ContextFold, *, restore_pruned: bool = False) -> Context:
    """The `Context` a fold stands at."""
    if fold.header is None or fold.time is None:
        raise ValueError("a context needs at least the session's SessionStarted event")
    return Context(
        session_id=fold.session_id,
        seq=fold.seq,
        time=fold.time,
        model=fold.header.model,
        context_window=fold.header.context_window,
        output_reserve=fold.header.output_reserve,
        encoding=fold.header.encoding,
        shown=fold.shown_messages(restore_pruned),
    )


def fold_events(
    events: Iterable[RecordedEvent | StoredAppend], start: ContextFold | None = None
) -> ContextFold:
    """Fold `events` on top of `start` (a fresh fold when `None`). `start` is consumed."""
    fold = start if start is not None else ContextFold()
    for event in events:
        fold.apply(event)
    return fold
