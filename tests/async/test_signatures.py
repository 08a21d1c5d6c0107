"""The async face cannot drift from the sync core: every public member of `SessionStore` and
`Session` has its twin on `AsyncSessionStore` and `AsyncSession`, with the same parameters,
kinds, defaults and annotations (resolved), allowing only what being awaited implies:
`Session` is `AsyncSession` there, `SessionStore` is `AsyncSessionStore`, a method is a
coroutine function returning the same type, and an iterator that reads the database as it
goes is a list. The test names every difference it finds."""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import re
import sys
import typing
from collections.abc import Callable, Iterator
from typing import Any

from sessionstore import AsyncSession, AsyncSessionStore, Session, SessionStore
from tests.conftest import Backend

FACES: tuple[tuple[type, type], ...] = ((SessionStore, AsyncSessionStore), (Session, AsyncSession))
TWINS = {"__init__": "__init__", "__enter__": "__aenter__", "__exit__": "__aexit__"}
"""Special methods compared too (`Session.__init__` is not: a handle comes from its store)."""
ASYNC_ONLY = {
    AsyncSessionStore: {"sync", "run_sync", "from_store"},
    AsyncSession: {"sync", "run_sync"},
}
"""What only the async face has: the sync object underneath, and the way onto its workers."""
ATTRIBUTES = {
    AsyncSessionStore: {"url", "max_payload_bytes", "snapshot_every"},
    AsyncSession: {"summarizer"},
}
"""Properties of the async face that are attributes of a sync object (not of its class):
`test_the_sync_faces_attributes_are_the_async_faces_properties` compares them."""
RENAMED = {
    "sessionstore.session._session.Session": "sessionstore.aio._async.AsyncSession",
    "sessionstore.session._store.SessionStore": "sessionstore.aio._async.AsyncSessionStore",
}


def hints(member: object) -> dict[str, Any]:
    """`typing.get_type_hints(member)`, resolving as a type checker does the names its module
    imports only under `if TYPE_CHECKING:` (`SessionStore`'s module does, so that opening a
    store loads neither the models nor the folds)."""
    module = sys.modules[member.__module__]
    return typing.get_type_hints(member, localns={**vars(module), **checked_names(module.__name__)})


@functools.cache
def checked_names(module_name: str) -> dict[str, Any]:
    """The names the module imports under `if TYPE_CHECKING:`, imported."""
    names: dict[str, Any] = {}
    for node in ast.parse(inspect.getsource(sys.modules[module_name])).body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    source = importlib.import_module(statement.module)
                    for alias in statement.names:
                        names[alias.asname or alias.name] = getattr(source, alias.name)
    return names


def shown(hint: object) -> str:
    """A resolved annotation as text, each class by its full name."""
    if hint is type(None):
        return "None"
    if isinstance(hint, type) and not typing.get_args(hint):
        return f"{hint.__module__}.{hint.__qualname__}"
    text = repr(hint)
    return re.sub(r"<class '([\w.]+)'>", r"\1", text).replace("NoneType", "None")


def as_awaited(hint: object, *, returned: bool = False) -> str:
    """The annotation the async face must write where the sync face writes `hint`."""
    text = shown(hint)
    for sync, face in RENAMED.items():
        text = re.sub(rf"\b{re.escape(sync)}\b", face, text)
    if returned and text.startswith("collections.abc.Iterator["):  # read whole, then returned
        text = "list[" + text.removeprefix("collections.abc.Iterator[")
    return text


def members(cls: type) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(cls).items()
        if (not name.startswith("_") or name in TWINS or name in TWINS.values())
        and (callable(value) or isinstance(value, property))
    }


def signature_differences(
    where: str, sync: Callable[..., Any], face: Callable[..., Any]
) -> list[str]:
    found = []
    sync_hints = hints(sync)
    face_hints = hints(face)
    sync_parameters = list(inspect.signature(sync).parameters.values())
    face_parameters = list(inspect.signature(face).parameters.values())
    if [p.name for p in sync_parameters] != [p.name for p in face_parameters]:
        found.append(
            f"{where}: parameters {[p.name for p in sync_parameters]} on the sync face, "
            f"{[p.name for p in face_parameters]} on the async one"
        )
    faced = {p.name: p for p in face_parameters}
    for parameter in sync_parameters:
        twin = faced.get(parameter.name)
        if twin is None or parameter.name == "self":
            continue
        if twin.kind != parameter.kind:
            found.append(f"{where}({parameter.name}): {parameter.kind} vs {twin.kind}")
        if twin.default != parameter.default:
            found.append(
                f"{where}({parameter.name}): default {parameter.default!r} vs {twin.default!r}"
            )
        expected = as_awaited(sync_hints.get(parameter.name))
        actual = shown(face_hints.get(parameter.name))
        if expected != actual:
            found.append(f"{where}({parameter.name}): annotated {actual}, expected {expected}")
    expected = as_awaited(sync_hints.get("return"), returned=True)
    actual = shown(face_hints.get("return"))
    if expected != actual and not where.endswith(".__init__"):
        found.append(f"{where}: returns {actual}, expected {expected}")
    return found


def drift(sync_cls: type, face_cls: type) -> list[str]:
    """Every difference between the public members of `sync_cls` and `face_cls` that being
    awaited does not explain."""
    found = []
    sync_members, face_members = members(sync_cls), members(face_cls)
    for name, value in sync_members.items():
        if name == "__init__" and sync_cls is Session:
            continue
        twin_name = TWINS.get(name, name)
        where = f"{face_cls.__name__}.{twin_name}"
        twin = face_members.get(twin_name)
        if twin is None:
            found.append(f"{where}: missing (the sync face has {sync_cls.__name__}.{name})")
            continue
        if isinstance(value, property):
            if not isinstance(twin, property):
                found.append(f"{where}: a property on the sync face, not here")
                continue
            expected = as_awaited(hints(value.fget)["return"], returned=True)
            actual = shown(hints(twin.fget)["return"])
            if expected != actual:
                found.append(f"{where}: gives {actual}, expected {expected}")
            if (value.fset is None) != (twin.fset is None):
                found.append(f"{where}: settable on one face only")
            continue
        if name != "__init__" and not inspect.iscoroutinefunction(twin):
            found.append(f"{where}: not a coroutine function")
        if isinstance(value, classmethod) != isinstance(twin, classmethod):
            found.append(f"{where}: a classmethod on one face only")
        found += signature_differences(where, value, twin)
        sync_overloads = typing.get_overloads(value)
        face_overloads = typing.get_overloads(twin)
        if len(sync_overloads) != len(face_overloads):
            found.append(f"{where}: {len(sync_overloads)} overloads vs {len(face_overloads)}")
        for n, (one, other) in enumerate(zip(sync_overloads, face_overloads, strict=False)):
            found += signature_differences(f"{where} (overload {n + 1})", one, other)
    paired = {TWINS.get(name, name) for name in sync_members}
    unmatched = set(face_members) - paired - ASYNC_ONLY[face_cls] - ATTRIBUTES[face_cls]
    found += [f"{face_cls.__name__}.{name}: only on the async face" for name in sorted(unmatched)]
    return found


def test_every_public_member_of_the_sync_faces_has_its_async_twin() -> None:
    differences = [line for sync, face in FACES for line in drift(sync, face)]
    assert not differences, "the async face drifted:\n" + "\n".join(differences)


def test_the_sync_faces_attributes_are_the_async_faces_properties(sqlite_backend: Backend) -> None:
    """A public attribute a sync object sets on itself (not in its class) is a property of its
    async twin, of the same value."""
    with SessionStore(sqlite_backend.url) as store:
        session = store.create_session(model="m")
        face = AsyncSessionStore.from_store(store)
        missing = []
        twin_session = asyncio.run(face.session(session.id))
        for twin in (face, twin_session):
            for name, value in vars(twin.sync).items():
                if name.startswith("_"):
                    continue
                if not isinstance(getattr(type(twin), name, None), property):
                    missing.append(f"{type(twin).__name__}.{name}: missing")
                elif getattr(twin, name) != value:
                    missing.append(f"{type(twin).__name__}.{name}: {getattr(twin, name)!r}")
        assert not missing, "\n".join(missing)


def test_the_comparison_names_a_drifted_signature() -> None:
    """The comparison itself: a default, an annotation and a missing parameter, each named."""

    class Sync:
        def run(self, a: int, *, b: str = "x", c: Session | None = None) -> Iterator[Session]:
            raise NotImplementedError

    class Face:
        async def run(self, a: str, *, b: str = "y") -> list[AsyncSession]:
            raise NotImplementedError

    found = signature_differences("Face.run", Sync.run, Face.run)
    assert found == [
        "Face.run: parameters ['self', 'a', 'b', 'c'] on the sync face, ['self', 'a', 'b'] on "
        "the async one",
        "Face.run(a): annotated builtins.str, expected builtins.int",
        "Face.run(b): default 'x' vs 'y'",
    ]
