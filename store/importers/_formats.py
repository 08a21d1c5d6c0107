"""The agents' own formats an import reads from disk, how each is recognised, and where their
files are: one `Format` per agent, in `FORMATS`.

A format recognises a file by its first lines (each agent's first record has a shape of its
own), reads a file's lines (`TranscriptLines`, one at a time: a file can be longer than
memory) into `Transcript`s whose entries are spooled to temporary files, and names the files
of its sessions under a folder (`~/.claude/projects`, `~/.codex/sessions`,
`~/.pi/agent/sessions`, `~/.gemini/tmp`), so `sessionstore import FOLDER` finds them. A JSON
document (an OpenCode export, a Claude Code web export, an older Gemini CLI session, a Gemini
CLI checkpoint) is one value, read whole. OpenCode's storage
folder (session, message and part files) is read per session: `opencode_storage`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from sessionstore.importers._claude_code import claude_code_transcript, looks_like_claude_code
from sessionstore.importers._codex import codex_transcript, looks_like_codex
from sessionstore.importers._gemini_cli import (
    gemini_cli_subagents,
    gemini_cli_transcript,
    looks_like_gemini_cli,
)
from sessionstore.importers._lines import FileLines, TranscriptLines, head_lines
from sessionstore.importers._opencode import looks_like_opencode, opencode_transcript
from sessionstore.importers._pi import looks_like_pi, pi_transcript
from sessionstore.importers._transcript import Transcript

Reader = Callable[[TranscriptLines, str, str, Mapping[str, TranscriptLines]], list[Transcript]]
"""(the file's lines, the token encoding, the file's name, its companions' lines by name) ->
the sessions it holds, their entries spooled (`Transcript.spool`); the lines that are not
UTF-8 are among their `skipped`."""


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    recognises: Callable[[Any, list[str]], bool]
    """Whether a file is in this format, from its first line parsed (`None` when it is not
    JSON) and its first lines as text."""
    read: Reader
    patterns: tuple[str, ...] = ("*.jsonl",)
    """The files of this format's sessions, under a folder (globs, recursive)."""
    companions: Callable[[Path], list[Path]] | None = None
    """Files that belong to a session file (Claude Code's subagents), read with it."""


def _texts(lines: TranscriptLines) -> Iterator[str]:
    return (text for _, _, text in lines.numbered())


def _with_bad_lines(transcript: Transcript, lines: TranscriptLines) -> list[Transcript]:
    """The transcript with the lines that were not UTF-8 among its skipped, in line order."""
    if lines.skipped:
        found = [*transcript.skipped, *lines.skipped]
        transcript.skipped = sorted(found, key=lambda skip: skip.line or 0)
    return [transcript]


def claude_code_subagents(path: Path) -> list[Path]:
    """`<session>/subagents/agent-*.jsonl` beside `<session>.jsonl`."""
    folder = path.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


FORMATS: dict[str, Format] = {
    "claude-code": Format(
        "claude-code",
        lambda value, _: looks_like_claude_code(value),
        lambda lines, encoding, name, companions: [
            claude_code_transcript(lines, encoding, name, companions, spool=True)
        ],
        patterns=("*.jsonl", "*.json"),  # the web export is one JSON document
        companions=claude_code_subagents,
    ),
    "codex": Format(
        "codex",
        lambda _, lines: looks_like_codex(lines),
        lambda lines, encoding, name, _: _with_bad_lines(
            codex_transcript(_texts(lines), encoding, name, spool=True), lines
        ),
    ),
    "pi": Format(
        "pi",
        lambda value, _: looks_like_pi(value),
        lambda lines, encoding, _, __: _with_bad_lines(
            pi_transcript(_texts(lines), encoding, spool=True), lines
        ),
    ),
    "opencode": Format(
        "opencode",
        lambda value, _: looks_like_opencode(value),
        lambda lines, encoding, _, __: [  # one JSON document, read whole
            opencode_transcript("\n".join(_texts(lines)), encoding)
        ],
        patterns=("*.json",),
    ),
    "gemini-cli": Format(
        "gemini-cli",
        lambda value, _: looks_like_gemini_cli(value),
        lambda lines, encoding, name, companions: _with_bad_lines(
            gemini_cli_transcript(lines, encoding, name, companions, spool=True), lines
        ),
        patterns=("*.jsonl", "*.json"),  # sessions (older ones one JSON document), checkpoints
        companions=gemini_cli_subagents,
    ),
}


def first_value(text: str) -> Any:
    """The first of the first lines of `text` that parses as a JSON object (`None` when none
    does: a malformed or cut-off first line does not hide the format of the rest); a JSON
    document that is not JSONL (an export's object) parses whole."""
    for line in _objects(text):
        return json.loads(line)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def _objects(text: str, most: int = 20) -> list[str]:
    """Of the first 50 lines, up to `most` that parse as JSON objects."""
    found = []
    for line in text.split("\n", 50)[:50]:
        if not line.strip().startswith("{"):
            continue
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append(line)
            if len(found) == most:
                break
    return found


def file_head(path: Path) -> tuple[str, Any]:
    """A file's first 50 lines, each decoded by itself, and the first JSON object among them:
    what recognising its format reads. A JSON document that is not JSONL (an export's
    object, a message list) is read whole, as it must be to parse; a file whose first lines
    are no JSON at all is not read further."""
    head = "\n".join(head_lines(path))
    if _objects(head, 1) or head.lstrip()[:1] not in ("{", "["):
        return head, first_value(head)
    return head, first_value("\n".join(_texts(FileLines(path))))


def recognise(text: str, path: PurePath, value: Any = None) -> Format | None:
    """The format of a file, by its first lines that are entries (`None`: none of ours);
    `value` is their first JSON object when the caller has it (`file_head`)."""
    value = first_value(text) if value is None else value
    lines = _objects(text)
    for form in FORMATS.values():
        if any(path.match(p) for p in form.patterns) and form.recognises(value, lines):
            return form
    return None
