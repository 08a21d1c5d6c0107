"""A command loads what it needs and no more, so the command line starts at once: `--version`
loads click alone; `ls` loads the storage and the listing, never the models (pydantic), the
folds, the tokenizer, the importers, Alembic, the async face or the integrations. Which modules
are loaded is checked, not how long it took (speed is measured by `python -m bench.cli_start`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.builders import conversation
from tests.cli.test_cli_process import BASE_ENV

LOADED = """
import json, sys
from sessionstore.cli import main
code = main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(*args: str, cwd: Path) -> set[str]:
    """The modules a run of `sessionstore ARGS` had loaded when it returned."""
    result = subprocess.run(
        [sys.executable, "-c", LOADED, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=BASE_ENV,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stderr.splitlines()[-1]))


def roots(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_version_loads_click_and_none_of_the_store(tmp_path: Path) -> None:
    loaded = loaded_by("--version", cwd=tmp_path)
    assert {"sqlalchemy", "pydantic", "rich", "tiktoken", "alembic"}.isdisjoint(roots(loaded))
    assert {m for m in loaded if m.startswith("sessionstore")} == {
        "sessionstore",
        "sessionstore.cli",
        "sessionstore.cli._app",
        "sessionstore.cli._main",
        "sessionstore.cli._tree",
    }


@pytest.mark.parametrize(
    "command",
    [
        ["ls"],
        ["ls", "--json"],
        ["show", "s1"],
        ["verify", "s1"],
        ["view", "s1"],
        ["search", "read"],
    ],
)
def test_a_reading_command_loads_no_migrations_async_face_or_integrations(
    command: list[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'start.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=2), expected_version=0)
    loaded = loaded_by("--db", url, *command, cwd=tmp_path)
    assert "alembic" not in roots(loaded)
    faces = {
        m
        for m in loaded
        if m.split(".")[:2] in (["sessionstore", "aio"], ["sessionstore", "integrations"])
    }
    assert faces == set()


NOT_LISTING = ("alembic", "pydantic", "pydantic_core", "tiktoken")
"""What a listing never loads: the migrations, the models and the tokenizer."""
NOT_LISTING_OF_OURS = (
    "aio",
    "context",
    "importers",
    "integrations",
    "projections",
    "providers",
)
"""Our subpackages a listing never loads: the async face, the policies, the importers, the
integrations, the folds and renders (the HTML view, Markdown, the providers' shapes)."""


@pytest.mark.parametrize("command", [["ls"], ["ls", "--json"], ["ls", "--limit", "1"]])
def test_ls_loads_the_storage_and_the_listing_and_nothing_it_does_not_show(
    command: list[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'start.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=2), expected_version=0)
    loaded = loaded_by("--db", url, *command, cwd=tmp_path)
    assert roots(loaded) & set(NOT_LISTING) == set()
    ours = {name.split(".")[1] for name in loaded if name.startswith("sessionstore.")}
    assert ours & set(NOT_LISTING_OF_OURS) == set()
    assert {"sessionstore.storage._sqlite", "sessionstore.log._stats"} <= loaded
    # a SQLite file needs none of PostgreSQL's dialect, the longest of SQLAlchemy's to import
    assert "sqlalchemy.dialects.postgresql" not in loaded
    assert "sessionstore.storage._postgres" not in loaded
    # nor the append path, replay or verification of the log
    assert {m for m in loaded if m.startswith("sessionstore.log.")} == {
        "sessionstore.log._session_id",
        "sessionstore.log._stats",
    }


def test_search_loads_neither_the_folds_nor_the_tokenizer(tmp_path: Path) -> None:
    """A search reads the index and the stored bodies: the models decode what it shows, but no
    context is folded and nothing is counted."""
    url = f"sqlite:///{tmp_path / 'start.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=2), expected_version=0)
    loaded = loaded_by("--db", url, "search", "read", cwd=tmp_path)
    assert roots(loaded) & {"alembic", "tiktoken"} == set()
    ours = {name.split(".")[1] for name in loaded if name.startswith("sessionstore.")}
    assert ours & set(NOT_LISTING_OF_OURS) == set()
    assert "sqlalchemy.dialects.postgresql" not in loaded
