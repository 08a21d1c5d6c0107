"""The public face changes only on purpose: each package exports exactly its `__all__`."""

from __future__ import annotations

import importlib

import pytest

import sessionstore
import sessionstore.events
import sessionstore.projections


def public_names(module: object) -> set[str]:
    """The public names `module` holds once every name of its `__all__` was asked for (a
    package may import some on first use)."""
    for name in getattr(module, "__all__", ()):
        getattr(module, name)
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "") != "__future__"
        and type(value).__name__ != "module"
    }


def test_store_exports() -> None:
    # the root imports each name from its home on first use: touch them all, then compare
    assert set(sessionstore.__all__) <= set(dir(sessionstore))
    for name in sessionstore.__all__:
        getattr(sessionstore, name)
    assert (
        set(sessionstore.__all__)
        == public_names(sessionstore)
        == {
            "AnthropicCompactSummarizer",
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
            "InvalidSearchQuery",
            "InvalidSessionId",
            "LiveMessage",
            "LiveToolResult",
            "Measure",
            "ModelSummarizer",
            "NewEvent",
            "NotInContext",
            "OpenAIChatSummarizer",
            "OpenAICompactSummarizer",
            "PayloadTooLarge",
            "PrunePlan",
            "RecordedEvent",
            "SchemaMismatch",
            "SearchHit",
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


def test_a_name_the_root_does_not_export_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Sesion'"):
        sessionstore.Sesion  # noqa: B018  (the misspelling a user makes)


def test_events_exports_only_its_all() -> None:
    assert set(sessionstore.events.__all__) == public_names(sessionstore.events)


def test_projections_exports_only_its_all() -> None:
    assert set(sessionstore.projections.__all__) == public_names(sessionstore.projections)


SUBPACKAGES = (
    "aio", "cli", "context", "events", "importers", "log", "projections", "providers", "session",
    "storage",
)  # fmt: skip


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_exports_only_its_all_and_says_what_it_owns(name: str) -> None:
    package = importlib.import_module(f"sessionstore.{name}")
    assert set(package.__all__) == public_names(package)
    assert len((package.__doc__ or "").split()) >= 20, "a docstring that says what it owns"


def test_every_exported_exception_derives_from_the_one_root() -> None:
    exceptions = {
        name
        for name in sessionstore.__all__
        if isinstance(getattr(sessionstore, name), type)
        and issubclass(getattr(sessionstore, name), Exception)
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
        "InvalidSearchQuery",
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
    root = sessionstore.SessionStoreError
    assert all(issubclass(getattr(sessionstore, name), root) for name in exceptions)
