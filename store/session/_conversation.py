"""Checks of a message against the conversation so far, before it is appended.

A message is new to the session; the tool calls it makes use call ids no earlier call used,
each once; the results it carries each answer a call that is waiting for its result, once.
The fold knows every id, so these read it and nothing else; what they refuse is never written
(a provider would refuse the conversation that holds it).
"""

from __future__ import annotations

from sessionstore.events import (
    InvalidEvent,
    Message,
    NotInContext,
    ToolCallPart,
    ToolResultPart,
    brief,
)
from sessionstore.projections import ContextFold


def pending_call(fold: ContextFold, call_id: str) -> ToolCallPart:
    """The tool call `call_id`, when it waits for its result; `NotInContext` otherwise."""
    call = fold.tool_call(call_id)
    if call is None or not fold.is_pending(call_id):
        raise NotInContext(
            f"no tool call {brief(call_id)} in {fold.session_id} is waiting for a result"
        )
    return call


def check_message(fold: ContextFold, message: Message) -> None:
    """`InvalidEvent` for a message the session has, or whose call ids are used already or
    twice, or which answers a call twice; `NotInContext` for a result of no pending call."""
    if fold.is_live(message.id):
        raise InvalidEvent(f"message {message.id} is in the session already")
    calls = [p.call_id for p in message.parts if isinstance(p, ToolCallPart)]
    if len(set(calls)) != len(calls):
        raise InvalidEvent("a message calls two tools with the same call id")
    for call_id in calls:
        if fold.is_call_id_used(call_id):
            raise InvalidEvent(f"tool call id {brief(call_id)} is used already in this session")
    answered = [p.call_id for p in message.parts if isinstance(p, ToolResultPart)]
    if len(set(answered)) != len(answered):
        raise InvalidEvent("a message answers one tool call twice")
    for call_id in answered:
        pending_call(fold, call_id)
