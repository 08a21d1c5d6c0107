"""Importers: other agents' transcripts as sessions (Claude Code, Codex, pi, OpenCode, OpenAI
chat messages).

Each format's reader is pure: it returns the events that follow a `SessionStarted`, reading
large files through a temporary index so memory does not grow with the file; `_import`
writes each session in one transaction or nothing at all. Malformed input is refused
with `ImportRefused` naming the line (or message index) at fault. Tool outputs are kept whole:
a transcript records what the model was shown, so nothing is truncated on import.
"""

from sessionstore.importers._claude_code import ClaudeCodeImport, claude_code_events
from sessionstore.importers._formats import FORMATS
from sessionstore.importers._import import (
    Header,
    ImportedSession,
    ImportResult,
    import_path,
    import_text,
)
from sessionstore.importers._openai import openai_events

__all__ = [
    "FORMATS",
    "ClaudeCodeImport",
    "Header",
    "ImportResult",
    "ImportedSession",
    "claude_code_events",
    "import_path",
    "import_text",
    "openai_events",
]
