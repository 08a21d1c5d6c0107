"""The main session's state as `AdvancedAgentsSession` keeps it, and where its messages were
recorded: pure functions over the state (`StateChanged` deltas folded by the session) and one
read of the log.

The state holds the branch register (`BRANCH + name`: the branch's fork session id, `None` once
deleted, so the name stays taken), the clear count (`GENERATION`) and the usage stored per
branch and turn (`USAGE + branch + "/" + turn`: the run's usage and the id of the turn's first
message, the anchor that ties it to that turn).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from typing import Any

from agents.logger import log_model_action_warning
from agents.usage import Usage
from pydantic import JsonValue

from sessionstore.events import MessageAppended, SessionStarted
from sessionstore.integrations.openai_agents._turns import TurnItem, turn_anchor
from sessionstore.session import SessionStore

MAIN = "main"
BRANCH = "openai-agents.branch/"
"""State key prefix: `BRANCH + name` is the branch's fork session id, `None` once deleted (the
name stays taken)."""
GENERATION = "openai-agents.generation"
"""State key: how many times the session was cleared; a change sends instances to "main"."""
USAGE = "openai-agents.usage/"
"""State key prefix: `USAGE + branch + "/" + turn` is the usage `store_run_usage` stored."""


def recorded_where(store: SessionStore, session_id: str) -> dict[str, tuple[str, int, datetime]]:
    """Where and when each message of a session's history was recorded: message id -> (the
    session that recorded it, its seq there, its time), through the forks it descends from."""
    found: dict[str, tuple[str, int, datetime]] = {}
    at: str | None = session_id
    upto: int | None = None
    while at is not None:
        events = store.read(at, 1, upto)
        for event in events:
            if isinstance(event.payload, MessageAppended):
                found.setdefault(event.payload.message.id, (at, event.seq, event.recorded_at))
        header = events[0].payload
        assert isinstance(header, SessionStarted)
        at, upto = header.parent_session_id, header.parent_seq
    return found


def generation(state: dict[str, JsonValue]) -> int:
    value = state.get(GENERATION, 0)
    return value if isinstance(value, int) else 0


def is_branch(key: str) -> bool:
    return key.startswith(BRANCH)


def branch_names(state: dict[str, JsonValue]) -> list[str]:
    return [key[len(BRANCH) :] for key, fork in state.items() if is_branch(key) and fork]


def taken(state: dict[str, JsonValue]) -> set[str]:
    """Every branch name this session used: "main", and those of the register, deleted too."""
    return {MAIN, *(key[len(BRANCH) :] for key in state if is_branch(key))}


def fresh_name(turn: int, taken: set[str]) -> str:
    base = f"branch_from_turn_{turn}_{int(time.time())}"
    name, suffix = base, 1
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    return name


def _json(value: Any) -> JsonValue:
    result: JsonValue = json.loads(json.dumps(value))
    return result


def usage_entry(
    branch: str, turn: int, anchor: str, usage: Usage, logger: logging.Logger
) -> JsonValue:
    """What `store_run_usage` keeps for a turn: the run's counts and token details, as the SDK
    stores them, with the turn's anchor."""
    return {
        "branch": branch,
        "turn": turn,
        "anchor": anchor,
        "requests": usage.requests or 0,
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
        "total_tokens": usage.total_tokens or 0,
        "input_tokens_details": token_details(usage.input_tokens_details, "input", logger),
        "output_tokens_details": token_details(usage.output_tokens_details, "output", logger),
    }


def token_details(details: Any, which: str, logger: logging.Logger) -> JsonValue:
    """Token details as the SDK stores them (the model's fields), `None` when absent."""
    if not details:
        return None
    try:
        return _json(dict(details.__dict__))
    except (TypeError, ValueError) as exc:
        log_model_action_warning(logger, f"Failed to serialize {which} token details", exc)
        return None


def stored_usage(
    state: dict[str, JsonValue], branch: str, rows: list[TurnItem]
) -> dict[int, dict[str, Any]]:
    """The usage stored for `branch`'s turns (its items: `rows`) that are still the turns it was
    stored for (their first message is the anchor), by turn."""
    stored = [
        value
        for key, value in state.items()
        if key.startswith(USAGE) and isinstance(value, dict) and value.get("branch") == branch
    ]
    found: dict[int, dict[str, Any]] = {}
    for entry in stored:
        turn = entry["turn"]
        if isinstance(turn, int) and turn_anchor(rows, turn) == entry["anchor"]:
            found[turn] = entry
    return found
