"""An import writes a batch of events per transaction and holds no more than a batch: a
process killed between two batches leaves a session that importing the file again completes
into exactly what one clean import writes (the same events, times and hashes, and the same
`sessions` row); and what an import allocates is a batch and the longest line, not the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sessionstore import SessionStore
from sessionstore.context import load_encoding
from sessionstore.events import DEFAULT_ENCODING
from tests.conftest import full_in_slow

SESSION = "7c2d4e1a-6b2d-4e8f-a1c7-92d05b7e4f10"
SESSION_ID = f"claude-code-{SESSION}"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


BIG_OUTPUT = "".join(f"{n:6d}  a line a tool printed\n" for n in range(1 << 15))
"""A tool's output of a megabyte (of lines: what tools print, and what tiktoken reads fast)."""


def lines(turns: int, *, output: int = 40, large: tuple[int, ...] = ()) -> Iterator[str]:
    """A Claude Code session of `turns` turns, each a prompt, a tool call, its result (of
    `output` characters; of a megabyte in the turns named in `large`) and an answer, every
    line with its time (so two imports of it give the same hashes)."""
    parent = None
    line = 0

    def entry(kind: str, message: dict[str, Any]) -> str:
        nonlocal parent, line
        line += 1
        uuid = f"00000000-0000-4000-8000-{line:012d}"
        at = (T0 + timedelta(seconds=line)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        value = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION}
        parent = uuid
        return json.dumps({**value, "timestamp": at, "message": message}) + "\n"

    for turn in range(turns):
        call = f"toolu_{turn}"
        yield entry("user", {"role": "user", "content": f"prompt {turn}"})
        use = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}
        yield entry("assistant", {"id": f"msg_{turn}a", "role": "assistant", "content": [use]})
        text = BIG_OUTPUT if turn in large else f"out {turn} " + "y" * output
        result = {"type": "tool_result", "tool_use_id": call, "content": text}
        yield entry("user", {"role": "user", "content": [result]})
        said = [{"type": "text", "text": f"answer {turn}"}]
        yield entry("assistant", {"id": f"msg_{turn}b", "role": "assistant", "content": said})


KILLED_AFTER_TWO_BATCHES = """
import os, signal, sys
from pathlib import Path
import sessionstore.importers._import as batches
from sessionstore import SessionStore

batches._BATCH_EVENTS = int(sys.argv[3])
with SessionStore(sys.argv[2]) as store:
    recorder = store._log.recorder
    real_write = recorder.write
    writes = []

    def write(*args, **kwargs):
        positions = real_write(*args, **kwargs)
        writes.append(len(positions))
        if len(writes) == 2:  # two batches committed: the process dies, cleaning up nothing
            os.kill(os.getpid(), signal.SIGKILL)
        return positions

    recorder.write = write
    store.import_session(Path(sys.argv[1]))
"""


def held(store: SessionStore) -> list[tuple[int, str, str, object]]:
    return [(e.seq, e.event_id, e.hash, e.payload) for e in store.read(SESSION_ID)]


def test_an_import_killed_between_batches_is_completed_by_importing_again(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("".join(lines(65)))  # 2 + 260 events: batches of 100 (of 1,000 in use)
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_TWO_BATCHES, str(transcript), url, "100"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    with SessionStore(url) as store, SessionStore(f"sqlite:///{tmp_path / 'clean.db'}") as clean:
        assert store.version(SESSION_ID) == 2 + 2 * 100  # two whole batches, nothing more
        resumed = store.import_session(transcript)
        whole = clean.import_session(transcript)

        assert (resumed.created, resumed.events_written) == ([], 60)
        assert whole.events_written == 2 + 260
        assert held(store) == held(clean)
        assert (
            store.session_info(SESSION_ID).live_tokens
            == clean.session_info(SESSION_ID).live_tokens
            == store.session(SESSION_ID).tokens
        )
        assert store.verify(SESSION_ID).ok
        assert store.import_session(transcript).events_written == 0


HEADROOM = 50 << 20
"""What an import may allocate besides ten times its longest line: its batch (a megabyte of
stored JSON at most, some ten in objects), the reader's state, the store's statements."""


@full_in_slow("count", default=2_000, full=8_000)
def test_an_import_allocates_a_batch_and_its_longest_line_not_the_file(
    tmp_path: Path, count: int
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    with transcript.open("w") as file:  # three lines of a megabyte among the short ones
        file.writelines(lines(count // 4, large=(10, count // 8, count // 4 - 1)))
    longest = max(len(line) for line in transcript.read_bytes().splitlines())
    load_encoding(DEFAULT_ENCODING)  # loaded once per process, whatever is imported

    with SessionStore(f"sqlite:///{tmp_path / 'big.db'}") as store:
        tracemalloc.start()
        try:
            result = store.import_session(transcript)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

        assert result.events_written == 2 + count
        assert peak <= HEADROOM + 10 * longest, f"{peak:,} bytes at the peak"
