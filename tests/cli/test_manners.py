"""The command line as a person types it: help when a group is given no command, Ctrl-C at any
moment is one line and exit 130, hints that are commands to type as they are."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from alembic import command

from sessionstore import SessionStore
from sessionstore.storage._migrate import alembic_config
from tests.cli.test_cli_process import BASE_ENV, SCRIPT, sessionstore


@pytest.mark.parametrize(
    ("args", "usage"),
    [([], "Usage: sessionstore [OPTIONS] COMMAND"), (["db"], "Usage: sessionstore db [OPTIONS]")],
)
def test_a_group_with_no_command_prints_its_help_as_help_does(
    args: list[str], usage: str, tmp_path: Path
) -> None:
    result = sessionstore(*args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == sessionstore(*args, "--help", cwd=tmp_path).stdout
    assert result.stdout.startswith(usage)
    assert len(result.stdout.splitlines()) > 8  # laid out, not one error line


@pytest.mark.parametrize("after", [0.15, 0.4, 1.0, 2.0])
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(after: float, tmp_path: Path) -> None:
    # the demo runs for seconds: Ctrl-C lands while the command line loads or while it works.
    # It runs as from a terminal: a process that ignores SIGINT (a pytest-xdist worker may)
    # passes that on to what it starts, and Python then leaves Ctrl-C ignored, as it should
    # for a job started in the background.
    process = subprocess.Popen(
        [str(SCRIPT), "--db", f"sqlite:///{tmp_path / 'demo.db'}", "demo"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=BASE_ENV,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert [line for line in stderr.splitlines() if line] == ["sessionstore: interrupted"]


def test_db_upgrade_says_whether_it_created_upgraded_or_did_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert sessionstore("--db", url, "db", "upgrade", cwd=tmp_path).stdout == (
        "created the schema at 0010\n"
    )
    command.downgrade(alembic_config(url), "0002")
    assert sessionstore("--db", url, "db", "upgrade", cwd=tmp_path).stdout == (
        "upgraded the database from 0002 to 0010\n"
    )
    assert sessionstore("--db", url, "db", "upgrade", cwd=tmp_path).stdout == (
        "nothing to do: the database is at 0010, this version's head\n"
    )


def test_the_upgrade_hint_is_a_command_that_upgrades_the_database_it_was_given(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'my store.db'}"
    with SessionStore(url):
        pass
    command.downgrade(alembic_config(url), "0002")
    refused = sessionstore("--db", url, "ls", cwd=tmp_path)
    hint = re.search(r"run `([^`]+)`", refused.stderr)
    assert refused.returncode == 1 and hint is not None, refused.stderr
    words = shlex.split(hint.group(1))
    assert words[:2] == ["sessionstore", "--db"]
    followed = sessionstore(*words[1:], cwd=tmp_path)
    assert followed.stdout == "upgraded the database from 0002 to 0010\n"
    assert sessionstore("--db", url, "ls", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my store.db"]  # no ./sessions.db


def test_importing_a_folder_with_nothing_to_import_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = sessionstore(
        "--db", f"sqlite:///{tmp_path / 's.db'}", "import", str(empty), cwd=tmp_path
    )
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.startswith(
        f"nothing to import: no transcript or export found under {empty}"
    )
    assert "claude-code" in result.stderr


KEEP_LITTLE = ("--keep-turns", "2", "--keep-tokens", "100")


def test_compact_dry_run_lists_a_few_of_many_messages_and_json_lists_all(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    with SessionStore(db) as store:
        s = store.create_session(model="gpt-4o", context_window=128_000, session_id="long")
        for n in range(40):
            s.append_user(f"request {n}")
            s.append_assistant(f"answer {n}: " + "the parser reads one more token. " * 60)
    text = sessionstore(
        "--db", db, "compact", "long", "--dry-run", *KEEP_LITTLE, cwd=tmp_path
    ).stdout
    [leaving] = [line for line in text.splitlines() if line.startswith("leaving: ")]
    assert leaving.endswith("more, to " + leaving.split(" to ")[-1])
    assert "(--json lists them all)" in leaving and len(leaving) < 300
    listed = json.loads(
        sessionstore(
            "--db", db, "compact", "long", "--dry-run", "--json", *KEEP_LITTLE, cwd=tmp_path
        ).stdout
    )
    assert leaving.startswith(f"leaving: {len(listed['leaving'])} messages: ")
    assert len(listed["leaving"]) > 4
