"""Local stand-ins for the providers' own compaction and context editing, strict about what a
caller must send back.

`serving(fake)` runs a fake on 127.0.0.1 (a random port, a daemon thread, every socket bounded
by `TIMEOUT`) for the real `openai` and `anthropic` clients; a request that breaks a rule gets
the API's 400 error shape (the client raises `BadRequestError`) and is kept in `refusals`.

`CompactingResponses` is the Responses API with `store=False`:
- `POST /v1/responses` with `context_management=[{"type": "compaction", "compact_threshold":
  n}]` compacts when the request's input since its newest compaction item is over `n`
  rendered tokens (`len(json) // 4`): the output opens with a `compaction` item, and the usage
  reports the compacted context (`COMPACTED_INPUT` in, `OUTPUT_TOKENS` out);
- `POST /v1/responses/compact` returns the compacted window: the input's user messages, then
  one `compaction` item;
- rules: a compaction item comes back exactly as issued (its id, its `encrypted_content` byte
  for byte), no compaction item is one it did not issue, and nothing comes before the newest
  one but developer messages and the user messages its window holds; every `function_call`
  is answered once, after it.

`CompactingAnthropic` is the Messages API:
- `context_management.edits` with `compact_20260112` (its `trigger.value` in input tokens)
  compacts when the request is over it: the response opens with a signed `compaction` block
  whose `content` is the summary, and `usage.iterations` holds the compaction's cost;
- `clear_tool_uses_20250919` (`trigger.value`, `keep.value`) clears the oldest tool results
  past the newest `keep` and reports it in `context_management.applied_edits`;
- `compaction={"type": "summarize"}` compacts on demand: the response is the block alone,
  `stop_reason: "compaction"`;
- rules: `compaction` together with `context_management` is refused; a compaction block comes
  back exactly as issued and first in `messages` (nothing before it), and no compaction block
  is one it did not issue; roles alternate, starting with the user's (or with the compaction);
  every `tool_use` is answered in the next user turn.
Request tokens are `len(json) // 4` of `messages`, as the Responses fake counts its input.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from anthropic.types.beta import BetaMessageParam
from pydantic import TypeAdapter, ValidationError

from tests.providers.responses_api import accepted_input

BETA_MESSAGES = TypeAdapter(list[BetaMessageParam])

JsonDict = dict[str, Any]
TIMEOUT = 10.0
COMPACTED_INPUT = 860
OUTPUT_TOKENS = 40
SUMMARY = "The user asked to fix test_sum; modules 1-{n} were read; add() is wrong."


class Refused(Exception):
    """What the real API answers with 400 `invalid_request_error`."""


def tokens(value: object) -> int:
    return len(json.dumps(value)) // 4


def _opaque(n: int) -> str:
    raw = b"".join(hashlib.sha512(f"cmp{n}:{i}".encode()).digest() for i in range(6))
    return "gAAAAAB" + base64.b64encode(raw + b"\xfb\xff").decode()


Script = Callable[[int], str | None]
"""The model: on request `n`, the path it reads next, or `None` to answer and stop."""


class Fake(Protocol):
    refusals: list[str]

    def answer(self, path: str, body: Any) -> JsonDict: ...


@dataclass
class CompactingResponses:
    script: Script
    issued: dict[str, JsonDict] = field(default_factory=dict)  # compaction id -> item
    windows: dict[str, list[JsonDict]] = field(default_factory=dict)  # id -> users before it
    requests: list[JsonDict] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    compactions: int = 0
    turns: int = 0

    def answer(self, path: str, body: Any) -> JsonDict:
        if not isinstance(body, dict) or not isinstance(body.get("input"), list):
            raise Refused("the body must be an object with an input list")
        self.requests.append(body)
        items: list[JsonDict] = body["input"]
        self._check(items)
        if path == "/v1/responses/compact":
            return self._compact(items)
        if body.get("store") is not False:
            raise Refused("this server only answers stateless requests (store: false)")
        return self._respond(body, items)

    def _check(self, items: list[JsonDict]) -> None:
        try:
            accepted_input(items)
        except AssertionError as exc:
            raise Refused(str(exc)[:500]) from None
        newest = None
        for index, item in enumerate(items):
            if item.get("type") != "compaction":
                continue
            issued = self.issued.get(str(item.get("id")))
            if issued is None:
                raise Refused(f"input[{index}]: compaction item {item.get('id')!r} not found")
            if item != issued:
                raise Refused(f"input[{index}]: the compaction item is not as issued: {item}")
            newest = index
        if newest is not None:
            window = self.windows[items[newest]["id"]]
            before = [i for i in items[:newest] if i.get("role") != "developer"]
            if before != window:
                raise Refused(
                    f"input[:{newest}]: only developer messages and the compacted window may "
                    f"come before the newest compaction item, got {before}"
                )
        calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
        outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        if sorted(outputs) != sorted(calls):
            raise Refused(f"calls {sorted(calls)} and outputs {sorted(outputs)} do not match")

    def _compaction(self, window: list[JsonDict]) -> JsonDict:
        self.compactions += 1
        n = self.compactions
        item = {"type": "compaction", "id": f"cmp_{n:04d}", "encrypted_content": _opaque(n)}
        self.issued[item["id"]] = item
        self.windows[item["id"]] = window
        return {**item, "created_by": "server"}

    def _compact(self, items: list[JsonDict]) -> JsonDict:
        users = [i for i in items if i.get("type") == "message" and i.get("role") == "user"]
        output = [*users, self._compaction(users)]
        return {
            "id": f"resp_compact_{self.compactions}",
            "object": "response.compaction",
            "created_at": 1795000000,
            "output": output,
            "usage": _responses_usage(tokens(items), 300),
        }

    def _respond(self, body: JsonDict, items: list[JsonDict]) -> JsonDict:
        self.turns += 1
        n = self.turns
        output: list[JsonDict] = []
        since = next(
            (k for k in range(len(items) - 1, -1, -1) if items[k]["type"] == "compaction"), -1
        )
        threshold = _threshold(body.get("context_management"))
        compacted = threshold is not None and tokens(items[since + 1 :]) > threshold
        if compacted:
            output.append(self._compaction([]))
        path = self.script(n)
        if path is None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n:04d}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Fixed.", "annotations": []}],
                }
            )
        else:
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n:04d}",
                    "call_id": f"call_{n:04d}",
                    "name": "read_file",
                    "arguments": json.dumps({"path": path}),
                    "status": "completed",
                }
            )
        prompt = COMPACTED_INPUT if compacted else tokens(items)
        return {
            "id": f"resp_{n:04d}",
            "object": "response",
            "created_at": 1795000000 + n,
            "status": "completed",
            "model": body.get("model", ""),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "store": False,
            "usage": _responses_usage(prompt, OUTPUT_TOKENS),
        }


def _threshold(management: object) -> int | None:
    for entry in management if isinstance(management, list) else ():
        if isinstance(entry, dict) and entry.get("type") == "compaction":
            value = entry.get("compact_threshold")
            return value if isinstance(value, int) else None
    return None


def _responses_usage(prompt: int, output: int) -> JsonDict:
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


@dataclass
class CompactingAnthropic:
    script: Script
    issued: dict[str, JsonDict] = field(default_factory=dict)  # signature -> block
    requests: list[JsonDict] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    compactions: int = 0
    turns: int = 0

    def answer(self, path: str, body: Any) -> JsonDict:
        if path != "/v1/messages" or not isinstance(body, dict):
            raise Refused(f"no route {path}")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused("messages: at least one message is required")
        self.requests.append(body)
        if body.get("compaction") is not None and body.get("context_management") is not None:
            raise Refused("compaction: cannot be combined with context_management")
        self._check(messages)
        if body.get("compaction") is not None:
            block = self._block()
            return self._message([block], "compaction", tokens(messages), 300, compacting=True)
        return self._respond(body, messages)

    def _check(self, messages: list[JsonDict]) -> None:
        try:
            BETA_MESSAGES.validate_python(messages)
        except ValidationError as exc:
            raise Refused(f"messages: {str(exc)[:300]}") from None
        for index, message in enumerate(messages):
            content = message.get("content")
            if not isinstance(content, list) or not content:
                raise Refused(f"messages.{index}: content must be a non-empty list of blocks")
            for number, block in enumerate(content):
                if block.get("type") != "compaction":
                    continue
                if self.issued.get(str(block.get("signature"))) != block:
                    raise Refused(f"messages.{index}.content.{number}: invalid compaction block")
                if (index, number) != (0, 0):
                    raise Refused(
                        f"messages.{index}.content.{number}: a compaction block must come first "
                        "in messages: nothing may be sent before it"
                    )
        first = "assistant" if messages[0]["content"][0].get("type") == "compaction" else "user"
        other = {"user": "assistant", "assistant": "user"}
        expected = first
        for index, message in enumerate(messages):
            if message.get("role") != expected:
                raise Refused(f"messages.{index}: roles must alternate")
            expected = other[expected]
            if message["role"] == "assistant":
                calls = sorted(b["id"] for b in message["content"] if b["type"] == "tool_use")
                after = messages[index + 1]["content"] if index + 1 < len(messages) else []
                answers = sorted(b["tool_use_id"] for b in after if b["type"] == "tool_result")
                if calls and calls != answers:
                    raise Refused(f"messages.{index}: tool_use ids {calls} without results")

    def _block(self) -> JsonDict:
        self.compactions += 1
        n = self.compactions
        summary = SUMMARY.format(n=self.turns)
        signature = base64.b64encode(hashlib.sha256(f"{n}:{summary}".encode()).digest()).decode()
        block = {"type": "compaction", "content": summary, "signature": signature}
        self.issued[signature] = block
        return dict(block)

    def _respond(self, body: JsonDict, messages: list[JsonDict]) -> JsonDict:
        self.turns += 1
        n = self.turns
        edits = (body.get("context_management") or {}).get("edits") or []
        applied: list[JsonDict] = []
        prompt = tokens(messages)
        content: list[JsonDict] = []
        compacted = False
        for edit in edits:
            trigger = (edit.get("trigger") or {}).get("value", 150_000)
            if edit["type"] == "clear_tool_uses_20250919" and prompt > trigger:
                applied.append(_clear_tool_uses(messages, edit))
            elif edit["type"] == "compact_20260112" and prompt > trigger:
                content.append(self._block())
                compacted = True
        path = self.script(n)
        if path is None:
            content.append({"type": "text", "text": "Fixed.", "citations": None})
            stop = "end_turn"
        else:
            call = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "read_file"}
            content.append({**call, "input": {"path": path}})
            stop = "tool_use"
        cleared = sum(edit["cleared_input_tokens"] for edit in applied)
        answer = self._message(content, stop, prompt - cleared, OUTPUT_TOKENS, compacting=compacted)
        if applied:
            answer["context_management"] = {"applied_edits": applied}
        return answer

    def _message(
        self, content: list[JsonDict], stop: str, prompt: int, output: int, *, compacting: bool
    ) -> JsonDict:
        usage: JsonDict = {
            "input_tokens": prompt,
            "output_tokens": output,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if compacting:
            iteration = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            usage["iterations"] = [
                {**iteration, "type": "compaction", "input_tokens": prompt, "output_tokens": 300}
            ]
            if stop != "compaction":
                usage["input_tokens"] = COMPACTED_INPUT
                usage["iterations"].append(
                    {
                        **iteration,
                        "type": "message",
                        "input_tokens": COMPACTED_INPUT,
                        "output_tokens": output,
                    }
                )
        return {
            "id": f"msg_{self.turns:04d}_{self.compactions}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }


def _clear_tool_uses(messages: list[JsonDict], edit: JsonDict) -> JsonDict:
    """Clear the oldest tool results past the newest `keep`, as the API does, in place."""
    keep = (edit.get("keep") or {}).get("value", 3)
    excluded = set(edit.get("exclude_tools") or ())
    names = {
        b["id"]: b["name"] for m in messages for b in m["content"] if b.get("type") == "tool_use"
    }
    results = [
        b
        for m in messages
        for b in m["content"]
        if b.get("type") == "tool_result" and names.get(b["tool_use_id"]) not in excluded
    ]
    cleared = results[: max(len(results) - keep, 0)]
    freed = sum(tokens(b.get("content")) for b in cleared)
    return {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": len(cleared),
        "cleared_input_tokens": freed,
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = TIMEOUT

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(400, _error("not JSON"))
            return
        fake = self.server.fake
        with self.server.lock:
            try:
                status, answer = 200, fake.answer(self.path, body)
            except Refused as exc:
                fake.refusals.append(str(exc))
                status, answer = 400, _error(str(exc))
        self._send(status, answer)

    def _send(self, status: int, answer: JsonDict) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def _error(message: str) -> JsonDict:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: Fake
    lock: threading.Lock


@contextmanager
def serving(fake: Fake) -> Iterator[str]:
    """The base URL (with `/v1` for OpenAI's client; Anthropic's adds it) while `fake` runs."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.timeout = TIMEOUT
    server.fake = fake
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)
