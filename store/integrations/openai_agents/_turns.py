"""A branch's items read as the SDK's `AdvancedSQLiteSession` reads them: turns, item types,
tool names, tool usage. Pure functions over the items, oldest first.

The SDK writes this structure into tables beside its messages (`message_structure`) when it
adds items; here it is a fold of the items themselves, so it can never disagree with them: a
popped item leaves its turn, a cleared branch has no turns, and a branch (a fork) has the turns
of the history it was forked from. A turn is a user message and the items after it up to the
next one (turn 0: the items before the first user message), numbered from 1 on each branch,
which is what the SDK's `branch_turn_number` and `user_turn_number` both are on one branch.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

UNNAMED_TOOL_TYPES = frozenset(
    {
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "shell_call",
        "apply_patch_call",
        "tool_search_call",
        "tool_search_output",
    }
)
"""Tool items with no `name` field: the SDK names the tool by the item's type."""

TOOL_CALL_TYPES = frozenset(
    {
        "tool_call",
        "function_call",
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "tool_search_call",
        "custom_tool_call",
        "mcp_call",
        "mcp_approval_request",
        "shell_call",
        "apply_patch_call",
    }
)
"""The item types `get_tool_usage` counts as one use of a tool (never their outputs)."""


@dataclass(frozen=True, slots=True)
class TurnItem:
    """One item of a branch with the SDK's structure metadata: the message that holds it, its
    type (`user`, `assistant` or the item's `type`), the tool it names, and its turn."""

    message_id: str
    item: Any
    type: str
    tool_name: str | None
    turn: int


def is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user"


def item_type(item: Any) -> str:
    """The SDK's `message_type`: the role for user and assistant messages, else the type."""
    if isinstance(item, dict):
        if item.get("role") in ("user", "assistant"):
            return str(item["role"])
        if item.get("type"):
            return str(item["type"])
    return "other"


def tool_name(item: Any) -> str | None:
    """The tool an item calls or answers, named as the SDK's analytics name it: an MCP call by
    `server.name`, a hosted tool by its type, a function by `namespace.name` (the name alone when
    the namespace is the SDK's synthetic one, equal to the name)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind in ("mcp_call", "mcp_approval_request") and "server_label" in item:
        server, name = item.get("server_label"), item.get("name")
        if name and server:
            return f"{server}.{name}"
        return str(server) if server else str(name) if name else None
    if kind in UNNAMED_TOOL_TYPES:
        return "tool_search" if kind in ("tool_search_call", "tool_search_output") else str(kind)
    if "name" in item:
        name, namespace = item.get("name"), item.get("namespace")
        if name is None:
            return None
        name, namespace = str(name), None if namespace is None else str(namespace)
        if name and namespace and namespace != name:
            return f"{namespace}.{name}"
        return name
    return None


def turn_items(messages: list[tuple[str, Any]]) -> list[TurnItem]:
    """Each (message id, item) of a branch, oldest first, with its type, tool and turn."""
    turn = 0
    rows = []
    for message_id, item in messages:
        if is_user_message(item):
            turn += 1
        rows.append(TurnItem(message_id, item, item_type(item), tool_name(item), turn))
    return rows


def turn_anchor(rows: list[TurnItem], turn: int) -> str | None:
    """The first message of `turn`: what usage recorded for the turn is tied to, so usage of a
    turn that was popped (and whose number a new turn took) is never reported for the new one."""
    return next((row.message_id for row in rows if row.turn == turn), None)


def tool_usage(rows: list[TurnItem]) -> list[tuple[str | None, int, int]]:
    """(tool name, uses, turn) per tool and turn, by turn: each call counts once; a
    `tool_search_output` counts only when its turn holds no `tool_search_call` of that tool
    (a search the server ran, whose call is not among the items)."""
    searched = {(row.turn, row.tool_name) for row in rows if row.type == "tool_search_call"}
    uses: Counter[tuple[str | None, int]] = Counter()
    for row in rows:
        if row.type in TOOL_CALL_TYPES:
            name = row.tool_name
            if name is None and row.type in ("shell_call", "apply_patch_call"):
                name = row.type
            uses[name, row.turn] += 1
        elif row.type == "tool_search_output" and (row.turn, row.tool_name) not in searched:
            uses[row.tool_name, row.turn] += 1
    ordered = sorted(uses.items(), key=lambda entry: (entry[0][1], entry[0][0] or ""))
    return [(name, count, turn) for (name, turn), count in ordered]


def content_preview(content: Any, max_length: int | None = None) -> str:
    """A user message's content as text (a list of parts as its JSON), cut to `max_length`
    characters and an ellipsis."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if max_length is not None and len(text) > max_length:
        return text[:max_length] + "..."
    return text


def text_of(content: Any) -> list[str]:
    """The texts a search looks in: the content, or the `text` of each of its parts."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part.get("text", "") for part in content if isinstance(part, dict)]
    return []


def user_turns(
    rows: list[TurnItem],
    recorded: Mapping[str, tuple[str, int, datetime]],
    pattern: re.Pattern[str] | None = None,
) -> list[dict[str, Any]]:
    """The user turns as `get_conversation_turns` gives them (`recorded`: where and when each
    message was recorded); with `pattern`, those whose text it finds, as
    `find_turns_by_content` gives them (the content uncut)."""
    turns = []
    for row in rows:
        if row.type != "user":
            continue
        content = row.item.get("content", "")
        if pattern is not None and not any(pattern.search(text) for text in text_of(content)):
            continue
        turns.append(
            {
                "turn": row.turn,
                "content": content_preview(content, None if pattern else 100),
                "full_content": content,
                "timestamp": sqlite_time(recorded[row.message_id][2]),
                "can_branch": True,
            }
        )
    return turns


def sqlite_time(moment: datetime) -> str:
    """A time as SQLite's `CURRENT_TIMESTAMP` writes it (UTC, to the second): the SDK's
    `created_at` and `timestamp` values."""
    return moment.strftime("%Y-%m-%d %H:%M:%S")
