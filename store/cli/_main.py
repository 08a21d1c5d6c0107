"""The entry point: arguments in, one line per error out, an exit code."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from sessionstore.cli._tree import cli

USAGE_ERROR = 2


def run(argv: Sequence[str] | None = None) -> int:
    """`sessionstore ARGV`: its exit code, every error one line on stderr (`--debug` raises
    instead); Ctrl-C is left to `main`, which catches it wherever it comes."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args  # accepted anywhere, before or after the command
    if debug:
        args = ["--debug", *(arg for arg in args if arg != "--debug")]
    try:
        result = cli.main(args=args, prog_name="sessionstore", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `sessionstore`, `sessionstore db`
        click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
        return 0
    except click.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx else "sessionstore"
        _error(f"{exc.format_message()} (see {path} --help)".replace("\n", " "))
        return USAGE_ERROR
    except click.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # click turned Ctrl-C into Abort: say it as main does
        _error("aborted")  # a question answered with no
        return 1
    except click.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, OSError) or _refusal(exc):
            _error(_first_line(str(exc)) or type(exc).__name__)
            return 1
        # a bug of ours: still one line, with the way to see more
        _error(
            f"unexpected {type(exc).__name__}: {_first_line(str(exc))} "
            "(run with --debug for the traceback)"
        )
        return 1
    return result if isinstance(result, int) else 0


def _refusal(exc: Exception) -> bool:
    """Whether `exc` is the store's own refusal (a `SessionStoreError`), told without importing
    the store's vocabulary into a run that never loaded it (it then raised none)."""
    events = sys.modules.get("sessionstore.events")
    return events is not None and isinstance(exc, events.SessionStoreError)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _error(message: str) -> None:
    print(f"sessionstore: error: {_first_line(message)}", file=sys.stderr)
