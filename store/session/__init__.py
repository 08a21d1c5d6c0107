"""The public face: `SessionStore` and `Session`, and the inputs they check.

`SessionStore` opens a database and holds sessions; `Session` is one conversation's handle:
appends, reads, replays, redacts. Both delegate: storage to `sessionstore.storage`, the log to
`sessionstore.log`, the window to `sessionstore.context`. The input models (`ToolCall`, tool
results, state, what to restore) turn a caller's arguments into events or refuse them before
any I/O.

A session's handle and the input models need pydantic, the folds and the tokenizer; opening a
store and listing its sessions need none of them. Their names are imported from their modules on
first use (PEP 562), and `SessionStore` imports each where a method first needs it.
"""

from __future__ import annotations

import typing

from sessionstore.events import lazy_exports as _lazy_exports
from sessionstore.session._arguments import LABEL_LENGTH, SQL_INT_MAX
from sessionstore.session._store import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_SNAPSHOT_EVERY,
    MAX_SEARCH_HITS,
    ImportFormat,
    SessionStore,
    check_store_options,
    utc_now,
)

if typing.TYPE_CHECKING:  # what type checkers see; at run time `__getattr__` imports them
    from sessionstore.context import ContextCheck
    from sessionstore.session._session import Session, ToolCall
    from sessionstore.session._tool_calls import ToolCallLike
    from sessionstore.session._tool_results import ResultBlock, result_content

__all__ = [
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "DEFAULT_SNAPSHOT_EVERY",
    "LABEL_LENGTH",
    "MAX_SEARCH_HITS",
    "SQL_INT_MAX",
    "ContextCheck",
    "ImportFormat",
    "ResultBlock",
    "Session",
    "SessionStore",
    "ToolCall",
    "ToolCallLike",
    "check_store_options",
    "result_content",
    "utc_now",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "sessionstore.context": ("ContextCheck",),
    "sessionstore.session._session": (
        "Session",
        "ToolCall",
    ),
    "sessionstore.session._tool_calls": ("ToolCallLike",),
    "sessionstore.session._tool_results": (
        "ResultBlock",
        "result_content",
    ),
}
"""The modules imported on first use, and the names of ours each defines."""
__getattr__, __dir__ = _lazy_exports(__name__, _HOMES, globals())
