"""Names a package exports from modules it imports only on first use (PEP 562): how `events`,
`log` and `session` keep `sessionstore ls` from loading pydantic, the append path or replay
until something asks for them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, Sequence[str]], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose module dict is `namespace`: a name
    of `homes` (a module, and the names of ours it defines) is imported from its module the
    first time it is asked for, and kept in the namespace after (so the next lookup is a plain
    one); any other name is an `AttributeError`, as for any module."""
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in home_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home_of[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
