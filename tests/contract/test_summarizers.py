"""Summarizers as a session runs them: anchors for those that ask, the summary marked in every
render, and a model summarizer against a local endpoint that fails the ways endpoints fail
(a 500, a timeout, an endpoint that refuses `max_completion_tokens`, one that never answers)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sessionstore import (
    CompactionError,
    ExtractiveSummarizer,
    OpenAIChatSummarizer,
    Session,
    SessionStore,
    SummaryAnchors,
    ToolCall,
)
from sessionstore.events import TextPart
from sessionstore.projections import LiveMessage
from tests.conftest import Backend

MARK = "[Summary of earlier conversation]"


@pytest.fixture
def session(sqlite_backend: Backend) -> Iterator[Session]:
    store = SessionStore(sqlite_backend.url)
    yield store.create_session(model="m")
    store.close()


def coding_turns(s: Session, first: int, count: int) -> None:
    for n in range(first, first + count):
        s.append_user(f"request {n}: make step {n} work. " + "context " * 150)
        call = ToolCall(id=f"e{n}", name="Edit", input={"file_path": f"/repo/step{n}.py"})
        s.append_assistant(tool_calls=[call])
        s.append_tool_result(f"e{n}", output="ok")
        call = ToolCall(id=f"r{n}", name="Read", input={"file_path": f"/repo/spec{n}.md"})
        s.append_assistant(tool_calls=[call])
        s.append_tool_result(f"r{n}", output=f"spec line of step {n}\n" * 300)
        call = ToolCall(id=f"b{n}", name="Bash", input={"command": f"make step{n}"})
        s.append_assistant(tool_calls=[call])
        s.append_tool_result(f"b{n}", output=f"Exit code 2\nbuilding\nerror: step {n} failed")
        s.append_assistant(f"Step {n} still fails.")


def summary_text(s: Session) -> str:
    part = s.context().messages[0].parts[0]
    assert s.context().messages[0].summary and isinstance(part, TextPart)
    return part.text


def test_a_summarizer_that_asks_for_anchors_gets_the_previous_summary_and_the_trail(
    session: Session,
) -> None:
    seen: list[SummaryAnchors] = []

    def summarize(
        messages: Sequence[LiveMessage], target_tokens: int, *, anchors: SummaryAnchors
    ) -> str:
        seen.append(anchors)
        return f"summary {len(seen)}"

    coding_turns(session, 0, 3)
    first = session.compact(summarize, keep_turns=1, keep_tokens=0)
    coding_turns(session, 3, 2)
    session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert [a.previous for a in seen] == [None, f"{MARK}\nsummary 1"]
    assert [a.encoding for a in seen] == ["cl100k_base", "cl100k_base"]
    # each trail is the whole log so far: the summary is the session's state when written, so
    # what only the kept turn shows (maybe pruned there) is in it too
    assert [r.text[:11] for r in seen[0].trail.requests] == [f"request {n}: " for n in range(3)]
    assert [r.text[:11] for r in seen[1].trail.requests] == [f"request {n}: " for n in range(5)]
    assert seen[0].trail.seq == 25 and first.seq == 26  # turns of 8 events from seq 2
    assert [f.path for f in seen[1].trail.changed_files] == [f"/repo/step{n}.py" for n in range(5)]


def test_compacting_three_times_merges_one_summary_that_keeps_every_request_path_and_error(
    session: Session,
) -> None:
    session.configure(summary_tokens=800)
    for round_ in range(3):
        coding_turns(session, round_ * 3, 3)
        event = session.compact(keep_turns=1, keep_tokens=0)
        assert event.payload.summarizer == "extractive"  # type: ignore[attr-defined]
    text = summary_text(session)
    assert text.count(MARK) == 1 and text.startswith(f"{MARK} Compaction 3, through seq ")
    assert text.count("## The task and the user's requests, in order") == 1
    for n in range(9):  # the kept turn's too: the summary is the state when it was written
        assert f"request {n}: make step {n} work. context" in text
        assert f"- /repo/step{n}.py — modified" in text
    assert "Error at seq 75 — Bash(make step8), exit 2; not fixed yet" in text  # the last one
    assert "error: step 8 failed" in text


def test_a_redaction_after_the_replaced_range_keeps_its_secret_out_of_the_summary(
    session: Session,
) -> None:
    secret = session.append_user("my token is sk-SECRET-123, use it for the deploy")
    session.append_assistant("Noted. " * 300)
    coding_turns(session, 1, 1)
    first = session.compact(keep_turns=1, keep_tokens=0)  # the secret is in the trail now
    coding_turns(session, 2, 1)
    summary = first.payload.summary.parts[0].id  # type: ignore[attr-defined]
    session.redact([secret.parts[0].id, summary], reason="a leaked token")
    coding_turns(session, 3, 1)
    session.compact(keep_turns=1, keep_tokens=0)  # replaces up to turn 2: before the redaction
    text = summary_text(session)
    assert "sk-SECRET-123" not in text and "[redacted: a leaked token]" in text
    assert "request 2: make step 2 work." in text


def test_every_render_shows_the_summary_as_a_marked_user_turn(session: Session) -> None:
    coding_turns(session, 0, 2)
    session.compact(lambda messages, target: "two steps fail", keep_turns=1, keep_tokens=0)
    context = session.context()
    anthropic = context.to_anthropic()["messages"][0]
    assert anthropic["role"] == "user"
    assert anthropic["content"][0]["text"] == f"{MARK}\ntwo steps fail"
    assert context.to_openai()[0] == {"role": "user", "content": f"{MARK}\ntwo steps fail"}
    responses = context.to_responses()[0]
    assert responses["role"] == "user"
    assert responses["content"][0]["text"] == f"{MARK}\ntwo steps fail"


# a model summarizer against a local endpoint

Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


class Endpoint:
    """`POST /v1/chat/completions` on 127.0.0.1: each request is answered by the next reply
    of the script (the last one repeats); a reply of status 0 sleeps past the client's timeout
    before answering."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.bodies.append(body)
                reply = endpoint.script[min(len(endpoint.bodies), len(endpoint.script)) - 1]
                status, answer = reply(body)
                if status == 0:
                    time.sleep(1.0)
                    status = 200
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


NOTES = "### Task overview\nMake every step build.\n### Next steps\n- fix step 2"


def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, {"choices": [{"message": {"content": NOTES}}]}


def failure(status: int) -> Reply:
    return lambda body: (status, {"error": {"message": "try later"}})


def slow(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 0, {"choices": [{"message": {"content": "too late"}}]}


def refuses_max_completion_tokens(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if "max_completion_tokens" in body:
        message = "Unrecognized request argument supplied: max_completion_tokens"
        return 400, {"error": {"message": message}}
    return answer(body)


@pytest.fixture
def endpoint() -> Iterator[Callable[[list[Reply]], Endpoint]]:
    opened: list[Endpoint] = []

    def serve(script: list[Reply]) -> Endpoint:
        opened.append(Endpoint(script))
        return opened[-1]

    yield serve
    for server in opened:
        server.close()


def summarizer(url: str, **options: Any) -> tuple[OpenAIChatSummarizer, list[float]]:
    made = OpenAIChatSummarizer(base_url=url, model="small", backoff=0.5, **options)
    waits: list[float] = []
    made.sleep = waits.append  # the backoff is recorded, not slept
    return made, waits


def test_a_500_is_retried_after_a_backoff_and_the_answer_is_completed_with_the_trail(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([failure(500), answer])
    summarize, waits = summarizer(server.url)
    coding_turns(session, 0, 3)
    event = session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert len(server.bodies) == 2 and waits == [0.5]
    assert event.payload.summarizer == "openai-chat"  # type: ignore[attr-defined]
    body = server.bodies[1]
    assert body["model"] == "small" and body["max_completion_tokens"] == 2_000
    system, prompt = (m["content"] for m in body["messages"])
    assert "### Important discoveries" in system and "### Context to preserve" in system
    assert "(none: this is the first summary)" in prompt
    assert "- /repo/step1.py — modified" in prompt  # the computed sections, as anchors
    text = summary_text(session)
    assert text.endswith(f"Written by small (openai-chat) ({len(NOTES)} characters):\n{NOTES}")
    for n in range(2):  # what the model did not write is there, exactly
        assert f"- /repo/step{n}.py — modified" in text
        assert f"request {n}: make step {n} work." in text
    assert "error: step 1 failed" in text


def test_the_next_compaction_gives_the_model_its_previous_notes(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([answer])
    summarize, _ = summarizer(server.url)
    coding_turns(session, 0, 3)
    session.compact(summarize, keep_turns=1, keep_tokens=0)
    coding_turns(session, 3, 2)
    session.compact(summarize, keep_turns=1, keep_tokens=0)
    prompt = server.bodies[1]["messages"][1]["content"]
    assert f"<previous-notes>\n{NOTES}\n</previous-notes>" in prompt
    text = summary_text(session)
    assert text.count(MARK) == 1 and text.count("## Notes from the summarizer") == 1


def test_a_request_that_times_out_is_tried_again(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([slow, answer])
    summarize, waits = summarizer(server.url, timeout=0.2)
    coding_turns(session, 0, 3)
    session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert len(server.bodies) == 2 and waits == [0.5]
    assert summary_text(session).endswith(NOTES)


def test_an_endpoint_that_refuses_max_completion_tokens_is_asked_with_max_tokens(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([refuses_max_completion_tokens])
    summarize, waits = summarizer(server.url)
    coding_turns(session, 0, 3)
    session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert [sorted(k for k in b if k.startswith("max")) for b in server.bodies] == [
        ["max_completion_tokens"],
        ["max_tokens"],
    ]
    assert waits == [] and summarize.max_tokens_field == "max_tokens"
    assert summary_text(session).endswith(NOTES)


def test_an_endpoint_that_keeps_failing_falls_back_and_the_event_says_so(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([failure(503)])
    summarize, waits = summarizer(server.url, fallback=ExtractiveSummarizer())
    coding_turns(session, 0, 3)
    event = session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert len(server.bodies) == 3 and waits == [0.5, 1.0]
    summarizer_name = event.payload.summarizer  # type: ignore[attr-defined]
    assert summarizer_name == "extractive (fallback: openai-chat failed)"
    text = summary_text(session)
    assert "## Notes from the summarizer" not in text and "- /repo/step1.py — modified" in text


def test_without_a_fallback_a_failing_endpoint_fails_the_compaction_and_appends_nothing(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([failure(429)])
    summarize, waits = summarizer(server.url, attempts=2)
    coding_turns(session, 0, 3)
    version = session.version
    with pytest.raises(CompactionError, match="HTTP Error 429"):
        session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert session.version == version and len(server.bodies) == 2 and waits == [0.5]


def test_a_client_error_is_not_retried(
    session: Session, endpoint: Callable[[list[Reply]], Endpoint]
) -> None:
    server = endpoint([failure(401)])
    summarize, waits = summarizer(server.url)
    coding_turns(session, 0, 3)
    with pytest.raises(CompactionError, match="HTTP Error 401"):
        session.compact(summarize, keep_turns=1, keep_tokens=0)
    assert len(server.bodies) == 1 and waits == []
