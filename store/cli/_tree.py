"""The command tree: the root group, and the module each command lives in.

A command's module is imported when that command runs (or a help lists it), so `sessionstore
--version` loads click alone and `sessionstore ls` loads what listing needs, not the importers,
Alembic, the async face or the integrations (click's documented way: a group whose
`get_command` imports)."""

from __future__ import annotations

import importlib

import click

from sessionstore.cli._app import DB_HELP, Cli, accept_db_after, database_url

HOMES = {
    "demo": "_demo",
    "ls": "_look",
    "show": "_look",
    "timeline": "_look",
    "artifacts": "_look",
    "context": "_look",
    "diff": "_look",
    "search": "_find",
    "redact": "_change",
    "prune": "_change",
    "compact": "_change",
    "restore": "_change",
    "fork": "_change",
    "verify": "_integrity",
    "stats": "_integrity",
    "export": "_move",
    "import": "_move",
    "db": "_db",
    "view": "_view",
}
"""Each command's module in `sessionstore.cli`, which defines it as `COMMANDS[name]`."""


class CommandTree(click.Group):
    """The root group: it knows its commands by name and imports each on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(HOMES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in HOMES:
            module = importlib.import_module(f"sessionstore.cli.{HOMES[cmd_name]}")
            command: click.Command = module.COMMANDS[cmd_name]
            accept_db_after(command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=CommandTree, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="URL", callback=database_url, help=DB_HELP)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="sessionstore", prog_name="sessionstore")
@click.pass_context
def cli(ctx: click.Context, db: str | None, debug: bool) -> None:
    """An append-only, event-sourced store for LLM agent sessions."""
    ctx.obj = Cli(db)
    ctx.call_on_close(ctx.obj.close)
