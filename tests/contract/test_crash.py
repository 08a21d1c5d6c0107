"""A writer killed with SIGKILL mid-stream loses nothing it committed and leaves no half event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from events import MessageAppended
from store import SessionStore
from tests.conftest import Backend

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from store import SessionStore
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
