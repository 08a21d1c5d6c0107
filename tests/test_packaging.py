"""The wheel a user installs holds every module of ours: an editable install would hide a
package missing from the build configuration."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("events", "projections", "store", "migrations")


def test_the_wheel_holds_every_module(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    [wheel] = tmp_path.glob("sessionstore-*.whl")
    inside = set(zipfile.ZipFile(wheel).namelist())
    ours = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.suffix in (".py", ".mako") and "__pycache__" not in path.parts
    }
    assert ours - inside == set()
    # what type checkers and license scanners look for
    assert {"events/py.typed", "projections/py.typed", "store/py.typed"} <= inside
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in inside)


def test_the_version_is_the_installed_distributions() -> None:
    import store

    assert store.__version__ == version("sessionstore")
    assert store.__version__ != "0+unknown"
