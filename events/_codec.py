"""Turning payloads into stored JSON and back, upgrading old schema versions on the way in.

`MODELS` maps each event `type` to the model that reads it now. A stored payload whose
`schema_version` is older than its model's is passed through the registered upcasters, one
named step per version (`v1 -> v2`, `v2 -> v3`, ...), before validation, so events written by
any released version stay readable forever. The stored row itself is never rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from sessionstore.events._brief import brief, describe_validation_error
from sessionstore.events._canonical import canonical_json
from sessionstore.events._errors import InvalidEvent, UnknownEventType, UnsupportedSchemaVersion
from sessionstore.events._payloads import PAYLOAD_TYPES, Payload

JsonObject = dict[str, Any]
Upcaster = Callable[[JsonObject], JsonObject]

MODELS: dict[str, type[Payload]] = {
    model.model_fields["type"].default: model for model in PAYLOAD_TYPES
}


class Upcasters:
    """A registry of upgrade steps: `(event type, from_version) -> step to from_version + 1`."""

    def __init__(self) -> None:
        self._steps: dict[tuple[str, int], Upcaster] = {}

    def register(self, event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Decorator: `step` upgrades a stored `event_type` payload from `from_version`."""

        def add(step: Upcaster) -> Upcaster:
            key = (event_type, from_version)
            if key in self._steps:
                raise ValueError(f"an upcaster for {event_type} v{from_version} exists already")
            self._steps[key] = step
            return step

        return add

    def upcast(self, event_type: str, version: int, data: JsonObject, target: int) -> JsonObject:
        """Apply the steps from `version` up to `target`, in order."""
        while version < target:
            step = self._steps.get((event_type, version))
            if step is None:
                raise InvalidEvent(f"no upcaster registered for {event_type} v{version}")
            data = step(dict(data))
            version += 1
        return data


UPCASTERS = Upcasters()
"""The registry the store reads with. Steps for the released vocabulary are registered here."""


def parse_payload(value: Payload | Mapping[str, Any]) -> Payload:
    """A validated payload model from a model or a mapping with a `type` key."""
    if isinstance(value, Payload):
        return value
    if not isinstance(value, Mapping):
        raise InvalidEvent(
            f"an event payload must be a payload model or a mapping, not {type(value).__name__}"
        )
    event_type = value.get("type")
    model = MODELS.get(event_type) if isinstance(event_type, str) else None
    if model is None:
        raise UnknownEventType(event_type if isinstance(event_type, str) else brief(event_type))
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InvalidEvent(f"{event_type}: {describe_validation_error(exc)}") from None


def encode_payload(payload: Payload) -> tuple[JsonObject, bytes]:
    """The stored JSON object (without `type`, which the envelope holds) and its canonical bytes."""
    data = payload.model_dump(mode="json", exclude={"type"})
    return data, canonical_json(data)


def decode_payload(
    event_type: str,
    schema_version: int,
    data: Mapping[str, Any],
    upcasters: Upcasters = UPCASTERS,
) -> Payload:
    """The current model of a stored payload, upcast from its stored `schema_version`."""
    model = MODELS.get(event_type)
    if model is None:
        raise UnknownEventType(event_type)
    current = model.schema_version
    if schema_version > current:
        raise UnsupportedSchemaVersion(event_type, schema_version, current)
    stored = dict(data)
    if schema_version < current:
        stored = upcasters.upcast(event_type, schema_version, stored, current)
    try:
        return model.model_validate(stored)
    except ValidationError as exc:
        raise InvalidEvent(
            f"stored {event_type} v{schema_version} does not fit the model: "
            f"{describe_validation_error(exc)}"
        ) from None


def decode_payload_json(event_type: str, schema_version: int, text: str) -> Payload:
    """`decode_payload` from the stored JSON text. With no upcast to run, pydantic parses and
    validates it in one pass, about twice as fast as `json.loads` and then validating: resume
    and replay decode every live message this way."""
    model = MODELS.get(event_type)
    if model is None or schema_version != model.schema_version:
        return decode_payload(event_type, schema_version, json.loads(text))
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise InvalidEvent(
            f"stored {event_type} v{schema_version} does not fit the model: "
            f"{describe_validation_error(exc)}"
        ) from None
