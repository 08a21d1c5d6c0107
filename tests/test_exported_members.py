"""The public face changes only on purpose: each package exports exactly its `__all__`."""

from __future__ import annotations

import events
import projections
import store


def public_names(module: object) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "") != "__future__"
        and type(value).__name__ != "module"
    }


def test_store_exports() -> None:
    assert (
        set(store.__all__)
        == public_names(store)
        == {
            "ArtifactTrail",
            "AsyncSession",
            "AsyncSessionStore",
            "ChainReport",
            "Checkpoint",
            "CompactionError",
            "CompactionPlan",
            "CompactionProposal",
            "CompactionRefused",
            "CompressionConfig",
            "ConcurrencyError",
            "Context",
            "ContextCheck",
            "DatabaseUnavailable",
            "ExtractiveSummarizer",
            "IdempotencyError",
            "ImportRefused",
            "InvalidArgument",
            "InvalidCheckpoint",
            "InvalidEvent",
            "InvalidReplayPoint",
            "InvalidSessionId",
            "LiveMessage",
            "LiveToolResult",
            "Measure",
            "ModelSummarizer",
            "NewEvent",
            "NotInContext",
            "OpenAIChatSummarizer",
            "PayloadTooLarge",
            "PrunePlan",
            "RecordedEvent",
            "SchemaMismatch",
            "Session",
            "SessionExists",
            "SessionHead",
            "SessionInfo",
            "SessionStore",
            "SessionStoreError",
            "Summarizer",
            "SummaryAnchors",
            "TimelineRow",
            "ToolCall",
            "ToolLimits",
            "ToolMap",
            "UnknownEncoding",
            "UnknownEventType",
            "UnknownSession",
            "UnsupportedSchemaVersion",
            "Usage",
            "VerifyReport",
        }
    )


def test_events_exports_only_its_all() -> None:
    assert set(events.__all__) == public_names(events)


def test_projections_exports_only_its_all() -> None:
    assert set(projections.__all__) == public_names(projections)


def test_every_exported_exception_derives_from_the_one_root() -> None:
    exceptions = {
        name
        for name in store.__all__
        if isinstance(getattr(store, name), type) and issubclass(getattr(store, name), Exception)
    }
    assert exceptions == {
        "CompactionError",
        "CompactionRefused",
        "ConcurrencyError",
        "DatabaseUnavailable",
        "IdempotencyError",
        "ImportRefused",
        "InvalidArgument",
        "InvalidCheckpoint",
        "InvalidEvent",
        "InvalidReplayPoint",
        "InvalidSessionId",
        "NotInContext",
        "PayloadTooLarge",
        "SchemaMismatch",
        "SessionExists",
        "SessionStoreError",
        "UnknownEncoding",
        "UnknownEventType",
        "UnknownSession",
        "UnsupportedSchemaVersion",
    }
    assert all(issubclass(getattr(store, name), store.SessionStoreError) for name in exceptions)
