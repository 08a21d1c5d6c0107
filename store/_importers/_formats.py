"""The agents' own formats an import reads from disk, how each is recognised, and where their
files are: one `Format` per agent, in `FORMATS`.

A format recognises a file by its first line (each agent's first record has a shape of its
own), reads a file's text into `Transcript`s, and names the files of its sessions under a
folder (`~/.claude/projects`, `~/.codex/sessions`), so `sessionstore import FOLDER` finds them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from store._importers._claude_code import claude_code_transcript, looks_like_claude_code
from store._importers._transcript import Transcript

Reader = Callable[[str, str, str], list[Transcript]]
"""(the file's text, the token encoding, the file's name) -> the sessions it holds."""


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    recognises: Callable[[Any], bool]
    """Whether a file whose first line parses to this value is in this format."""
    read: Reader
    pattern: str = "*.jsonl"
    """The files of this format's sessions, under a folder (a glob, recursive)."""


FORMATS: dict[str, Format] = {
    "claude-code": Format(
        "claude-code",
        looks_like_claude_code,
        lambda text, encoding, name: [claude_code_transcript(text, encoding, name)],
    ),
}


def first_value(text: str) -> Any:
    """The first non-empty line of `text` as JSON (`None` when it is not JSON); a JSON
    document that is not JSONL (an export's object) parses whole."""
    for line in text.split("\n", 50)[:50]:
        if line.strip():
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def recognise(text: str, path: PurePath) -> Format | None:
    """The format of a file, by its first line (`None`: none of ours)."""
    value = first_value(text)
    for form in FORMATS.values():
        if path.match(form.pattern) and form.recognises(value):
            return form
    return None
