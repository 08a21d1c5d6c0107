"""The installed `sessionstore` command, in its own process, on temporary SQLite files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.builders import conversation

SCRIPT = Path(sys.executable).with_name("sessionstore")  # the console script pip installed
REPO = Path(__file__).resolve().parents[2]
# The script runs the installed sessionstore (tests/conftest.py checks it is this checkout's),
# with this checkout's `tests` package importable, and never a database named by the
# caller's environment.
BASE_ENV = {
    **{k: v for k, v in os.environ.items() if k != "SESSIONSTORE_URL"},
    "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
}


def sessionstore(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**BASE_ENV, **(env or {})},
    )


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=2), expected_version=0)
    return url


def test_ls_lists_sessions_as_json(db: str, tmp_path: Path) -> None:
    result = sessionstore("--db", db, "ls", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)
    assert (row["id"], row["events"], row["title"]) == ("s1", 7, "fix the failing test")


def test_verify_reports_ok_and_exits_zero(db: str, tmp_path: Path) -> None:
    result = sessionstore("--db", db, "verify", "s1", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "s1: ok (7 events)\n")


def test_verify_all_exits_one_on_a_broken_chain(db: str, tmp_path: Path) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER events_refuse_update"))
        conn.execute(
            sa.text(
                "UPDATE events SET event_id = '01890a5d-ac96-774b-bcce-b302099a8057' WHERE seq = 3"
            )
        )
    engine.dispose()

    result = sessionstore("--db", db, "verify", "--all", cwd=tmp_path)

    assert result.returncode == 1
    assert result.stdout == (
        "s1: BROKEN at seq 3: stored hash does not match the event's content\n"
    )


def test_an_unknown_session_is_one_line_on_stderr(db: str, tmp_path: Path) -> None:
    result = sessionstore("--db", db, "verify", "nope", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "sessionstore: error: no session 'nope' in this store\n"


def test_an_unreachable_database_is_one_line_on_stderr(tmp_path: Path) -> None:
    result = sessionstore("--db", "sqlite:////no/such/folder/x.db", "ls", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        "sessionstore: error: cannot open /no/such/folder/x.db: no folder /no/such/folder\n"
    )


def test_db_upgrade_then_current_on_the_default_file(tmp_path: Path) -> None:
    upgraded = sessionstore("db", "upgrade", cwd=tmp_path)
    current = sessionstore("db", "current", cwd=tmp_path)

    assert upgraded.returncode == 0, upgraded.stderr
    assert current.stdout == "database at 0010; this version's head is 0010\n"
    assert (tmp_path / "sessions.db").exists()


def found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match is not None, f"{pattern!r} not in the output"
    return match.group(1)


def test_demo_runs_the_main_job_and_leaves_a_session_whose_chain_verifies(tmp_path: Path) -> None:
    demo = sessionstore("demo", cwd=tmp_path)  # on the default file, sessions.db, here
    assert demo.returncode == 0, demo.stderr
    assert "\x1b[" not in demo.stdout  # colour only on a terminal
    out = demo.stdout
    session_id = found(r"into session (\S+),", out)
    assert session_id == "demo"  # the first demo in this folder
    page = found(r"The session as one page \(token curve, replay, compactions\): (\S+)\n", out)
    assert page == "sessionstore-demo.html"
    with SessionStore(f"sqlite:///{tmp_path / 'sessions.db'}") as store:
        assert (tmp_path / page).read_text(encoding="utf-8") == store.view(session_id)
    events = int(found(r"Hash chain: ([\d,]+) events verified, intact.", out).replace(",", ""))
    # with the default settings, all three: a truncation, prunes, compactions
    assert len(re.findall(r"^Truncated on append: bash output of [\d,]+ bytes, ", out, re.M)) >= 1
    assert times(found(r"Pruned old tool outputs (once|\d+ times), [\d,]+ tokens in all", out)) >= 1
    assert times(found(r"Compacted the conversation (once|\d+ times), [\d,]+ tokens", out)) >= 1
    # the replay to just before the first compaction, against now, with its figures
    first_compaction = int(found(r"\n +(\d+)  \d\d:\d\d:\d\d  incremental: compacted ", out))
    replay = found(r"(?s)(Replay: the context at seq \d+, just before the first .*?)\n\n", out)
    lines = replay.splitlines()
    assert lines[0] == (
        f"Replay: the context at seq {first_compaction - 1}, just before the first compaction, "
        "against now:"
    )
    then = re.fullmatch(r"  then: (\d+) messages, ([\d,]+) tokens", lines[1])
    now = re.fullmatch(r"  now:  (\d+) messages, ([\d,]+) tokens", lines[2])
    assert then and now, lines
    assert int(then[1]) > 0 and int(now[1]) > 0 and int(then[2].replace(",", "")) > 0
    moved = re.fullmatch(
        r"  (\d+) messages left the context, (\d+) entered \((\d+) of them summaries\); "
        r"\d+ outputs changed status\.",
        lines[3],
    )
    assert moved and int(moved[1]) > 0 and int(moved[3]) >= 1, lines[3]
    assert re.search(r"\n  \+ summary \S+ \([\d,]+ tokens, extractive summarizer\),\n", replay)
    assert "    ## The task and the user's requests, in order (" in replay
    assert found(r"restored at seq (\d+): ", out) and "identical to the original output." in out
    assert f"  sessionstore show {session_id}" in out
    assert f"  sessionstore context demo --at {first_compaction - 1} --format openai" in out
    verify = sessionstore("verify", "--all", cwd=tmp_path)
    assert verify.stdout == f"{session_id}: ok ({events} events)\n"
    again = sessionstore("demo", "--turns", "1", cwd=tmp_path)  # the name is taken: demo-2
    assert found(r"into session (\S+),", again.stdout) == "demo-2"


def times(said: str) -> int:
    return 1 if said == "once" else int(said.removesuffix(" times"))


def test_debug_shows_the_traceback(db: str, tmp_path: Path) -> None:
    quiet = sessionstore("--db", db, "show", "nope", cwd=tmp_path)
    loud = sessionstore("--db", db, "--debug", "show", "nope", cwd=tmp_path)
    assert quiet.stderr == "sessionstore: error: no session 'nope' in this store\n"
    assert loud.returncode == 1 and "Traceback" in loud.stderr
    assert loud.stderr.rstrip().endswith("UnknownSession: no session 'nope' in this store")


def test_counting_tokens_writes_nothing_outside_the_database(tmp_path: Path) -> None:
    """tiktoken copies the ranks it loads into `$TMPDIR/data-gym-cache` (or
    `$TIKTOKEN_CACHE_DIR`); the store must not, from the command line or the library."""
    work, temp, cache = tmp_path / "work", tmp_path / "tmp", tmp_path / "cache"
    for folder in (work, temp, cache):
        folder.mkdir()
    (work / "chat.json").write_text(json.dumps([{"role": "user", "content": "hello"}]))
    env = {k: v for k, v in BASE_ENV.items() if not k.endswith("_CACHE_DIR")}
    imported = subprocess.run(
        [str(SCRIPT), "--db", "sqlite:///a.db", "import", "chat.json", "--format", "openai"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "TMPDIR": str(temp)},
    )
    assert imported.returncode == 0, imported.stderr
    appended = subprocess.run(
        [sys.executable, "-c", APPEND, "sqlite:///b.db"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "TMPDIR": str(temp), "TIKTOKEN_CACHE_DIR": str(cache)},
    )
    assert appended.stdout == "1\n", appended.stderr
    assert sorted(p.name for p in work.iterdir()) == ["a.db", "b.db", "chat.json"]
    assert (list(temp.iterdir()), list(cache.iterdir())) == ([], [])


APPEND = """
import sys
from sessionstore.events import Message, TextPart
from sessionstore import SessionStore
with SessionStore(sys.argv[1]) as store:
    session = store.create_session()
    session.append_message(Message(role="user", parts=(TextPart(text="hello"),)))
    print(session.context().tokens)
"""


def test_a_file_that_is_not_a_database_is_one_line_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk\n")
    result = sessionstore("--db", "sqlite:///notes.txt", "stats", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "sessionstore: error: sqlite:///notes.txt: file is not a database\n"
