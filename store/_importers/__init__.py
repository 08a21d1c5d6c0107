"""Importers: foreign transcripts (OpenAI chat messages, Claude Code JSONL) as our payloads.

Pure functions, no I/O: they return the events that follow a `SessionStarted`, so the caller
can write the whole session in one transaction or nothing at all. Malformed input is refused
with `ImportRefused` naming the line (or message index) at fault. Tool outputs are kept whole:
a transcript records what the model was shown, so nothing is truncated on import.
"""

from store._importers._claude_code import ClaudeCodeImport, claude_code_events
from store._importers._common import json_object
from store._importers._openai import openai_events

__all__ = ["ClaudeCodeImport", "claude_code_events", "json_object", "openai_events"]
