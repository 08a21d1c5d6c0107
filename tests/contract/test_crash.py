"""A writer killed with SIGKILL mid-stream loses nothing it committed and leaves no half event;
an agent killed mid-run resumes with exactly the context it had."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from sessionstore import SessionStore
from sessionstore.events import MessageAppended
from sessionstore.projections import context_of
from tests.conftest import Backend, create_schema

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from sessionstore import SessionStore
from tests.builders import started, user

store = SessionStore(sys.argv[1])
store.append("crash", [started()], expected_version=0)
version = 1
while True:
    size = 1 + (version * 7919) % 40_000  # outputs from 1 B to 40 KB
    batch = [user(f"{version + 1 + i}:" + "x" * size) for i in range(1 + version % 5)]
    version = store.append("crash", batch, expected_version=version)[-1].seq
    print(version, flush=True)  # printed only after the commit returned
"""


def test_sigkill_mid_stream_leaves_every_committed_event_and_a_valid_chain(
    backend: Backend,
) -> None:
    create_schema(backend)  # as an operator does: the child only appends
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, backend.url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    committed = 0
    for line in writer.stdout:
        committed = int(line)
        if committed >= 150:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL, writer.stderr.read() if writer.stderr else ""

    with SessionStore(backend.url) as store:
        version = store.version("crash")
        events = store.read("crash")
        report = store.verify("crash")

    assert version >= committed >= 150
    assert [e.seq for e in events] == list(range(1, version + 1))
    for event in events[1:]:
        assert isinstance(event.payload, MessageAppended)
        text = event.payload.message.parts[0].text  # type: ignore[union-attr]
        assert text.startswith(f"{event.seq}:")
    assert (report.ok, report.events_checked) == (True, version)


AGENT = """
import hashlib, json, sys
from sessionstore import SessionStore, ToolCall, Usage

def digest(context):
    return hashlib.sha256(json.dumps(context.to_dicts()).encode()).hexdigest()

store = SessionStore(sys.argv[1], snapshot_every=7)
s = store.create_session(model="gpt-4o", context_window=128_000, title="killed")
print(s.id, flush=True)
s.append_system("You are a coding agent.")
task = s.append_user("Fix every failing test.")
s.pin(task.id)
turn = 0
while True:
    turn += 1
    s.append_assistant(f"turn {turn}", tool_calls=[ToolCall(id=f"c{turn}", name="bash")],
                       usage=Usage(input=turn * 50, output=10))
    print(s.version, digest(s.context()), flush=True)
    s.append_tool_result(f"c{turn}", output="x" * (turn * 997 % 30_000))
    print(s.version, digest(s.context()), flush=True)
    if turn % 9 == 0:
        s.revert(s.context().messages[-3].id)
        print(s.version, digest(s.context()), flush=True)
"""


def test_an_agent_killed_mid_run_resumes_with_the_identical_context(backend: Backend) -> None:
    create_schema(backend)  # as an operator does: the child only appends
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, backend.url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert agent.stdout is not None
    session_id = agent.stdout.readline().strip()
    seen: dict[int, str] = {}
    for line in agent.stdout:
        printed_version, printed_digest = line.split()
        seen[int(printed_version)] = printed_digest
        if len(seen) >= 80:
            break
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait(timeout=30)
    assert agent.returncode == -signal.SIGKILL, agent.stderr.read() if agent.stderr else ""

    with SessionStore(backend.url) as store:
        resumed = store.session(session_id)
        assert resumed.version >= max(seen)
        for version, digest in seen.items():
            context = resumed.context(at=version)
            assert hashlib.sha256(json.dumps(context.to_dicts()).encode()).hexdigest() == digest
        scratch = context_of(store._log.fold_from_scratch(session_id, resumed.version))
        assert resumed.context() == scratch
        assert store.verify(session_id).ok
