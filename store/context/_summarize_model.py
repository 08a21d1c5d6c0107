"""Summaries a model writes: anchored on the previous one, completed with the exact trail.

A model asked to summarize a long session drops what it judges minor, and a file path or an
error's wording is exactly what it cannot recall afterwards. So a `ModelSummarizer` asks the
model only for what needs judgement (task overview, current state, important discoveries, next
steps, context to preserve), gives it its previous notes and the computed sections as anchors,
and puts its answer into the structured summary as notes: the requests, files, commands and
errors are the trail's, whatever the model wrote.

Endpoints fail: a request is tried `attempts` times (429, 5xx, timeouts and dropped
connections are retried after an exponential backoff, or the `Retry-After` the endpoint asks,
at most `max_backoff` seconds), and when it keeps failing the `fallback` summarizer (e.g.
`ExtractiveSummarizer()`) writes the summary instead; the compaction event then names it.
Without a fallback the compaction fails and appends nothing.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from sessionstore.context._summarize import (
    AttributedSummary,
    Summarizer,
    SummaryAnchors,
    fallen_back,
    replaced,
    structured_summary,
)
from sessionstore.context._tokens import count
from sessionstore.events import DEFAULT_ENCODING, FilePart, TextPart, ToolCallPart
from sessionstore.projections import (
    NOTES_SHARE,
    LiveMessage,
    LiveToolResult,
    render_summary,
    shorten,
)

log = logging.getLogger("sessionstore.summarize")

SYSTEM = """\
You keep the running notes of an agent's session. Its earlier conversation is being removed \
from its context, and it will continue from your notes and the sections computed from its \
event log. You are given your previous notes (if any), those computed sections (the user's \
requests, files and what was done to each, commands, errors and their fixes, the todo list), \
and the conversation being removed. Write your updated notes under exactly these headings, in \
at most {tokens} tokens:

### Task overview
### Current state
### Important discoveries
### Next steps
### Context to preserve

Keep what your previous notes say unless the conversation made it obsolete. Be factual and \
specific: names, paths, values, decisions and why. Do not copy the computed sections: they are \
kept beside your notes, verbatim."""

PROMPT = """\
<previous-notes>
{previous}
</previous-notes>

<computed-sections>
{sections}
</computed-sections>

<conversation>
{conversation}
</conversation>"""

RESULT_CHARS = 1_500
CALL_CHARS = 600


class ModelSummarizer:
    """A summarizer that asks a model; subclasses say how (`ask`) and which failures are worth
    another try (`retryable`). See the module for what it sends and how it fails over."""

    name = "model"

    def __init__(
        self,
        *,
        attempts: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        fallback: Summarizer | None = None,
        transcript_chars: int = 200_000,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.attempts = attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.fallback = fallback
        self.transcript_chars = transcript_chars
        self.sleep: Callable[[float], None] = time.sleep

    @property
    def author(self) -> str:
        """Who the notes say wrote them."""
        return self.name

    def ask(self, system: str, prompt: str, max_tokens: int) -> str:
        """One request to the model: its answer, or an exception."""
        raise NotImplementedError

    def retryable(self, error: Exception) -> bool:
        return isinstance(error, TimeoutError | ConnectionError)

    def retry_after(self, error: Exception) -> float | None:
        """Seconds the endpoint asked to wait before the next try, if it said."""
        return None

    def __call__(
        self,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        *,
        anchors: SummaryAnchors | None = None,
    ) -> str:
        encoding = anchors.encoding if anchors is not None else DEFAULT_ENCODING

        def counted(text: str) -> int:
            return count(text, encoding)

        summary = structured_summary(messages, anchors)
        notes_tokens = max(64, int(target_tokens * NOTES_SHARE))
        usable = anchors.usable if anchors is not None else None
        replacing, carried = replaced(messages, anchors, counted)
        plain = replace(summary, notes=None)
        sections = render_summary(
            plain, target_tokens, counted, usable=usable, replacing=replacing, carried=carried
        )
        prompt = PROMPT.format(
            previous=summary.notes or "(none: this is the first summary)",
            sections=sections,
            conversation=transcript(messages, self.transcript_chars),
        )
        try:
            notes = self._ask(SYSTEM.format(tokens=notes_tokens), prompt, target_tokens).strip()
            if not notes:
                raise ValueError("the model answered no text")
        except Exception as error:
            if self.fallback is None:
                raise
            return self._fall_back(error, messages, target_tokens, anchors)
        with_notes = replace(summary, notes=notes, notes_by=self.author)
        return render_summary(
            with_notes, target_tokens, counted, usable=usable, replacing=replacing, carried=carried
        )

    def _ask(self, system: str, prompt: str, max_tokens: int) -> str:
        for attempt in range(self.attempts):
            try:
                return self.ask(system, prompt, max_tokens)
            except Exception as error:
                if attempt == self.attempts - 1 or not self.retryable(error):
                    raise
                asked = self.retry_after(error)
                delay = self.backoff * 2**attempt if asked is None else asked
                log.info("summary request failed (%s); retrying in %.1f s", error, delay)
                self.sleep(min(delay, self.max_backoff))
        raise AssertionError("unreachable")  # pragma: no cover

    def _fall_back(
        self,
        error: Exception,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        anchors: SummaryAnchors | None,
    ) -> AttributedSummary:
        assert self.fallback is not None
        return fallen_back(self.fallback, self.name, error, messages, target_tokens, anchors)


def transcript(messages: Sequence[LiveMessage], limit: int) -> str:
    """The conversation as plain lines for the model to read (a summary among the messages
    left out: its sections are given apart): each tool call's arguments and each result
    shortened to their beginning and end, and the whole to about `limit` characters."""
    lines: list[str] = []
    for message in messages:
        if message.summary:
            continue
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                lines.append(f"{message.role.upper()}: {part.text}")
            elif isinstance(part, ToolCallPart):
                arguments = shorten(part.arguments, len(part.arguments), CALL_CHARS)
                lines.append(f"CALL {part.name} {arguments}")
            elif isinstance(part, LiveToolResult):
                error = " (error)" if part.is_error else ""
                output = shorten(part.output, len(part.output), RESULT_CHARS)
                lines.append(f"RESULT{error} {part.name or part.call_id}: {output}")
            elif isinstance(part, FilePart):
                lines.append(f"{message.role.upper()}: [a file: {part.media_type}]")
    text = "\n".join(lines)
    return shorten(text, len(text), limit)


# any OpenAI-compatible endpoint


class OpenAIChatSummarizer(ModelSummarizer):
    """Asks `{base_url}/chat/completions` (OpenAI, vLLM, Ollama, LiteLLM...) for the notes.

    The answer's length is capped with `max_completion_tokens` (OpenAI's name; its reasoning
    models refuse `max_tokens`); an endpoint that refuses that name is asked again, once, with
    `max_tokens`, and this summarizer keeps to it. `timeout` bounds each request's socket
    waits, in seconds."""

    name = "openai-chat"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120,
        attempts: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = (
            "max_completion_tokens"
        ),
        fallback: Summarizer | None = None,
    ) -> None:
        super().__init__(
            attempts=attempts, backoff=backoff, max_backoff=max_backoff, fallback=fallback
        )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_tokens_field = max_tokens_field

    @property
    def author(self) -> str:
        return f"{self.model} ({self.name})"

    def ask(self, system: str, prompt: str, max_tokens: int) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            self.max_tokens_field: max_tokens,
        }
        try:
            reply = self._post(body)
        except urllib.error.HTTPError as error:
            if not (error.code == 400 and self._refuses_field(error)):
                raise
            body["max_tokens"] = body.pop("max_completion_tokens")
            self.max_tokens_field = "max_tokens"
            reply = self._post(body)
        content = reply["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise ValueError(f"the endpoint answered no text: {json.dumps(reply)[:200]}")
        return content

    def _refuses_field(self, error: urllib.error.HTTPError) -> bool:
        if self.max_tokens_field != "max_completion_tokens":
            return False
        try:
            detail = error.read().decode("utf-8", "replace")
        except OSError:
            return False
        return "max_completion_tokens" in detail

    def _post(self, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", **self._auth()},
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.load(response)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def retryable(self, error: Exception) -> bool:
        if isinstance(error, urllib.error.HTTPError):
            return error.code in (408, 409, 429) or error.code >= 500
        return isinstance(error, urllib.error.URLError) or super().retryable(error)

    def retry_after(self, error: Exception) -> float | None:
        if not isinstance(error, urllib.error.HTTPError) or error.headers is None:
            return None
        value = error.headers.get("Retry-After")
        try:
            return max(0.0, float(value)) if value is not None else None
        except ValueError:
            return None  # an HTTP date: use the backoff
