"""What a session id may be: checked before any I/O by every call that takes one.

Its own module, light to import: opening a store and listing its sessions check ids without
loading the append path.
"""

from __future__ import annotations

from sessionstore.events import InvalidSessionId, brief
from sessionstore.storage import SESSION_ID_LENGTH


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not 0 < len(session_id) <= SESSION_ID_LENGTH:
        raise InvalidSessionId(
            f"a session id is a string of 1 to {SESSION_ID_LENGTH} characters, "
            f"got {brief(session_id)}"
        )
    if not session_id.isprintable():
        raise InvalidSessionId(f"session id {brief(session_id)} has unprintable characters")
    return session_id
