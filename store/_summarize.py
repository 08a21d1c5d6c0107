"""Summarizers for compaction: anything that turns the messages to replace into text.

A `Summarizer` is a callable `(messages, target_tokens) -> str`, or one returning an awaitable
of it. `ExtractiveSummarizer` works offline with no model; `OpenAIChatSummarizer` asks any
OpenAI-compatible chat endpoint (standard library only, so it needs no extra package).

Where an awaitable summary is awaited: when `AsyncSession` runs the sync core in a worker
thread, on its caller's event loop (see `CallerLoop`); in a thread with no running loop, in
a loop of its own (`asyncio.run`); in a thread whose loop is running, nowhere: blocking that
loop on its own work would deadlock it, so it is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import threading
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from events import InvalidEvent, TextPart, ToolCallPart
from events._arguments import described
from events._canonical import check_json_value
from projections import LiveMessage, LiveToolResult, to_openai
from store._errors import CompactionError


class Summarizer(Protocol):
    def __call__(
        self, messages: Sequence[LiveMessage], target_tokens: int
    ) -> str | Awaitable[str]: ...


def summarizer_name(summarizer: Callable[..., object]) -> str:
    """What the compaction event records as its `summarizer`: its `name` or `__name__` when
    that is text, else its type's name."""
    for attribute in ("name", "__name__"):
        name = getattr(summarizer, attribute, None)
        if isinstance(name, str) and name:
            return name
    return type(summarizer).__name__


def run_summarizer(
    summarizer: Summarizer, messages: Sequence[LiveMessage], target_tokens: int
) -> str:
    """The summary text; `CompactionError` when the summarizer fails, returns something that
    is not text (or an awaitable of text), returns blank text, or text that cannot be stored."""
    name = summarizer_name(summarizer)
    try:
        result: object = summarizer(messages, target_tokens)
        if inspect.isawaitable(result):
            result = _await(result)
    except Exception as exc:
        raise CompactionError(
            f"the summarizer {name} failed: {type(exc).__name__}: {_first_line(exc)}"
        ) from exc
    if not isinstance(result, str):
        raise CompactionError(f"the summarizer {name} returned {described(result)}, not text")
    if not result.strip():
        raise CompactionError(f"the summarizer {name} returned no text")
    try:
        check_json_value(result, "summary")
    except InvalidEvent as exc:
        message = f"the summarizer {name} returned text that cannot be stored: {exc}"
        raise CompactionError(message) from None
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
        "use AsyncSession, or call the check from a worker thread "
        "(await asyncio.to_thread(s.before_llm_call))"
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
        finally:
            with self._lock:
                self._summary = None


_CALLER_LOOP: ContextVar[CallerLoop | None] = ContextVar("sessionstore_caller_loop", default=None)


# offline

_READS = {"read", "read_file", "view", "cat", "open"}
_CREATES = {"write", "write_file", "create", "create_file"}
_EDITS = {"edit", "edit_file", "patch", "apply_patch", "str_replace", "replace", "multiedit"}
_DELETES = {"delete", "delete_file", "rm", "remove"}
_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename")


class ExtractiveSummarizer:
    """A summary built from the messages themselves, with no model: the user's requests in
    order, the tools used with their key arguments, the files read, created, modified and
    deleted, the errors met and what followed them, and the last state."""

    name = "extractive"

    def __call__(self, messages: Sequence[LiveMessage], target_tokens: int) -> str:
        requests: list[str] = []
        tools: dict[str, list[str]] = {}
        files: dict[str, list[str]] = {"read": [], "created": [], "modified": [], "deleted": []}
        errors: list[str] = []
        calls: dict[str, ToolCallPart] = {}
        last_state = ""
        earlier: list[str] = []
        for message in messages:
            if message.summary:  # an earlier summary is carried whole, not cut as a request
                earlier.extend(p.text for p in message.parts if isinstance(p, TextPart))
                continue
            for part in message.parts:
                if isinstance(part, TextPart) and message.role == "user":
                    requests.append(_line(part.text))
                elif isinstance(part, TextPart) and message.role == "assistant" and part.text:
                    last_state = _line(part.text)
                elif isinstance(part, ToolCallPart):
                    calls[part.call_id] = part
                    tools.setdefault(part.name, []).append(_key_argument(part))
                    _note_file(part, files)
                elif isinstance(part, LiveToolResult) and part.is_error:
                    call = calls.get(part.call_id)
                    what = f"{call.name}({_key_argument(call)})" if call else part.name or "a tool"
                    errors.append(f"{what}: {_line(part.output)}")
        lines = [f"Summary of conversation from {messages[0].id} to {messages[-1].id}"]
        for text in earlier:
            lines += ["", "Earlier summary:", text]
        if requests:
            lines += ["", "User requests, in order:"] + [f"- {r}" for r in requests]
        if tools:
            lines += ["", "Tools used:"]
            for name, arguments in tools.items():
                shown = ", ".join(dict.fromkeys(a for a in arguments if a))
                lines.append(f"- {name} x{len(arguments)}" + (f": {shown}" if shown else ""))
        for kind, paths in files.items():
            if paths:
                lines.append(f"Files {kind}: {', '.join(dict.fromkeys(paths))}")
        if errors:
            lines += ["", "Errors met (later turns show what followed):"]
            lines += [f"- {e}" for e in errors]
        if last_state:
            lines += ["", f"Last state: {last_state}"]
        return _fit("\n".join(lines), target_tokens)


def _line(text: str, width: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _key_argument(call: ToolCallPart) -> str:
    arguments = call.input
    if not isinstance(arguments, dict):
        return _line(call.arguments, 80)
    for key in (*_PATH_KEYS, "pattern", "query", "command", "cmd", "url"):
        value = arguments.get(key)
        if isinstance(value, str):
            return _line(value, 80)
    return _line(json.dumps(arguments, sort_keys=True), 80)


def _note_file(call: ToolCallPart, files: dict[str, list[str]]) -> None:
    arguments = call.input
    if not isinstance(arguments, dict):
        return
    path = next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), None)
    if path is None:
        return
    name = call.name.lower()
    kind = (
        "read"
        if name in _READS
        else "created"
        if name in _CREATES
        else "modified"
        if name in _EDITS
        else "deleted"
        if name in _DELETES
        else None
    )
    if kind is not None:
        files[kind].append(str(path))


def _fit(text: str, target_tokens: int) -> str:
    """At most about `target_tokens` tokens (four characters each), cut at a line end."""
    limit = target_tokens * 4
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > 0 else limit] + "\n[summary cut to its target length]"


# any OpenAI-compatible endpoint

PROMPT = (
    "Summarize the conversation below for the agent that will continue it. Keep the user's "
    "requests, decisions made, files touched, commands run with their outcomes, errors and how "
    "they were fixed, and what remains to do. Be factual and brief: at most {target} tokens."
)


class OpenAIChatSummarizer:
    """Asks `{base_url}/chat/completions` (OpenAI, vLLM, Ollama, LiteLLM...) for the summary."""

    name = "openai-chat"

    def __init__(
        self, *, base_url: str, model: str, api_key: str | None = None, timeout: float = 120
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout

    def __call__(self, messages: Sequence[LiveMessage], target_tokens: int) -> str:
        transcript = json.dumps(to_openai(messages), ensure_ascii=False)
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": PROMPT.format(target=target_tokens)},
                {"role": "user", "content": transcript},
            ],
            "max_tokens": target_tokens,
        }
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", **self._auth()},
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            reply: Any = json.load(response)
        return str(reply["choices"][0]["message"]["content"] or "")

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
