"""`sessionstore`: the command line, a thin client of `SessionStore`.

Each command parses, calls the public API, and renders (see `_views`). Every error a user can
cause is one line on stderr and a non-zero exit; `--debug` shows the traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from store._cli._commands import cli
from store._errors import SessionStoreError

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="sessionstore", standalone_mode=False)
    except click.UsageError as exc:
        command = f" {exc.ctx.info_name}" if exc.ctx and exc.ctx.parent else ""
        hint = f" (see sessionstore{command} --help)"
        _error(exc.format_message().replace("\n", " ") + hint)
        return USAGE_ERROR
    except click.Abort:
        _error("aborted")
        return 130
    except click.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code
    except (SessionStoreError, OSError) as exc:
        if "--debug" in args:
            raise
        _error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return 1
    return result if isinstance(result, int) else 0


def _error(message: str) -> None:
    print(f"sessionstore: error: {message}", file=sys.stderr)
