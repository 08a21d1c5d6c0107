"""The agents' own formats an import reads from disk, how each is recognised, and where their
files are: one `Format` per agent, in `FORMATS`.

A format recognises a file by its first lines (each agent's first record has a shape of its
own), reads a file's text into `Transcript`s, and names the files of its sessions under a
folder (`~/.claude/projects`, `~/.codex/sessions`, `~/.pi/agent/sessions`), so
`sessionstore import FOLDER` finds them. OpenCode's storage folder (session, message and part
files) is read as a whole: `opencode_storage`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from store._importers._claude_code import claude_code_transcript, looks_like_claude_code
from store._importers._codex import codex_transcript, looks_like_codex
from store._importers._opencode import looks_like_opencode, opencode_transcript
from store._importers._pi import looks_like_pi, pi_transcript
from store._importers._transcript import Transcript

Reader = Callable[[str, str, str, Mapping[str, str]], list[Transcript]]
"""(the file's text, the token encoding, the file's name, its companions' texts by name) ->
the sessions it holds."""


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


def _lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.split("\n")]


def claude_code_subagents(path: Path) -> list[Path]:
    """`<session>/subagents/agent-*.jsonl` beside `<session>.jsonl`."""
    folder = path.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


FORMATS: dict[str, Format] = {
    "claude-code": Format(
        "claude-code",
        lambda value, _: looks_like_claude_code(value),
        lambda text, encoding, name, companions: [
            claude_code_transcript(text, encoding, name, companions)
        ],
        patterns=("*.jsonl", "*.json"),  # the web export is one JSON document
        companions=claude_code_subagents,
    ),
    "codex": Format(
        "codex",
        lambda _, lines: looks_like_codex(lines),
        lambda text, encoding, name, _: [codex_transcript(_lines(text), encoding, name)],
    ),
    "pi": Format(
        "pi",
        lambda value, _: looks_like_pi(value),
        lambda text, encoding, _, __: [pi_transcript(_lines(text), encoding)],
    ),
    "opencode": Format(
        "opencode",
        lambda value, _: looks_like_opencode(value),
        lambda text, encoding, _, __: [opencode_transcript(text, encoding)],
        patterns=("*.json",),
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


def recognise(text: str, path: PurePath) -> Format | None:
    """The format of a file, by its first lines that are entries (`None`: none of ours)."""
    value = first_value(text)
    lines = _objects(text)
    for form in FORMATS.values():
        if any(path.match(p) for p in form.patterns) and form.recognises(value, lines):
            return form
    return None
