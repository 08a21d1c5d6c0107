"""Which tool calls touch files, run commands or set the todo list, per agent family.

Agents name the same acts differently: Claude Code's `Write(file_path=)`, pi's `write(path=)`,
OpenCode's `write(filePath=)`, Codex's `apply_patch` (a patch text naming its files) and
`shell(command=[...])`. A `ToolMap` maps a tool's name to a `ToolSpec` (what kind of act it is
and which argument keys hold its path, command, patch or todos), so the artifact trail reads
every family with one fold. The tables were checked against each agent's own tool sources
(Claude Code's tool schemas, `openai/codex` codex-rs tools, `badlogic/pi-mono`
coding-agent tools, `sst/opencode` packages/opencode/src/tool).

A map is data: `DEFAULT_TOOLS` is every family merged, and `DEFAULT_TOOLS.extended({...})`
adds or overrides tools, from `ToolSpec`s or plain JSON (`{"kind": "write", "keys":
["target"]}`), so an agent's own tools need no code.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

ToolKind = Literal["read", "write", "edit", "delete", "command", "patch", "todos", "editor"]
"""`write` creates a path not seen before and modifies a known one; `edit` modifies; `patch`
reads a Codex-style patch (`*** Add File:`...); `editor` is Anthropic's text-editor tool, whose
`command` argument (`view`, `create`, `str_replace`, `insert`) says which act it is."""

KINDS: tuple[str, ...] = get_args(ToolKind)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a tool does, and the argument keys that hold its subject, first present wins."""

    kind: ToolKind
    keys: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a tool kind is one of {', '.join(KINDS)}, not {self.kind!r}")
        if not self.keys or not all(isinstance(key, str) and key for key in self.keys):
            raise ValueError("a tool spec needs at least one argument key")


def _spec(value: ToolSpec | Mapping[str, object]) -> ToolSpec:
    if isinstance(value, ToolSpec):
        return value
    keys = value.get("keys", ())
    if isinstance(keys, str):
        keys = (keys,)
    if not isinstance(keys, list | tuple):
        raise ValueError("a tool spec's keys are a list of argument names")
    return ToolSpec(kind=cast(ToolKind, value.get("kind")), keys=tuple(cast(list[str], keys)))


@dataclass(frozen=True, slots=True)
class ToolMap:
    """Tool name -> `ToolSpec`. A name is matched exactly first, then case-insensitively
    (`TodoWrite` and `todowrite`); a tool the map does not know is only counted."""

    tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    _lowered: dict[str, ToolSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lowered: dict[str, ToolSpec] = {}
        for name, spec in self.tools.items():
            lowered.setdefault(name.lower(), spec)
        object.__setattr__(self, "_lowered", lowered)

    def spec(self, name: str) -> ToolSpec | None:
        found = self.tools.get(name)
        return found if found is not None else self._lowered.get(name.lower())

    def extended(self, tools: Mapping[str, ToolSpec | Mapping[str, object]]) -> ToolMap:
        """This map with `tools` added; a name already here takes the new spec. A spec can be
        plain JSON: `{"kind": "write", "keys": ["target"]}`."""
        return ToolMap({**self.tools, **{name: _spec(value) for name, value in tools.items()}})

    @classmethod
    def merged(cls, *maps: ToolMap) -> ToolMap:
        """The maps as one: a name in several keeps its kind (the first map's) and the union
        of its keys, so `read` takes pi's `path` and OpenCode's `filePath` alike."""
        tools: dict[str, ToolSpec] = {}
        for each in maps:
            for name, spec in each.tools.items():
                known = tools.get(name)
                if known is None:
                    tools[name] = spec
                else:
                    keys = known.keys + tuple(k for k in spec.keys if k not in known.keys)
                    tools[name] = ToolSpec(known.kind, keys)
        return cls(tools)


def _table(**tools: tuple[ToolKind, tuple[str, ...]]) -> ToolMap:
    return ToolMap({name: ToolSpec(kind, keys) for name, (kind, keys) in tools.items()})


CLAUDE_CODE = _table(
    Read=("read", ("file_path",)),
    Write=("write", ("file_path",)),
    Edit=("edit", ("file_path",)),
    MultiEdit=("edit", ("file_path",)),
    NotebookEdit=("edit", ("notebook_path",)),
    Bash=("command", ("command",)),
    TodoWrite=("todos", ("todos",)),
)
"""Claude Code. Glob, Grep and LS search by pattern and name no file: they are only counted."""

CODEX = ToolMap(
    {
        "shell": ToolSpec("command", ("command",)),
        "shell_command": ToolSpec("command", ("command",)),
        "exec_command": ToolSpec("command", ("cmd",)),
        "local_shell": ToolSpec("command", ("command",)),
        "container.exec": ToolSpec("command", ("cmd", "command")),
        "apply_patch": ToolSpec("patch", ("input", "patch")),
        "update_plan": ToolSpec("todos", ("plan",)),
        "read_file": ToolSpec("read", ("file_path", "path")),
    }
)
"""Codex (codex-rs): `shell` takes an argv list (`["bash", "-lc", "..."]`), `exec_command` a
`cmd` string; `apply_patch` is a custom tool whose input is the patch text itself (its
arguments are not JSON), or a function tool with `input`; `update_plan` takes
`plan: [{step, status}]`."""

PI = _table(
    read=("read", ("path",)),
    write=("write", ("path",)),
    edit=("edit", ("path",)),
    bash=("command", ("command",)),
)
"""pi (badlogic/pi-mono coding-agent). ls, find and grep name no file."""

OPENCODE = _table(
    read=("read", ("filePath",)),
    write=("write", ("filePath",)),
    edit=("edit", ("filePath",)),
    multiedit=("edit", ("filePath",)),
    patch=("patch", ("patchText",)),
    apply_patch=("patch", ("patchText",)),
    bash=("command", ("command",)),
    todowrite=("todos", ("todos",)),
)
"""OpenCode (sst/opencode). list, glob and grep name no file."""

OPENAI_STYLE = _table(
    read_file=("read", ("path", "file_path", "file", "filename", "filePath")),
    view_file=("read", ("path", "file_path", "file", "filename")),
    open_file=("read", ("path", "file_path", "file", "filename")),
    write_file=("write", ("path", "file_path", "file", "filename", "filePath")),
    create_file=("write", ("path", "file_path", "file", "filename")),
    edit_file=("edit", ("path", "file_path", "file", "filename", "filePath")),
    replace_in_file=("edit", ("path", "file_path", "file", "filename")),
    str_replace=("edit", ("path", "file_path", "file")),
    delete_file=("delete", ("path", "file_path", "file", "filename")),
    remove_file=("delete", ("path", "file_path", "file", "filename")),
    str_replace_editor=("editor", ("path",)),
    str_replace_based_edit_tool=("editor", ("path",)),
    run=("command", ("command", "cmd")),
    run_command=("command", ("command", "cmd")),
    run_shell_command=("command", ("command", "cmd")),
    execute_command=("command", ("command", "cmd")),
    terminal=("command", ("command", "cmd")),
    exec=("command", ("command", "cmd")),
    bash=("command", ("command", "cmd")),
    shell=("command", ("command", "cmd")),
)
"""What hand-written OpenAI-style agents and Anthropic's text editor tool call things."""

DEFAULT_TOOLS = ToolMap.merged(CLAUDE_CODE, CODEX, PI, OPENCODE, OPENAI_STYLE)
"""Every family at once: names rarely clash, and where they do (`read`, `bash`, `shell`) the
acts agree and only the keys differ, which the merge unions."""


# what one call does


FileAct = Literal["read", "write", "edit", "delete", "create"]
"""A file act as the call states it: `write` becomes created or modified by what came before;
`create` (a patch's Add File) is always a creation."""


@dataclass(frozen=True, slots=True)
class CallIntent:
    """What a call sets out to do, from its name and arguments alone."""

    files: tuple[tuple[FileAct, str], ...] = ()
    command: str | None = None
    todos: tuple[tuple[str, str], ...] | None = None
    """(text, status) of each item, when the call sets the todo list."""


def intent_of(name: str, arguments: str, tools: ToolMap) -> CallIntent:
    """What the call `name(arguments)` does by `tools`; nothing for a tool it does not map.
    Never raises: malformed arguments mean no intent."""
    spec = tools.spec(name)
    if spec is None:
        return CallIntent()
    parsed = _parsed(arguments)
    if spec.kind == "patch":
        text = _first_str(parsed, spec.keys) if isinstance(parsed, dict) else None
        if text is None and not isinstance(parsed, dict | list):
            text = arguments  # a custom tool's input is the patch text itself
        return CallIntent(files=patch_files(text or ""))
    if not isinstance(parsed, dict):
        return CallIntent()
    if spec.kind == "command":
        command = _command_text(_first(parsed, spec.keys))
        if command is None:
            return CallIntent()
        if command.startswith("apply_patch") and "*** Begin Patch" in command:
            return CallIntent(files=patch_files(command), command="apply_patch")
        return CallIntent(files=deleted_by(command), command=command)
    if spec.kind == "todos":
        return CallIntent(todos=_todos(_first(parsed, spec.keys)))
    path = _first_str(parsed, spec.keys)
    if not path:
        return CallIntent()
    if spec.kind == "editor":
        act: FileAct = {"view": "read", "create": "write"}.get(  # type: ignore[assignment]
            str(parsed.get("command")), "edit"
        )
        return CallIntent(files=((act, path),))
    return CallIntent(files=((cast(FileAct, spec.kind), path),))


def _parsed(arguments: str) -> object:
    try:
        return cast(object, json.loads(arguments))
    except ValueError:
        return None


def _first(arguments: dict[str, object], keys: tuple[str, ...]) -> object:
    for key in keys:
        if key in arguments:
            return arguments[key]
    return None


def _first_str(arguments: dict[str, object], keys: tuple[str, ...]) -> str | None:
    value = _first(arguments, keys)
    return value if isinstance(value, str) else None


_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "/bin/bash", "/bin/sh", "/bin/zsh"})


def _command_text(value: object) -> str | None:
    """A command as the user would type it: an argv list `["bash", "-lc", "x"]` is `x`,
    another list is joined with shell quoting."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        argv = cast(list[str], value)
        if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-c", "-lc", "-l"):
            return argv[2]
        if argv[0] == "apply_patch" and len(argv) == 2:
            return "apply_patch\n" + argv[1]
        return shlex.join(argv)
    return None


def patch_files(patch: str) -> tuple[tuple[FileAct, str], ...]:
    """The files a Codex-style patch names: `*** Add File: p` creates p, `*** Update File:
    p` modifies it, `*** Delete File: p` deletes it, and `*** Move to: q` after an update
    moves it (p deleted, q created)."""
    acts: list[tuple[FileAct, str]] = []
    for raw in patch.splitlines():
        line = raw.strip()
        for prefix, act in (
            ("*** Add File:", "create"),
            ("*** Update File:", "edit"),
            ("*** Delete File:", "delete"),
        ):
            if line.startswith(prefix) and line[len(prefix) :].strip():
                acts.append((cast(FileAct, act), line[len(prefix) :].strip()))
        if line.startswith("*** Move to:") and acts and acts[-1][0] == "edit":
            target = line[len("*** Move to:") :].strip()
            if target:
                acts[-1] = ("delete", acts[-1][1])
                acts.append(("create", target))
    return tuple(acts)


def deleted_by(command: str) -> tuple[tuple[FileAct, str], ...]:
    """Paths a command plainly deletes: each `rm [-f|-r|-rf...] path...` step of a line of
    `&&`/`;`-separated steps whose words are literal (no globs, variables, substitutions,
    redirections or pipes). Anything less plain is not guessed at: no delete is recorded."""
    if any(mark in command for mark in ("$", "`", "*", "?", "[", "|", ">", "<", "\n", "{")):
        return ()
    acts: list[tuple[FileAct, str]] = []
    for step in command.replace("&&", ";").split(";"):
        try:
            words = shlex.split(step)
        except ValueError:
            return ()
        if not words or words[0] not in ("rm", "git rm"):
            continue
        paths = [w for w in words[1:] if not w.startswith("-")]
        acts.extend(("delete", path) for path in paths)
    return tuple(acts)


_TODO_TEXT = ("content", "step", "text", "title", "description", "task")


def _todos(value: object) -> tuple[tuple[str, str], ...] | None:
    """Claude Code's `todos[{content, status, activeForm}]`, OpenCode's `todos[{content,
    status, priority, id}]`, Codex's `plan[{step, status}]`; `None` when it is no list."""
    if not isinstance(value, list):
        return None
    items = []
    for item in value:
        if isinstance(item, str):
            items.append((item, ""))
        elif isinstance(item, dict):
            text = next((item[k] for k in _TODO_TEXT if isinstance(item.get(k), str)), "")
            status = item.get("status", item.get("state", ""))
            items.append((str(text), status if isinstance(status, str) else ""))
    return tuple(items)
