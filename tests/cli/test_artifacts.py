"""`sessionstore artifacts` and `Session.artifacts` on the CLI's small session: exact output."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sessionstore import AsyncSessionStore, SessionStore
from tests.cli.conftest import Cli


def without_seq(shown: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in shown.items() if key != "seq"}


EXPECTED = {
    "session_id": "s1",
    "seq": 10,
    "requests": [
        {
            "seq": 3,
            "message_id": "u1",
            "text": "The parser fails on empty input.",
            "injected": False,
            "reverted": False,
        },
        {"seq": 7, "message_id": "u2", "text": "Fix it.", "injected": False, "reverted": False},
    ],
    "files": [
        {
            "path": "parser.py",
            "last_action": "modified",
            "last_seq": 9,
            "count": 2,
            "actions": [{"action": "read", "seq": 5}, {"action": "modified", "seq": 9}],
        }
    ],
    "commands": [],
    "errors": [],
    "todos": [],
    "todos_seq": None,
    "tool_calls": {"edit": 1, "read": 1},
}


def test_artifacts_json_is_the_whole_trail(cli: Cli) -> None:
    run = cli("artifacts", "s1", "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == EXPECTED


def test_artifacts_at_an_earlier_point_by_seq_and_by_time(cli: Cli) -> None:
    by_seq = json.loads(cli("artifacts", "s1", "--at", "5", "--json").out)
    assert by_seq["seq"] == 5
    assert [f["actions"] for f in by_seq["files"]] == [[{"action": "read", "seq": 5}]]
    assert [r["text"] for r in by_seq["requests"]] == ["The parser fails on empty input."]
    by_time = json.loads(cli("artifacts", "s1", "--at", "2026-11-23T12:00:04", "--json").out)
    assert by_time == by_seq  # event 5 was recorded at 12:00:04 by the fixed clock
    refused = cli("artifacts", "s1", "--at", "yesterday")
    assert refused.code == 2 and "neither an event number" in refused.err
    assert cli("artifacts", "s1", "--at", "99").err.startswith(
        "sessionstore: error: Invalid value for --at: 99 is no point of session s1: give an "
        "event number from 1 to 10"
    )


def test_artifacts_shows_each_section(cli: Cli) -> None:
    run = cli("artifacts", "s1")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        "s1 at seq 10: 2 requests, 1 files (1 changed), 0 commands, 0 errors (0 open)",
        "",
        "Requests",
        "  [3] The parser fails on empty input.",
        "  [7] Fix it.",
        "",
        "Files",
        "PATH        LAST       SEQ   TIMES",
        "parser.py   modified     9       2",
        "",
        "Commands",
        "  none",
        "",
        "Errors",
        "  none",
        "",
        "Todos",
        "  none",
    ]


def test_a_pruned_session_keeps_its_whole_trail(cli: Cli) -> None:
    before = json.loads(cli("artifacts", "s1", "--json").out)
    assert cli("prune", "s1").out.startswith("pruned 1 outputs")  # the read's output
    after = json.loads(cli("artifacts", "s1", "--json").out)
    assert without_seq(after) == without_seq(before)
    assert after["seq"] == 11


def test_a_compacted_session_keeps_its_whole_trail(cli: Cli) -> None:
    before = json.loads(cli("artifacts", "s1", "--json").out)
    assert cli("compact", "s1", "--keep-turns", "1").code == 0  # u1 and the read leave
    live = json.loads(cli("context", "s1", "--format", "json").out)
    assert "u1" not in [message["id"] for message in live]
    after = json.loads(cli("artifacts", "s1", "--json").out)
    assert without_seq(after) == without_seq(before)
    assert after["seq"] == 11


def test_the_session_and_its_async_face_give_the_same_trail(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        trail = store.session("s1").artifacts()
        earlier = store.session("s1").artifacts(at=5)

    async def read() -> tuple[Any, Any]:
        async with AsyncSessionStore(cli.url) as store:
            session = await store.session("s1")
            return await session.artifacts(), await session.artifacts(at=5)

    assert asyncio.run(read()) == (trail, earlier)
    assert [f.path for f in trail.changed_files] == ["parser.py"]
    assert [r.text for r in earlier.requests] == ["The parser fails on empty input."]
