"""The real agent sessions the fidelity benchmark replays: `--sessions real` (or one by name).

Synthetic sessions show what the code was written to handle; recorded ones show what agents
and people actually write (a 183-character instruction, a pasted log, a model that answers
with a traceback). The transcripts live outside the repository, in `../shared/transcripts`
beside it (their licences and sources are in its SOURCES.md); they are never copied in. When
the folder or a file is absent, the session is skipped with a message saying so.

Each is imported through `SessionStore.import_session` in its agent's format, like any
transcript; a gzipped one is unpacked into the run's scratch folder first. The replay gets the
messages the agent's conversation ended with, in order: what an import popped or reverted (an
aborted turn, an abandoned branch) is left out, and the agent's own compactions are not
replayed (the benchmark compacts with its own settings).
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass
from pathlib import Path

from sessionstore import SessionStore
from sessionstore.events import Message, MessageAppended, MessagePopped, MessagesReverted
from sessionstore.session import ImportFormat

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
"""`../shared/transcripts`, beside the repository."""


@dataclass(frozen=True)
class RealTranscript:
    name: str
    """What `--sessions` calls it."""
    label: str
    """Its row in the table."""
    path: str
    """Under the transcripts folder."""
    format: ImportFormat


REAL = (
    RealTranscript("real-pi", "pi, before-compaction", "pi-mono/before-compaction.jsonl.gz", "pi"),
    RealTranscript(
        "real-pi-large", "pi, large-session", "round3/pi/pi-mono-large-session.jsonl", "pi"
    ),
    RealTranscript(
        "real-claude-code",
        "Claude Code, spotter 258c7280",
        "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "claude-code",
    ),
    RealTranscript(
        "real-codex",
        "Codex, rollout 019e1625",
        "round3/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "codex",
    ),
    RealTranscript(
        "real-opencode",
        "OpenCode, curious-sailor",
        "round3/opencode/session__curious-sailor__ses_39b7f9e89ffe7J0WzLzYrUt4eW.json",
        "opencode",
    ),
)
BY_NAME = {t.name: t for t in REAL}
ALL_REAL = "real"
"""`--sessions real`: every one of `REAL`."""


def missing(transcript: RealTranscript, folder: Path) -> str | None:
    """Why `transcript` cannot be replayed from `folder`, or `None` when it can."""
    if not folder.is_dir():
        return f"{folder} is absent (the real transcripts are kept outside the repository)"
    if not (folder / transcript.path).is_file():
        return f"{folder / transcript.path} is absent"
    return None


def real_messages(
    store: SessionStore, transcript: RealTranscript, folder: Path, scratch: Path
) -> tuple[Message, ...]:
    """The messages of `transcript` (under `folder`) as `store` imports them, in the order the
    agent's conversation ended with; a gzipped file is unpacked under `scratch` first."""
    path = folder / transcript.path
    if path.suffix == ".gz":
        unpacked = scratch / path.stem
        with gzip.open(path) as source, unpacked.open("wb") as target:
            shutil.copyfileobj(source, target)
        path = unpacked
    result = store.import_session(path, format=transcript.format)
    events = store.read(result.session_ids[0])  # the main session; subagents come after it
    left: set[str] = set()
    for event in events:
        if isinstance(event.payload, MessagePopped):
            left.add(event.payload.message_id)
        elif isinstance(event.payload, MessagesReverted) and not event.payload.strategy:
            left.update(event.payload.reverted_message_ids)
    return tuple(
        e.payload.message
        for e in events
        if isinstance(e.payload, MessageAppended) and e.payload.message.id not in left
    )
