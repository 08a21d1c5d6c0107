"""What a user installs: one package, `sessionstore`, holding every module of ours, and nothing
that meets an application's own modules of the same names.

The repository keeps the folders the design card names (store/, events/, projections/,
migrations/); the build maps them to `sessionstore`, `sessionstore.events`,
`sessionstore.projections` and `sessionstore.migrations`."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALLED_AS = {
    "store": "sessionstore",
    "events": "sessionstore/events",
    "projections": "sessionstore/projections",
    "migrations": "sessionstore/migrations",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from the checkout. setuptools builds in the checkout itself
    (`build/`, the `.egg-info`), so two workers of the suite that build at once can break each
    other's build: a lock beside the workers' temporary folders lets one build at a time."""
    out = tmp_path_factory.mktemp("wheel")
    lock = tmp_path_factory.getbasetemp().parent / "sessionstore-wheel.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "-w", str(out), str(ROOT)],
            check=True,
            capture_output=True,
            timeout=300,
        )  # fmt: skip
    [built] = out.glob("sessionstore-*.whl")
    return built


def test_the_wheel_holds_every_module_under_the_one_name(wheel: Path) -> None:
    inside = set(zipfile.ZipFile(wheel).namelist())
    ours = {
        f"{INSTALLED_AS[folder]}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder in INSTALLED_AS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".mako") and "__pycache__" not in path.parts
    }
    assert ours - inside == set()
    # what type checkers and license scanners look for
    typed = {"sessionstore/py.typed", "sessionstore/events/py.typed"}
    assert typed | {"sessionstore/projections/py.typed"} <= inside
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in inside)


def test_the_wheels_only_top_level_name_is_sessionstore(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"sessionstore"}
    [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "sessionstore = sessionstore.cli:main" in scripts


def test_the_version_is_the_installed_distributions() -> None:
    import sessionstore

    assert sessionstore.__version__ == version("sessionstore")
    assert sessionstore.__version__ != "0+unknown"


APPLICATION_ENV = """\
from pathlib import Path
Path(__file__).with_name("ENV_RAN").write_text("the application's env.py ran")
raise SystemExit("the application's own migrations ran")
"""


def an_application(folder: Path) -> None:
    """A folder whose own modules are named like ours: an `events.py`, a `store.py`, a
    `projections/` package and an Alembic `migrations/` package with its own `env.py`."""
    (folder / "events.py").write_text("raise ImportError('the application events.py')\n")
    (folder / "store.py").write_text("raise ImportError('the application store.py')\n")
    (folder / "projections").mkdir()
    (folder / "projections" / "__init__.py").write_text("raise ImportError('app projections')\n")
    migrations = folder / "migrations"
    (migrations / "versions").mkdir(parents=True)
    (migrations / "__init__.py").write_text("")
    (migrations / "env.py").write_text(APPLICATION_ENV)
    (migrations / "script.py.mako").write_text("")
    (migrations / "versions" / "__init__.py").write_text("")


USE_FROM_THE_APPLICATION = """\
from sessionstore import SessionStore
from sessionstore.events import MessageAppended

url = "sqlite:///app.db"
store = SessionStore(url)
s = store.create_session(model="gpt-4o", context_window=8_000)
s.append_user("hello from an application with its own events.py")
store.close()

again = SessionStore(url)
resumed = again.session(s.id)
[sent] = resumed.context().to_openai()
assert sent["content"] == "hello from an application with its own events.py", sent
assert isinstance(list(again.read(s.id))[-1].payload, MessageAppended)
again.close()
print("ok")
"""


def test_an_application_with_its_own_events_store_and_migrations_uses_ours(
    tmp_path: Path,
) -> None:
    an_application(tmp_path)
    # the folder is first on sys.path, as for any `python -c` run there
    env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    run = subprocess.run(
        [sys.executable, "-c", USE_FROM_THE_APPLICATION],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout == "ok\n"
    upgrade = subprocess.run(
        [sys.executable, "-m", "sessionstore.cli", "--db", "sqlite:///app.db",
         "db", "upgrade"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert upgrade.returncode == 0, upgrade.stderr
    assert not (tmp_path / "migrations" / "ENV_RAN").exists()


def test_the_migrations_are_found_in_our_package_never_by_a_bare_name() -> None:
    script = textwrap.dedent("""\
        from sessionstore.storage._migrate import alembic_config
        print(alembic_config().get_main_option("script_location"))
    """)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    location = Path(run.stdout.strip())
    assert (location / "env.py").read_text() == (ROOT / "migrations" / "env.py").read_text()
