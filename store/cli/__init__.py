"""`sessionstore`: the command line, a thin client of `SessionStore`.

Each command parses, calls the public API, and renders (see `_views`). Every error a user can
cause is one line on stderr and a non-zero exit; `--debug` shows the traceback. The demo and
the scripted agent it runs (no model, no network) live here too.
"""

from __future__ import annotations

import collections.abc
import sys

INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it."""


def main(argv: collections.abc.Sequence[str] | None = None) -> int:
    """Run `sessionstore ARGV` and return its exit code. Ctrl-C at any moment, even while the
    command line is still loading, ends it with one line and `INTERRUPTED`."""
    try:
        from sessionstore.cli._main import run

        return run(argv)
    except KeyboardInterrupt:
        print("sessionstore: interrupted", file=sys.stderr)
        return INTERRUPTED


__all__ = ["INTERRUPTED", "main"]
