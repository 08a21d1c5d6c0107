"""`--db` before or after the command, and what read-only commands promise: they never
create, migrate or write to a database, and refuse one that is not sessionstore's."""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.storage._migrate import alembic_config
from tests.builders import conversation
from tests.cli.conftest import Cli, Run
from tests.conftest import Backend
from tests.contract.test_migrations import table_names

READ_ONLY = [
    ["ls"],
    ["show", "s1"],
    ["timeline", "s1"],
    ["context", "s1"],
    ["diff", "s1", "--from", "1"],
    ["verify", "--all"],
    ["stats"],
    ["export", "s1"],
    ["db", "current"],
]
COMMANDS = [
    ["demo"], ["ls"], ["show"], ["timeline"], ["context"], ["diff"], ["prune"], ["compact"],
    ["restore"], ["fork"], ["verify"], ["stats"], ["export"], ["import"], ["db"],
    ["db", "upgrade"], ["db", "current"],
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    code = main(list(args))
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def one_line_error(result: Run, code: int, message: str) -> None:
    assert (result.code, result.out, result.err) == (code, "", f"sessionstore: error: {message}\n")


def files_of(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


# --db anywhere


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_db_after_the_command_is_the_same_as_before_it(cli: Cli, args: list[str]) -> None:
    before = run(cli.capsys, "--db", cli.url, *args)
    after = run(cli.capsys, *args, "--db", cli.url)
    assert before.code == 0, before.err
    assert after == before


def test_db_between_db_and_its_command(cli: Cli) -> None:
    between = run(cli.capsys, "db", "--db", cli.url, "current")
    assert between == run(cli.capsys, "--db", cli.url, "db", "current")
    assert between.out.startswith("database at 0010")


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_every_commands_help_lists_db(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*args, "--help"]) == 0
    assert "  --db URL " in capsys.readouterr().out


def test_two_different_db_urls_are_refused(cli: Cli, tmp_path: Path) -> None:
    other = f"sqlite:///{tmp_path / 'other.db'}"
    one_line_error(
        run(cli.capsys, "--db", cli.url, "ls", "--db", other),
        2,
        f"Invalid value for '--db': {other} here, but {cli.url} before the command; "
        "give one (see sessionstore ls --help)",
    )
    assert run(cli.capsys, "--db", cli.url, "ls", "--db", cli.url).code == 0


@pytest.mark.parametrize(
    ("args", "path"),
    [(["--db", "", "ls"], "sessionstore"), (["ls", "--db", ""], "sessionstore ls"),
     (["demo", "--db", ""], "sessionstore demo")],
)  # fmt: skip
def test_an_empty_db_is_refused_and_nothing_is_created(
    args: list[str],
    path: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    one_line_error(
        run(capsys, *args),
        2,
        "Invalid value for '--db': it is empty; give a database URL such as "
        f"sqlite:///sessions.db (see {path} --help)",
    )
    assert list(tmp_path.iterdir()) == []


def test_sessionstore_url_still_names_the_database(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONSTORE_URL", cli.url)
    assert run(cli.capsys, "verify", "s1").out == "s1: ok (10 events)\n"


# read-only commands create nothing


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_on_a_missing_file_creates_nothing(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo.db"
    one_line_error(
        run(capsys, *args, "--db", f"sqlite:///{typo}"),
        1,
        f"no database at {typo}: read-only commands create none "
        "(`sessionstore demo` or `sessionstore import` makes one)",
    )
    assert list(tmp_path.iterdir()) == []


def test_the_default_file_is_not_created_by_ls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    one_line_error(
        run(capsys, "ls"),
        1,
        "no database at sessions.db: read-only commands create none "
        "(`sessionstore demo` or `sessionstore import` makes one)",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", READ_ONLY[:-1], ids=" ".join)
def test_a_read_only_command_does_not_migrate_an_empty_database(
    args: list[str], backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend.name == "sqlite":
        sqlite3.connect(str(sa.make_url(backend.url).database)).close()  # an empty file
    shown = sa.make_url(backend.url).render_as_string(hide_password=True)
    one_line_error(
        run(capsys, "--db", backend.url, *args),
        1,
        f"{shown} holds no sessionstore schema (it is empty); "
        f"run `sessionstore --db {shlex.quote(shown)} db upgrade` to create it",
    )
    assert table_names(backend) == set()


def test_a_read_only_command_does_not_migrate_a_database_behind_the_schema(
    sqlite_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    config = alembic_config(sqlite_backend.url)
    command.upgrade(config, "head")
    command.downgrade(config, "base")  # an alembic_version with no revision in it
    result = run(capsys, "--db", sqlite_backend.url, "ls")
    assert result.code == 1
    assert f"run `sessionstore --db {shlex.quote(sqlite_backend.url)} db upgrade`" in result.err
    assert table_names(sqlite_backend) == {"alembic_version"}


def test_db_current_on_an_empty_database_migrates_nothing(
    sqlite_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite3.connect(str(sa.make_url(sqlite_backend.url).database)).close()
    result = run(capsys, "--db", sqlite_backend.url, "db", "current")
    assert result.out == "database at nothing (empty); this version's head is 0010\n"
    assert table_names(sqlite_backend) == set()


def test_read_only_commands_leave_the_database_file_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Even resuming a long session with no snapshot (which a writer would save) writes none."""
    url = f"sqlite:///{tmp_path / 'long.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=40), expected_version=0)  # 121 events
    before = files_of(tmp_path)
    for args in READ_ONLY:
        assert run(capsys, "--db", url, *args).code == 0
    assert files_of(tmp_path) == before


# databases that are not sessionstore's


def test_a_sqlite_file_of_another_application_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    before = files_of(tmp_path)
    for args in [["ls"], ["demo", "--turns", "1"], ["db", "upgrade"], ["db", "current"]]:
        one_line_error(
            run(capsys, "--db", f"sqlite:///{path}", *args),
            1,
            f"sqlite:///{path} holds tables of another application (notes) and no sessionstore "
            "schema; sessionstore adds its tables only to an empty database",
        )
    assert files_of(tmp_path) == before


def test_a_file_that_is_not_a_database_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("buy milk\n")
    for args in [["ls"], ["demo", "--turns", "1"], ["db", "upgrade"], ["db", "current"]]:
        one_line_error(
            run(capsys, "--db", f"sqlite:///{text}", *args),
            1,
            f"sqlite:///{text}: file is not a database",
        )
    assert files_of(tmp_path) == {"notes.txt": b"buy milk\n"}


# -o targets


def test_export_to_a_missing_folder_is_one_line_and_leaves_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    before = files_of(tmp_path)
    target = tmp_path / "missing" / "out.jsonl"
    one_line_error(
        cli("export", "s1", "-o", str(target)),
        1,
        f"cannot write {target}: no folder {target.parent}",
    )
    assert files_of(tmp_path) == before


def test_a_bare_path_as_db_says_how_to_write_it_as_a_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)

    code = main(["--db", "typo.db", "ls"])

    err = capsys.readouterr().err
    assert (code, err) == (
        1,
        "sessionstore: error: not a database URL: 'typo.db' (a SQLite file is sqlite:///typo.db)\n",
    )
    assert list(tmp_path.iterdir()) == []
