"""`sessionstore`: the command line, a thin client of `SessionStore`.

Each command parses, calls the public API, and renders (see `_views`). Every error a user can
cause is one line on stderr and a non-zero exit; `--debug` shows the traceback. The demo and
the scripted agent it runs (no model, no network) live here too.
"""

from sessionstore.cli._main import main

__all__ = ["main"]
