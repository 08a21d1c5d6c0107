"""Arguments a caller builds by hand as models: a bad value is refused in one short line
(`InvalidArgument`), worded by `_brief`, rather than pydantic's `ValidationError`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from sessionstore.events._brief import describe_validation_error
from sessionstore.events._errors import InvalidArgument


class ArgumentModel(BaseModel):
    """A model callers build by hand (`Usage(...)`, `ToolCall(...)`, `CompressionConfig(...)`):
    a bad value raises `InvalidArgument` in one line instead of pydantic's `ValidationError`.

    Only the constructor changes: validating stored or received data (`model_validate`, or
    the model nested in another) still raises `ValidationError`, which the store turns into
    `InvalidEvent` where the data is an event."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidArgument(
                f"{type(self).__name__}: {describe_validation_error(exc)}"
            ) from None

    # Pydantic routes all validation (`model_validate`, a model nested in another) through an
    # `__init__` a class overrides, unless it carries this mark, as `RootModel.__init__` does.
    # This one only translates the constructor's error, so decoding stored events keeps
    # pydantic's own fast path (and its `ValidationError`). tests/events/test_arguments.py
    # fails if pydantic stops honouring the mark.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]
