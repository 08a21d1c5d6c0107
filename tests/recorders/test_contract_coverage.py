"""The recorder contract exercises the whole `Recorder` protocol: every member, and every
parameter of every method, appears in a call of `RecorderContract` (read from its source
with `ast`), so a member added to the protocol fails here until the contract tests it."""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from pathlib import Path

from sessionstore.storage._recorder import Recorder
from tests.recorders import recorder_contract
from tests.recorders.recorder_contract import RecorderContract


def protocol_members() -> dict[str, list[str]]:
    """Each public member of `Recorder`, with the parameters of those that are methods."""
    members: dict[str, list[str]] = {}
    for name, value in vars(Recorder).items():
        if name.startswith("_"):
            continue
        if inspect.isfunction(value):
            members[name] = list(inspect.signature(value).parameters)[1:]  # `self` aside
        elif isinstance(value, property):
            members[name] = []
    members.update({name: [] for name in Recorder.__annotations__ if not name.startswith("_")})
    return members


def exercised() -> dict[str, set[str]]:
    """Each member the contract reaches on `recorder`, with the parameters its calls pass."""
    source = Path(recorder_contract.__file__).read_text()
    (contract,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == RecorderContract.__name__
    ]
    members = protocol_members()
    found: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(contract):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "recorder"
        ):
            continue
        found.setdefault(node.attr, set())  # reached, if only as an attribute
    for node in ast.walk(contract):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func
            if isinstance(target.value, ast.Name) and target.value.id == "recorder":
                parameters = members.get(target.attr, [])
                found[target.attr] |= set(parameters[: len(node.args)])
                found[target.attr] |= {kw.arg for kw in node.keywords if kw.arg is not None}
    return found


def test_the_contract_reaches_every_member_of_the_protocol() -> None:
    members = protocol_members()
    assert {"write", "migrate", "shown_url", "close"} <= members.keys()  # the reading works
    assert sorted(members.keys() - exercised().keys()) == []


def test_the_contract_passes_every_parameter_of_every_method() -> None:
    found = exercised()
    missing = {
        name: sorted(set(parameters) - found[name])
        for name, parameters in protocol_members().items()
        if set(parameters) - found[name]
    }
    assert missing == {}
