"""A local stand-in for Anthropic's `POST /v1/messages` that refuses what Anthropic refuses.

`FakeAnthropic` answers every request of an extended-thinking agent loop with a thinking block
(a fresh signature), some text and a `tool_use`, until its last turn, which ends the loop. Before
answering, it checks the request against the Messages API's rules for such a loop, the ones a
real loop breaks when a store drops or moves what the model said:

- the request is a `MessageCreateParams` body: `messages` valid as `list[MessageParam]` (every
  content block validated, not only the envelope), `thinking` enabled with `budget_tokens` of
  at least 1,024 and below `max_tokens`;
- roles alternate, starting with the user; the last message is the user's (no assistant
  prefill: the API refuses one with thinking enabled);
- no content is empty, no text block is empty or whitespace only;
- an assistant turn that holds thinking starts with it and does not end with it; every
  thinking block is byte for byte one this server issued, with the signature issued for it;
  every `redacted_thinking` block carries data this server issued;
- an assistant turn that holds a `tool_use` starts with the thinking block this server issued
  in the same response as that `tool_use`, with exactly its signature;
- `tool_use` ids match `^[a-zA-Z0-9_-]+$` and were issued here; every one is answered by a
  `tool_result` in the very next user turn, results come first in that turn, and no result
  answers a call that is not in the turn just before.

A refused request gets a 400 with Anthropic's error shape; nothing about it is remembered.
The server runs on 127.0.0.1 on a free port in a daemon thread and stops itself after
`lifetime` seconds whatever happens, so a test can never hang on it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, get_args, get_type_hints

from anthropic.types import ContentBlockParam, MessageParam
from pydantic import TypeAdapter, ValidationError

MESSAGES = TypeAdapter(list[MessageParam])
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
THINKING = ("thinking", "redacted_thinking")

JsonDict = dict[str, Any]


def materialized(value: Any) -> Any:
    """`value` with every lazy iterator pydantic left in it consumed: the SDK's param types
    declare content as `Iterable[...]`, which pydantic validates only when iterated, so a
    validation that does not iterate checks nothing below `content`."""
    if isinstance(value, dict):
        return {key: materialized(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [materialized(item) for item in value]
    if hasattr(value, "__next__"):
        return [materialized(item) for item in value]
    return value


def _block_types(union: object) -> set[str]:
    return {get_args(get_type_hints(member)["type"])[0] for member in get_args(union)}


KNOWN_BLOCKS = _block_types(ContentBlockParam)
"""The block types this SDK knows in a request. The server may know newer ones (it sent them),
which the SDK's types cannot check."""


def validate_messages(messages: object) -> None:
    """Raise `ValidationError` unless `messages` is a valid `list[MessageParam]`, down to every
    block whose type the SDK knows."""
    known = [
        {**message, "content": [b for b in message["content"] if b.get("type") in KNOWN_BLOCKS]}
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        else message
        for message in messages  # type: ignore[attr-defined]
    ]
    materialized(MESSAGES.validate_python(known))


class Refused(Exception):
    """A request the real API would answer with 400 `invalid_request_error`."""


@dataclass
class FakeAnthropic:
    """The loop's model: `turns` responses, the last one final (`end_turn`).

    `accepted` counts the requests answered, `refusals` records every refusal's message.
    Turn 3 also returns an empty text block (the API does, at times), turn 4 a
    `redacted_thinking` block, turn 5 a server tool's use and result, turn 6 a block type
    newer than the SDK: whatever a store records must come back as the API accepts it.
    """

    turns: int = 30
    accepted: int = 0
    refusals: list[str] = field(default_factory=list)
    requests: list[JsonDict] = field(default_factory=list)
    thinking: dict[str, str] = field(default_factory=dict)  # signature -> thinking text
    redacted: set[str] = field(default_factory=set)
    first_thinking: dict[str, tuple[str, str]] = field(default_factory=dict)
    """tool_use id -> (thinking, signature) of the block that opened the same response."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # the rules

    def check(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("the request body must be a JSON object")
        for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
            if not isinstance(body.get(name), kind):
                raise Refused(f"{name}: Field required")
        thinking = body.get("thinking")
        if not (
            isinstance(thinking, dict)
            and thinking.get("type") == "enabled"
            and isinstance(thinking.get("budget_tokens"), int)
            and 1024 <= thinking["budget_tokens"] < body["max_tokens"]
        ):
            raise Refused("thinking: enabled, with 1024 <= budget_tokens < max_tokens")
        system = body.get("system")
        if system is not None and not (isinstance(system, str) and system.strip()):
            raise Refused("system: text content blocks must contain non-whitespace text")
        self.check_messages(body["messages"])

    def check_messages(self, messages: list[Any], *, foreign_calls: bool = False) -> None:
        """The rules on `messages` alone (see the module). `foreign_calls` lets through a
        `tool_use` this server did not issue (another provider's, which needs no thinking when
        the request does not enable it); one it issued must still follow its own thinking."""
        try:
            validate_messages(messages)
        except ValidationError as exc:
            raise Refused(f"messages: {str(exc)[:300]}") from None
        if not messages:
            raise Refused("messages: at least one message is required")
        for index, message in enumerate(messages):
            self._check_message(index, message, messages, foreign_calls)
        if messages[-1]["role"] != "user":
            raise Refused("the final message must be the user's: thinking refuses a prefill")

    def _check_message(
        self, index: int, message: JsonDict, messages: list[JsonDict], foreign_calls: bool
    ) -> None:
        at = f"messages.{index}"
        expected = "user" if index % 2 == 0 else "assistant"
        if message["role"] != expected:
            raise Refused(f"{at}: roles must alternate, starting with user")
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not content:
            raise Refused(f"{at}: all messages must have non-empty content")
        for number, block in enumerate(content):
            if block["type"] == "text" and not block["text"].strip():
                raise Refused(f"{at}.content.{number}: text content blocks must be non-empty")
        if expected == "assistant":
            self._check_assistant(at, content, foreign_calls)
        else:
            previous = messages[index - 1]["content"] if index else []
            self._check_results(at, content, previous)

    def _check_assistant(self, at: str, content: list[JsonDict], foreign_calls: bool) -> None:
        kinds = [block["type"] for block in content]
        if any(kind in THINKING for kind in kinds):
            if kinds[0] not in THINKING:
                raise Refused(
                    f"{at}.content.0: If an assistant message contains any thinking blocks, "
                    f"the first block must be thinking or redacted_thinking. Found {kinds[0]}."
                )
            if kinds[-1] in THINKING:
                raise Refused(f"{at}: The final block in an assistant message cannot be thinking")
        for number, block in enumerate(content):
            where = f"{at}.content.{number}"
            if block["type"] == "thinking":
                if self.thinking.get(block["signature"]) != block["thinking"]:
                    raise Refused(f"{where}: Invalid `signature` in `thinking` block")
            elif block["type"] == "redacted_thinking" and block["data"] not in self.redacted:
                raise Refused(f"{where}: Invalid `data` in `redacted_thinking` block")
            elif block["type"] == "tool_use":
                if not TOOL_ID.match(block["id"]):
                    raise Refused(f"{where}.tool_use.id: String should match pattern")
                issued = self.first_thinking.get(block["id"])
                first = content[0]
                if issued is None and foreign_calls:
                    continue
                if issued is None:
                    raise Refused(f"{where}: tool_use {block['id']} was never issued")
                if first["type"] != "thinking" or (first["thinking"], first["signature"]) != issued:
                    raise Refused(
                        f"{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                        f"found `{first['type']}`. When `thinking` is enabled, a final "
                        "`assistant` message must start with a thinking block"
                    )

    def _check_results(self, at: str, content: list[JsonDict], previous: list[Any]) -> None:
        calls = [b["id"] for b in previous if isinstance(b, dict) and b["type"] == "tool_use"]
        kinds = [block["type"] for block in content]
        results = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
        if kinds[: len(results)] != ["tool_result"] * len(results):
            raise Refused(f"{at}: tool_result blocks must come first in the user turn")
        if sorted(results) != sorted(calls):
            raise Refused(
                f"{at}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after (calls {calls}, results {results})"
            )

    # the answers

    def answer(self, body: JsonDict) -> JsonDict:
        """The next response of the loop (call only for a request `check` accepted)."""
        self.accepted += 1
        turn = self.accepted
        thinking = (
            f"Turn {turn}: the failing test reads src/file_{turn}.py next.  \n"
            'Keep "quotes", tabs\t, é, \u2028 and trailing space exactly.  '
        )
        signature = base64.b64encode(
            hashlib.sha256(f"{turn}:{thinking}".encode()).digest() * 3 + b"\x00"
        ).decode()
        content: list[JsonDict] = [
            {"type": "thinking", "thinking": thinking, "signature": signature}
        ]
        if turn == 4:
            data = base64.b64encode(f"redacted {turn}".encode()).decode()
            content.append({"type": "redacted_thinking", "data": data})
        if turn == 5:
            content += [
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{turn:02d}",
                    "name": "web_search",
                    "input": {"query": "dateparse utc offset"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": f"srvtoolu_{turn:02d}",
                    "content": [
                        {
                            "type": "web_search_result",
                            "title": "dateparse docs",
                            "url": "https://example.org/dateparse",
                            "encrypted_content": "EqgfCioIARgBIiQ3",
                            "page_age": None,
                        }
                    ],
                },
            ]
        if turn == 6:
            content.append({"type": "future_block", "payload": {"z": 1, "a": [True, None]}})
        if turn == 3:
            content.append({"type": "text", "text": ""})
        if turn == self.turns:
            content.append({"type": "text", "text": "The fix is in; all tests pass."})
            stop = "end_turn"
        else:
            call_id = f"toolu_{turn:02d}{signature[:6].replace('+', 'x').replace('/', 'y')}"
            content += [
                {"type": "text", "text": f"Reading src/file_{turn}.py.", "citations": None},
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "read",
                    "input": {"path": f"src/file_{turn}.py", "limit": 400, "offset": 0},
                },
            ]
            stop = "tool_use"
        self.issued(content)
        request = json.dumps(body["messages"])
        return {
            "id": f"msg_{turn:04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": len(request) // 4,
                "output_tokens": 40 + len(thinking) // 4,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }

    def issued(self, content: list[JsonDict]) -> None:
        """Remember the thinking blocks and tool uses of a response as this server's: the
        rules accept them back, exactly as they are, and nothing else."""
        first = content[0] if content and content[0]["type"] == "thinking" else None
        for block in content:
            if block["type"] == "thinking":
                self.thinking[block["signature"]] = block["thinking"]
            elif block["type"] == "redacted_thinking":
                self.redacted.add(block["data"])
            elif block["type"] == "tool_use" and first is not None:
                self.first_thinking[block["id"]] = (first["thinking"], first["signature"])

    def handle(self, raw: bytes) -> tuple[int, JsonDict]:
        """(status, JSON body) for one request body."""
        with self._lock:
            try:
                body = json.loads(raw)
                self.check(body)
            except (Refused, ValueError, KeyError, TypeError) as exc:
                message = str(exc) if isinstance(exc, Refused) else f"malformed: {exc!r}"
                self.refusals.append(message)
                error = {"type": "invalid_request_error", "message": message}
                return 400, {"type": "error", "error": error, "request_id": "req_fake"}
            self.requests.append(body)
            return 200, self.answer(body)


@contextmanager
def serving(model: FakeAnthropic, *, lifetime: float = 120.0) -> Iterator[str]:
    """`model` served at a fresh `http://127.0.0.1:<port>` (yielded) until the block ends or
    `lifetime` seconds pass."""

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # seconds a client may take to send one request

        def do_POST(self) -> None:
            if self.path.split("?")[0] != "/v1/messages":
                status, body = 404, {"type": "error", "error": {"type": "not_found_error"}}
            else:
                length = int(self.headers.get("content-length", "0"))
                status, body = model.handle(self.rfile.read(length))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    watchdog = threading.Timer(lifetime, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
