"""One event loop per async store, kept for the whole run: each timed call is one
`run_until_complete`, as an agent loop awaits each store call in turn."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Loop:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, job: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(job)

    def close(self) -> None:
        self._loop.close()
