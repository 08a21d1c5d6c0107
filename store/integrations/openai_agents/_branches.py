"""`AdvancedAgentsSession`: the API of the SDK's `AdvancedSQLiteSession` (branches, turns,
usage per turn, search over turns) on sessionstore's forks, turns and recorded state.

- **A branch is a fork.** `create_branch_from_turn(n)` forks the session that recorded turn
  `n`'s user message at the event just before it (`SessionStore.fork(at=)`): the branch's
  history is the conversation as it was then, read from its parent's events, not copied. Each
  branch is an `AgentsSession` of its own fork, so items, pops and the SDK's wrappers behave
  on a branch as on `AgentsSession`. "main" is the session named `session_id` itself.
- **The branch register, the clear generation and the usage are the main session's state**
  (`StateChanged` events, `BRANCH`, `GENERATION`, `USAGE`): one append changes them, under the
  store's optimistic concurrency, so two instances (or processes) racing to take one branch
  name cannot both get it, and a deleted or cleared branch's name stays taken, as the SDK's
  reservations keep it. Deleting a branch removes it from the register; its fork stays in the
  log (history is never rewritten), as does what `clear_session` clears.
- **Turns are read from the items** (`_turns`), so they always agree with them: a popped item
  leaves its turn, and usage stored for a turn is tied to the turn's first message, so it is
  not reported once that turn was popped, even when a new turn takes its number.
- **The current branch is this instance's**, as on the SDK: a clear by another instance
  (a new generation) sends it back to "main" before its next call.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agents import _debug
from agents.logger import log_model_action_error
from agents.memory.session import SessionABC
from agents.memory.session_settings import (
    SessionSettings,
    resolve_session_limit,
)
from agents.result import RunResult
from agents.usage import Usage
from pydantic import JsonValue

from sessionstore.aio import AsyncSessionStore
from sessionstore.events import (
    Payload,
    SessionCleared,
    StateChanged,
)
from sessionstore.integrations._sessions import async_face, retried
from sessionstore.integrations.openai_agents._register import (
    BRANCH,
    GENERATION,
    MAIN,
    USAGE,
    branch_names,
    fresh_name,
    generation,
    is_branch,
    recorded_where,
    stored_usage,
    taken,
    usage_entry,
)
from sessionstore.integrations.openai_agents._session import (
    AgentsSession,
    item_of,
    settings_of,
)
from sessionstore.integrations.openai_agents._turns import (
    TurnItem,
    sqlite_time,
    tool_usage,
    turn_anchor,
    turn_items,
    user_turns,
)
from sessionstore.session import SessionStore

"""Attempts at a change of the main session's state that lost races to other writers."""


class AdvancedAgentsSession(SessionABC):
    """An Agents SDK session with branches, turns and usage, kept in a `SessionStore` (or an
    `AsyncSessionStore`): the methods, signatures and return shapes of the SDK's
    `AdvancedSQLiteSession`. The main session is created on first use with `create`
    (keyword arguments of `SessionStore.create_session`), as `AgentsSession` creates it."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore | AsyncSessionStore,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        logger: logging.Logger | None = None,
        **create: Any,
    ) -> None:
        self.session_id = session_id
        self.session_settings: SessionSettings | None = settings_of(session_settings)
        self._face = async_face(store)
        self._store = self._face.sync
        self._main = AgentsSession(session_id, store, **create)
        self._forks: dict[str, AgentsSession] = {}
        self._branch_state: tuple[str, int | None] = (MAIN, None)
        """(current branch, the clear generation it was chosen in; `None`: not read yet)."""
        self._pointer = threading.Lock()
        self._logger = logger if logger is not None else logging.getLogger(__name__)

    @property
    def _current_branch_id(self) -> str:
        return self._branch_state[0]

    def close(self) -> None:
        """Let go of the sessions this object holds; the store is the caller's and stays open."""
        self._main.close()
        for fork in self._forks.values():
            fork.close()

    # items, on the current branch (or the one named)

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        captured = self._branch_state
        await self._face.run_sync(lambda: self._on_target(captured)[1]._add_new(items))

    async def get_items(self, limit: int | None = None, branch_id: str | None = None) -> list[Any]:
        """The branch's items, oldest first (the current branch when `branch_id` is `None`; no
        items for a branch that does not exist); the newest `limit` of them, as
        `AgentsSession.get_items`."""
        items = [item for _, item in await self._face.run_sync(self._entries_of, branch_id)]
        limit = resolve_session_limit(limit, self.session_settings)
        return items if limit is None or limit < 0 else items[-limit:] if limit > 0 else []

    async def pop_item(self) -> Any | None:
        captured = self._branch_state
        popped = await self._face.run_sync(lambda: self._on_target(captured)[1]._pop())
        return None if popped is None else item_of(popped)

    async def clear_session(self) -> None:
        """Clear every branch, as the SDK does: the main session's live context is emptied,
        every branch leaves the register (its name stays taken), usage is dropped, and this
        instance and every other one go back to "main"."""

        def clear(state: dict[str, JsonValue]) -> list[Payload]:
            live = [message_id for message_id, _ in self._main._entries()]
            values: dict[str, JsonValue] = {GENERATION: generation(state) + 1}
            values.update({key: None for key, fork in state.items() if is_branch(key) and fork})
            gone = tuple(key for key in state if key.startswith(USAGE))
            cleared = SessionCleared(cleared_message_ids=tuple(live), reason="clear_session")
            return [*([cleared] if live else []), StateChanged(values=values, removed=gone)]

        def clear_and_go_to_main() -> None:
            state = self._change_state(clear)
            with self._pointer:  # published before the call returns, as the SDK's clear does
                self._branch_state = (MAIN, generation(state))

        await self._face.run_sync(clear_and_go_to_main)

    # branches

    async def create_branch_from_turn(
        self, turn_number: int, branch_name: str | None = None
    ) -> str:
        """Fork the current branch just before turn `turn_number`'s user message, and switch to
        the fork; returns its name (`branch_from_turn_<n>_<unix time>` when `branch_name` is
        `None`). `ValueError` for a turn with no user message, a blank name, or a name this
        session used already (deleted and cleared branches' too)."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")
        captured = self._branch_state
        name, content, source = await self._face.run_sync(
            self._create_branch, captured, turn_number, branch_name
        )
        if _debug.DONT_LOG_MODEL_DATA:
            self._logger.debug(
                "Created branch '%s' from turn %s in '%s'", name, turn_number, source
            )
        else:
            self._logger.debug(
                "Created branch '%s' from turn %s ('%s') in '%s'",
                name,
                turn_number,
                content,
                source,
            )
        return name

    async def create_branch_from_content(
        self, search_term: str, branch_name: str | None = None
    ) -> str:
        """`create_branch_from_turn` at the first user turn that contains `search_term`."""
        matching = await self.find_turns_by_content(search_term)
        if not matching:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matching[0]["turn"], branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Make `branch_id` the current branch; `ValueError` when it has no items (so no branch
        that was deleted, cleared, or never made)."""

        def switch() -> bool:
            state = self._state()
            branch = self._branch(branch_id, state)
            if branch is None or not branch._entries():
                raise ValueError(f"Branch '{branch_id}' does not exist")
            with self._pointer:
                if self._branch_state[1] not in (None, generation(state)):
                    return False  # a clear came first: its reset to "main" wins
                self._branch_state = (branch_id, generation(state))
                return True

        old = self._current_branch_id
        if await self._face.run_sync(switch):
            self._logger.info("Switched from branch '%s' to '%s'", old, branch_id)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Take `branch_id` out of the register (its name stays taken, its fork stays in the
        log) with the usage stored for it. Not "main"; the current branch only with `force`,
        which switches to "main" first."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")
        if branch_id == self._current_branch_id:
            if not force:
                raise ValueError(
                    f"Cannot delete current branch '{branch_id}'. "
                    "Use force=True or switch branches first"
                )
            if not any(b["branch_id"] == branch_id for b in await self.list_branches()):
                raise ValueError(f"Branch '{branch_id}' does not exist")
            await self.switch_to_branch(MAIN)

        def delete(state: dict[str, JsonValue]) -> list[Payload]:
            branch = self._branch(branch_id, state)
            if branch is None or not branch._entries():
                raise ValueError(f"Branch '{branch_id}' does not exist")
            gone = tuple(key for key in state if key.startswith(f"{USAGE}{branch_id}/"))
            return [StateChanged(values={BRANCH + branch_id: None}, removed=gone)]

        await self._face.run_sync(self._change_state, delete)
        self._logger.info("Deleted branch '%s'", branch_id)

    async def list_branches(self) -> list[dict[str, Any]]:
        """Each branch that has items: `branch_id`, `message_count`, `user_turns`,
        `is_current`, `created_at` (when its first item came onto it, UTC, as SQLite's
        `CURRENT_TIMESTAMP` writes it), oldest first."""

        def branches() -> list[dict[str, Any]]:
            state = self._state()
            current = self._current_branch_id
            found = []
            for name in [
                MAIN,
                *(key[len(BRANCH) :] for key, v in state.items() if is_branch(key) and v),
            ]:
                branch = self._branch(name, state)
                rows = turn_items(branch._entries()) if branch is not None else []
                if not rows or branch is None:
                    continue
                created = self._first_item_time(branch.session_id, rows[0].message_id)
                row = {
                    "branch_id": name,
                    "message_count": len(rows),
                    "user_turns": sum(1 for r in rows if r.type == "user"),
                    "is_current": name == current,
                    "created_at": sqlite_time(created),
                }
                found.append((created, row))
            return [row for _, row in sorted(found, key=lambda entry: entry[0])]

        return await self._face.run_sync(branches)

    # turns

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The branch's user turns: `turn`, `content` (cut to 100 characters), `full_content`,
        `timestamp` (when it was recorded, UTC), `can_branch` (always `True`)."""
        return await self._face.run_sync(self._turns, branch_id, None)

    async def find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The user turns whose text contains `search_term` (case-insensitive for ASCII
        letters, as SQLite's `LIKE`), in the shape of `get_conversation_turns` (the content
        uncut)."""
        pattern = re.compile(re.escape(search_term), re.IGNORECASE | re.ASCII)
        return await self._face.run_sync(self._turns, branch_id, pattern)

    async def get_conversation_by_turns(
        self, branch_id: str | None = None
    ) -> dict[int, list[dict[str, str | None]]]:
        """Turn number -> the type and tool of each of its items, in order."""
        rows = await self._face.run_sync(self._rows_of, branch_id)
        turns: dict[int, list[dict[str, str | None]]] = {}
        for row in rows:
            turns.setdefault(row.turn, []).append({"type": row.type, "tool_name": row.tool_name})
        return turns

    async def get_tool_usage(
        self, branch_id: str | None = None
    ) -> list[tuple[str | None, int, int]]:
        """(tool name, uses, turn) per tool and turn of the branch, by turn."""
        return tool_usage(await self._face.run_sync(self._rows_of, branch_id))

    # usage

    async def store_run_usage(self, result: RunResult) -> None:
        """Store a run's usage (`result.context_wrapper.usage`) for the current branch's newest
        turn, replacing what was stored for it; nothing when the branch has no items or a clear
        came after this call. A failure is logged, not raised, as the SDK does."""
        try:
            usage = result.context_wrapper.usage
            if usage is None:
                return
            captured = self._branch_state
            await self._face.run_sync(self._store_usage, captured, usage)
        except Exception as exc:
            log_model_action_error(
                self._logger,
                "Failed to store session usage",
                exc,
                diagnostic_extra=lambda: {"session_id": self.session_id},
            )

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """The usage stored for every branch (or `branch_id`'s) summed: `requests`,
        `input_tokens`, `output_tokens`, `total_tokens`, `total_turns`; `None` when none is."""

        def total() -> dict[str, int] | None:
            state = self._state()
            names = [branch_id] if branch_id else [MAIN, *branch_names(state)]
            entries = [e for name in names for e in self._usage_of(name, state).values()]
            if not entries:
                return None
            keys = ("requests", "input_tokens", "output_tokens", "total_tokens")
            sums = {key: sum(int(e[key]) for e in entries) for key in keys}
            return {**sums, "total_turns": len(entries)}

        return await self._face.run_sync(total)

    async def get_turn_usage(
        self, user_turn_number: int | None = None, branch_id: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The usage stored for each turn of the branch, by turn (`user_turn_number` and the
        usage, token details included); for one turn, its usage alone, or `{}`."""

        def read() -> list[dict[str, Any]] | dict[str, Any]:
            state = self._state()
            name = branch_id if branch_id is not None else self._current_branch_id
            usage = self._usage_of(name, state)
            shown = ("requests", "input_tokens", "output_tokens", "total_tokens")
            details = ("input_tokens_details", "output_tokens_details")
            if user_turn_number is not None:
                entry = usage.get(user_turn_number)
                return {} if entry is None else {k: entry[k] for k in (*shown, *details)}
            return [
                {"user_turn_number": turn, **{k: usage[turn][k] for k in (*shown, *details)}}
                for turn in sorted(usage)
            ]

        return await self._face.run_sync(read)

    # internals: run on the store's workers

    def _state(self) -> dict[str, JsonValue]:
        """The main session's state now; a new clear generation sends this instance to main."""
        handle = self._main.session
        handle.refresh()
        state = handle.state()
        with self._pointer:
            if self._branch_state[1] != generation(state):
                branch = self._branch_state[0] if self._branch_state[1] is None else MAIN
                self._branch_state = (branch, generation(state))
        return state

    def _change_state(
        self, decide: Callable[[dict[str, JsonValue]], list[Payload]]
    ) -> dict[str, JsonValue]:
        """Append what `decide` makes of the main session's fresh state, retried when another
        writer came between the read and the append; the state after it."""
        session = self._main.session
        retried(session, lambda: session.append_events(decide(self._state())))
        return session.state()

    def _branch(self, name: str, state: dict[str, JsonValue]) -> AgentsSession | None:
        """The `AgentsSession` of a branch in the register, `None` for any other name."""
        if name == MAIN:
            return self._main
        fork = state.get(BRANCH + name)
        if not isinstance(fork, str):
            return None
        if fork not in self._forks:
            self._forks[fork] = AgentsSession(fork, self._store)
        return self._forks[fork]

    def _on_target(self, captured: tuple[str, int | None]) -> tuple[str, AgentsSession]:
        """The branch a call made while `captured` was current works on: that one, unless a
        clear came since (then "main", as the SDK does)."""
        state = self._state()
        name = captured[0] if captured[1] in (None, generation(state)) else MAIN
        branch = self._branch(name, state)
        if branch is None:
            raise ValueError(f"Branch '{name}' does not exist")
        return name, branch

    def _current_session(self) -> AgentsSession:
        """The current branch's `AgentsSession` (what `context_filter` works on)."""
        return self._on_target(self._branch_state)[1]

    def _entries_of(self, branch_id: str | None) -> list[tuple[str, Any]]:
        state = self._state()
        branch = self._branch(self._current_branch_id if branch_id is None else branch_id, state)
        return [] if branch is None else branch._entries()

    def _rows_of(self, branch_id: str | None) -> list[TurnItem]:
        return turn_items(self._entries_of(branch_id))

    def _turns(
        self, branch_id: str | None, pattern: re.Pattern[str] | None
    ) -> list[dict[str, Any]]:
        state = self._state()
        branch = self._branch(self._current_branch_id if branch_id is None else branch_id, state)
        if branch is None:
            return []
        times = recorded_where(self._store, branch.session_id)
        return user_turns(turn_items(branch._entries()), times, pattern)

    def _create_branch(
        self, captured: tuple[str, int | None], turn: int, wanted: str | None
    ) -> tuple[str, Any, str]:
        name, source = self._on_target(captured)
        rows = turn_items(source._entries())
        user = next((r for r in rows if r.turn == turn and r.type == "user"), None)
        if user is None:
            raise ValueError(f"Turn {turn} does not contain a user message in branch '{name}'")
        content = user.item.get("content", "")
        preview = content[:50] + "..." if len(content) > 50 else content
        if wanted is not None and wanted in taken(self._state()):
            raise ValueError(f"Branch ID '{wanted}' has already been used. Choose a new branch ID.")
        where, seq, _ = recorded_where(self._store, source.session_id)[user.message_id]
        fork = self._store.fork(where, at=seq - 1).id
        chosen: list[str] = []

        def register(state: dict[str, JsonValue]) -> list[Payload]:
            used = taken(state)
            if wanted is not None and wanted in used:
                raise ValueError(
                    f"Branch ID '{wanted}' has already been used. Choose a new branch ID."
                )
            chosen[:] = [wanted if wanted is not None else fresh_name(turn, used)]
            return [StateChanged(values={BRANCH + chosen[0]: fork})]

        state = self._change_state(register)
        with self._pointer:
            if generation(state) == self._branch_state[1]:
                self._branch_state = (chosen[0], generation(state))
        return chosen[0], preview, name

    def _first_item_time(self, session_id: str, message_id: str) -> datetime:
        """When a branch's first item came onto it: when it was recorded, or, for an item the
        branch's fork inherited, when the fork was made."""
        times = recorded_where(self._store, session_id)
        where, _, at = times[message_id]
        return at if where == session_id else self._store.read(session_id, 1, 1)[0].recorded_at

    def _store_usage(self, captured: tuple[str, int | None], usage: Usage) -> None:
        state = self._state()
        if captured[1] is not None and captured[1] != generation(state):
            return  # a clear came first: the usage belonged to the history it cleared
        branch = self._branch(captured[0], state)
        rows = turn_items(branch._entries()) if branch is not None else []
        turn = max((row.turn for row in rows), default=0)
        anchor = turn_anchor(rows, turn)
        if anchor is None:
            self._logger.debug("Skipping usage store: no current turn on branch %r", captured[0])
            return
        entry = usage_entry(captured[0], turn, anchor, usage, self._logger)
        key = f"{USAGE}{captured[0]}/{turn}"
        self._change_state(lambda _: [StateChanged(values={key: entry})])

    def _usage_of(self, name: str, state: dict[str, JsonValue]) -> dict[int, dict[str, Any]]:
        branch = self._branch(name, state)
        return {} if branch is None else stored_usage(state, name, turn_items(branch._entries()))
