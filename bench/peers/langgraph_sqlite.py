# mypy: ignore-errors
"""LangGraph `SqliteSaver` (langgraph-checkpoint-sqlite) with a `MessagesState`-like channel.

It is driven the way Pregel drives it in an agent graph, one super-step per message: the
step's write (`put_writes`, the new message) and then the checkpoint (`put`), whose
`channel_values["messages"]` is the whole list (`add_messages` is a `BinaryOperatorAggregate`
channel, stored in full at every checkpoint). Pregel's own per-step overhead is left out, so
these figures are a lower bound for a real graph. Resume is `get_tuple` of the thread (what
`graph.get_state` reads); replay is `get_tuple` of the checkpoint at that step (time travel).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from bench.mix import Msg
from bench.peers import Store, probe

MAX_MESSAGES = 1_000


class LangGraphSqliteSaver(Store):
    name = "LangGraph SqliteSaver"
    package = "langgraph, langgraph-checkpoint-sqlite"
    durability = "WAL, synchronous=FULL (SQLite default)"
    notes = "checkpoint per step holds the whole message list; Pregel overhead not counted"
    max_messages = MAX_MESSAGES
    max_reason = (
        "each checkpoint stores the whole message list, so bytes written grow with n^2 "
        "(10k messages of this mix: about 200 GB)"
    )

    _checkpoints: ClassVar[dict[tuple[str, int], str]] = {}
    """(thread, messages so far) -> checkpoint id, as `get_state_history` would list them;
    shared by the adapters of one process, so a freshly opened one can time-travel too."""

    def __init__(self) -> None:
        self.available = probe(
            "langgraph.checkpoint.sqlite", "langchain_core.messages", "langgraph.checkpoint.base"
        )
        self._conn: sqlite3.Connection | None = None
        self._saver: Any = None

    def open(self, path: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        self._saver = SqliteSaver(self._conn)
        self._saver.setup()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def new_session(self, session_id: str) -> dict[str, Any]:
        return {
            "config": {"configurable": {"thread_id": session_id, "checkpoint_ns": ""}},
            "messages": [],
            "version": None,
            "step": -1,
        }

    @staticmethod
    def _message(msg: Msg, n: int) -> Any:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        if msg.role == "user":
            return HumanMessage(content=msg.text, id=f"m{n}")
        if msg.role == "tool":
            return ToolMessage(content=msg.text, tool_call_id=msg.call_id, id=f"m{n}")
        calls = []
        if msg.tool_call is not None:
            use = msg.tool_call
            calls.append({"id": use.id, "name": use.name, "args": use.input, "type": "tool_call"})
        return AIMessage(content=msg.text, tool_calls=calls, id=f"m{n}")

    def append(self, handle: Any, msg: Msg) -> None:
        from langgraph.checkpoint.base import uuid6

        saver = self._saver
        messages: list[Any] = handle["messages"]
        message = self._message(msg, len(messages) + 1)
        handle["step"] += 1
        step = handle["step"]
        config = handle["config"]
        if "checkpoint_id" in config["configurable"]:
            saver.put_writes(config, [("messages", [message])], task_id=f"task-{step}")
        messages.append(message)
        version = saver.get_next_version(handle["version"], None)
        handle["version"] = version
        checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"messages": messages},
            "channel_versions": {"messages": version},
            "versions_seen": {"agent": {"messages": version}},
            "pending_sends": [],
            "updated_channels": ["messages"],
        }
        metadata = {"source": "loop", "step": step, "parents": {}}
        handle["config"] = saver.put(config, checkpoint, metadata, {"messages": version})
        thread = config["configurable"]["thread_id"]
        self._checkpoints[(thread, len(messages))] = handle["config"]["configurable"][
            "checkpoint_id"
        ]

    def _get(self, thread: str, checkpoint_id: str | None = None) -> int:
        configurable = {"thread_id": thread, "checkpoint_ns": ""}
        if checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpoint_id
        found = self._saver.get_tuple({"configurable": configurable})
        return len(found.checkpoint["channel_values"]["messages"])

    def load(self, handle: Any) -> int:
        return self._get(handle["config"]["configurable"]["thread_id"])

    def resume(self, session_id: str) -> int:
        return self._get(session_id)

    def replay(self, session_id: str, index: int) -> int:
        return self._get(session_id, self._checkpoints[(session_id, index)])
