"""The vocabulary of sessionstore: messages, parts, event payloads and their envelopes.

Pure data and pure functions: no I/O, no database. Everything here can be used to build events
before they reach a store, and to read and check them after.
"""

from events._canonical import GENESIS_HASH, canonical_json, event_hash, format_timestamp
from events._chain import ChainLink, ChainReport, verify_chain
from events._codec import (
    MODELS,
    UPCASTERS,
    Upcasters,
    decode_payload,
    decode_payload_json,
    encode_payload,
    parse_payload,
)
from events._compression import CompressionConfig, Direction, ToolLimits
from events._envelope import NewEvent, RecordedEvent
from events._errors import (
    InvalidArgument,
    InvalidEvent,
    SessionStoreError,
    UnknownEventType,
    UnsupportedSchemaVersion,
)
from events._ids import new_id, uuid7
from events._messages import (
    ANTHROPIC,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    FilePart,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
    Usage,
)
from events._payloads import (
    CompactionReason,
    CompressionChanged,
    ContextCompacted,
    EventPayload,
    MessageAppended,
    MessagePinned,
    MessagesReverted,
    MessageUnpinned,
    OutputsPruned,
    OutputsRestored,
    Payload,
    SessionStarted,
)

__all__ = [
    "ANTHROPIC",
    "GENESIS_HASH",
    "MODELS",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "UPCASTERS",
    "ChainLink",
    "ChainReport",
    "CompactionReason",
    "CompressionChanged",
    "CompressionConfig",
    "ContextCompacted",
    "Direction",
    "EventPayload",
    "FilePart",
    "InvalidArgument",
    "InvalidEvent",
    "Message",
    "MessageAppended",
    "MessagePinned",
    "MessageUnpinned",
    "MessagesReverted",
    "Native",
    "NativePart",
    "NewEvent",
    "OutputsPruned",
    "OutputsRestored",
    "Part",
    "Payload",
    "ReasoningPart",
    "RecordedEvent",
    "Role",
    "SessionStarted",
    "SessionStoreError",
    "TextPart",
    "ToolCallPart",
    "ToolLimits",
    "ToolResultPart",
    "Truncation",
    "UnknownEventType",
    "UnsupportedSchemaVersion",
    "Upcasters",
    "Usage",
    "canonical_json",
    "decode_payload",
    "decode_payload_json",
    "encode_payload",
    "event_hash",
    "format_timestamp",
    "new_id",
    "parse_payload",
    "uuid7",
    "verify_chain",
]
