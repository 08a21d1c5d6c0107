"""A local stand-in for the OpenAI Responses API in stateless mode (`store=False`), strict about
what a stateless caller must send back.

`serving(script)` runs `POST /v1/responses` on 127.0.0.1 (a random port, a daemon thread, every
socket bounded by a timeout) for the real `openai.OpenAI` client. Each request's `input` is
checked by `input_errors` against every response the server issued; a request that breaks a
rule gets the API's 400 error shape (the client raises `openai.BadRequestError`) and is kept in
`refusals`. The rules, each one the real API enforces or a stateless caller depends on:
- the input is what the SDK's input types take, with no unknown field (`accepted_input`);
- an item the server issued comes back exactly as issued, less its output-only fields: same
  id, same status, the same `encrypted_content`, byte for byte (the API decrypts it with the
  item's id; with `store=False` nothing else is kept on its side);
- a reasoning item is directly followed by the item that followed it when issued, and the
  server knows no reasoning item it did not issue ("Item with id ... not found");
- the items of one response come back together and in their order (the store keeps them as one
  message; a gap is how a dropped following item would show);
- every `function_call` / `custom_tool_call` is answered by exactly one output of its kind with
  its `call_id`, after it, and every output answers such a call;
- the newest response issued comes back in full (a loop always sends its last turn).
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
from typing import Any

from sessionstore.projections._render_responses import sendable
from tests.providers.responses_api import accepted_input

JsonDict = dict[str, Any]
ANSWERS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
TIMEOUT = 10.0
"""Seconds any socket of the server waits; the client should use the same."""


def input_errors(
    items: list[Any], issued: list[list[JsonDict]], *, newest_required: bool = True
) -> list[str]:
    """What is wrong with `items` as the `input` of a stateless request, after the server
    issued the responses `issued` (their `output` lists, oldest first); empty when nothing.
    `newest_required=False` for a context that is not a loop's next request (a replayed point,
    a revert)."""
    try:
        accepted_input(items)
    except AssertionError as exc:
        return [str(exc)]
    errors: list[str] = []
    where: dict[str, tuple[int, int]] = {}
    for r, output in enumerate(issued):
        for p, item in enumerate(output):
            if isinstance(item.get("id"), str):
                where[item["id"]] = (r, p)

    seen: dict[int, list[tuple[int, int]]] = {}  # response -> [(input index, position)]
    for index, item in enumerate(items):
        item_id = item.get("id")
        if item_id not in where:
            if item.get("type") == "reasoning":
                errors.append(f"Item with id {item_id!r} not found (store is false)")
            continue
        r, p = where[item_id]
        expected = sendable(json.loads(json.dumps(issued[r][p])))
        if item != expected:
            errors.append(f"input[{index}] ({item_id}) is not the item as issued: {item}")
        seen.setdefault(r, []).append((index, p))
        if item.get("type") == "reasoning":
            following = issued[r][p + 1]["id"] if p + 1 < len(issued[r]) else None
            next_id = items[index + 1].get("id") if index + 1 < len(items) else None
            if following is None or next_id != following:
                errors.append(
                    f"Item {item_id!r} of type 'reasoning' was provided without its required "
                    "following item."
                )
    for r, found in seen.items():
        indexes = [index for index, _ in found]
        positions = [p for _, p in found]
        if positions != list(range(len(issued[r]))) or indexes != list(
            range(indexes[0], indexes[0] + len(indexes))
        ):
            errors.append(f"the items of response {r} do not come back together and in order")
    if newest_required and issued and len(issued) - 1 not in seen:
        errors.append("the newest response's items are missing")
    errors.extend(_call_errors(items))
    return errors


def _call_errors(items: list[Any]) -> list[str]:
    errors = []
    calls: dict[str, tuple[int, str]] = {}
    answered: dict[str, int] = {}
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind in ANSWERS:
            calls[item["call_id"]] = (index, kind)
        elif kind in ANSWERS.values():
            call = calls.get(item["call_id"])
            if call is None or ANSWERS[call[1]] != kind:
                errors.append(f"No tool call found for {kind} with call_id {item['call_id']}.")
            answered[item["call_id"]] = answered.get(item["call_id"], 0) + 1
    for call_id in calls:
        if answered.get(call_id) != 1:
            errors.append(f"No tool output found for function call {call_id} (or more than one).")
    return errors


@dataclass
class Turn:
    """What the fake model does on one request: say `text` (or nothing) and call `call` (a
    tool name and its arguments), or, with no call, finish."""

    text: str | None = None
    call: tuple[str, JsonDict] | None = None


@dataclass
class FakeResponses:
    """The server's state: the script of turns, what it issued, what it received."""

    script: Callable[[int], Turn]
    issued: list[list[JsonDict]] = field(default_factory=list)
    requests: list[JsonDict] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: Any) -> tuple[int, JsonDict]:
        with self.lock:
            self.requests.append(body)
            errors = self._request_errors(body)
            if errors:
                self.refusals.append("\n".join(errors))
                return 400, {
                    "error": {
                        "message": "\n".join(errors),
                        "type": "invalid_request_error",
                        "param": "input",
                        "code": None,
                    }
                }
            return 200, self._respond(body)

    def _request_errors(self, body: Any) -> list[str]:
        if not isinstance(body, dict) or not isinstance(body.get("input"), list):
            return ["the body must be an object with an input list"]
        if body.get("store") is not False:
            return ["this server only answers stateless requests (store: false)"]
        if "reasoning.encrypted_content" not in (body.get("include") or []):
            return ["include must ask for reasoning.encrypted_content when store is false"]
        return input_errors(body["input"], self.issued)

    def _respond(self, body: JsonDict) -> JsonDict:
        n = len(self.issued) + 1
        turn = self.script(n)
        tag = hashlib.sha256(f"{n}".encode()).hexdigest()[:24]
        output: list[JsonDict] = [
            {
                "type": "reasoning",
                "id": f"rs_{tag}",
                "summary": [{"type": "summary_text", "text": f"**Step {n}**"}],
                "encrypted_content": _opaque(n),
            }
        ]
        if turn.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{tag}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
                }
            )
        if turn.call is not None:
            name, arguments = turn.call
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{tag}",
                    "call_id": f"call_{tag}",
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
            )
        self.issued.append(output)
        prompt = len(json.dumps(body["input"])) // 4
        cached = prompt // 2 // 128 * 128
        return {
            "id": f"resp_{tag}",
            "object": "response",
            "created_at": 1795000000 + n,
            "status": "completed",
            "model": body.get("model", ""),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools", []),
            "store": False,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                "output_tokens": 120,
                "output_tokens_details": {"reasoning_tokens": 96},
                "total_tokens": prompt + 120,
            },
        }


def _opaque(n: int) -> str:
    """An `encrypted_content` stand-in: 1.2 KB of base64 with `+`, `/` and `=` in it, different
    every turn, so any change on the way back shows."""
    raw = b"".join(hashlib.sha512(f"{n}:{i}".encode()).digest() for i in range(14))
    return "gAAAAAB" + base64.b64encode(raw + b"\xfb\xff").decode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = TIMEOUT

    def do_POST(self) -> None:
        if self.path != "/v1/responses":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(400, {"error": {"message": "not JSON", "type": "invalid_request_error"}})
            return
        status, answer = self.server.fake.answer(body)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeResponses


@contextmanager
def serving(script: Callable[[int], Turn]) -> Iterator[tuple[str, FakeResponses]]:
    """`(base_url, server state)` while a fake Responses API runs on 127.0.0.1."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.timeout = TIMEOUT
    server.fake = FakeResponses(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)
