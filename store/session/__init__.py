"""The public face: `SessionStore` and `Session`, and the inputs they check.

`SessionStore` opens a database and holds sessions; `Session` is one conversation's handle:
appends, reads, replays, redacts. Both delegate: storage to `sessionstore.storage`, the log to
`sessionstore.log`, the window to `sessionstore.context`. The input models (`ToolCall`, tool
results, state, what to restore) turn a caller's arguments into events or refuse them before
any I/O.
"""

from sessionstore.context import ContextCheck
from sessionstore.session._arguments import LABEL_LENGTH, SQL_INT_MAX
from sessionstore.session._session import Session, ToolCall
from sessionstore.session._store import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_SNAPSHOT_EVERY,
    MAX_SEARCH_HITS,
    ImportFormat,
    SessionStore,
    check_store_options,
    utc_now,
)
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
