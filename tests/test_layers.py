"""The layering of `sessionstore`, written down and checked: which subpackage may import which,
and that none imports a private module of another.

Read from the source with `ast` (every import, those inside functions and under
`TYPE_CHECKING` too), so it holds for the code as written, not only for what one run imports.
The vocabulary is at the bottom and imports nothing of ours; the faces are on top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "store": "sessionstore",
    "events": "sessionstore.events",
    "projections": "sessionstore.projections",
    "migrations": "sessionstore.migrations",
}

BELOW: dict[str, set[str]] = {
    "events": set(),
    "projections": {"events"},
    "providers": {"events", "projections"},
    "storage": {"events"},
    "migrations": {"events", "storage"},
    "log": {"events", "projections", "storage"},
    "context": {"events", "projections"},
    "importers": {"events", "projections", "providers", "storage", "log", "context"},
}
BELOW["session"] = {"importers", *BELOW["importers"]}
BELOW["aio"] = {"session", *BELOW["session"]}
BELOW["integrations"] = {"aio", *BELOW["aio"]}
BELOW["cli"] = {"aio", *BELOW["aio"]}
"""What each subpackage may import, besides itself: the layers, bottom up."""


def module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    if rest[-1] == "__init__":
        rest = rest[:-1]
    return ".".join([FOLDERS[folder], *rest])


def subpackage(module: str) -> str:
    """`storage` for `sessionstore.storage._sql`; the root's own modules are `""`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def library() -> list[tuple[str, Path]]:
    return sorted(
        (module_name(path), path)
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every module of ours `path` imports, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "sessionstore"]


def test_every_module_of_ours_is_in_a_layer() -> None:
    packages = {subpackage(module) for module, _ in library()}
    assert packages - {""} == set(BELOW)
    # the root holds the public face's re-exports and nothing else
    assert [module for module, _ in library() if subpackage(module) == ""] == ["sessionstore"]


@pytest.mark.parametrize(("module", "path"), library(), ids=[m for m, _ in library()])
def test_imports_go_down_the_layers_and_only_to_public_names(module: str, path: Path) -> None:
    mine = subpackage(module)
    wrong = []
    for line, target in imports_of(path):
        theirs = subpackage(target)
        if theirs == mine or mine == "":
            continue
        where = f"{path.relative_to(ROOT)}:{line} imports {target}"
        if theirs not in BELOW[mine]:
            wrong.append(f"{where}: {mine} may not import {theirs or 'the root'}")
        elif any(part.startswith("_") for part in target.split(".")[2:]):
            wrong.append(f"{where}: a private module of {theirs}; import from {theirs} itself")
    assert wrong == []


def test_the_layers_have_no_cycle() -> None:
    order: list[str] = []
    while len(order) < len(BELOW):
        ready = sorted(p for p in BELOW if p not in order and BELOW[p] <= set(order))
        assert ready, f"a cycle among {sorted(set(BELOW) - set(order))}"
        order += ready
