"""OpenCode's storage folder (`~/.local/share/opencode/storage`): one JSON file per session,
message and part, read into transcripts by `_opencode`.

The layout OpenCode writes (`Storage.write([...], value)` -> `<root>/<keys>.json`):
- `session/<projectID>/<sessionID>.json`: the session info (`parentID` for a subagent's);
- `message/<sessionID>/<messageID>.json`: a message info;
- `part/<messageID>/<partID>.json`: a part (files sort by id, which is creation order);
- `todo/<sessionID>.json` and `session_diff/<sessionID>.json`: kept as records.
The reader is pure: it takes the files' texts by their paths relative to the root (posix
separators), as `read_opencode_session` gives them. A session's children (sessions whose
`parentID` is it: the subagents its `task` tool started) become its transcript's children,
linked to the tool call whose `state.metadata.sessionId` names them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import JsonValue

from sessionstore.events import ImportRefused
from sessionstore.importers._common import Json
from sessionstore.importers._opencode import SourceMessage, session_transcript
from sessionstore.importers._opencode_parts import at
from sessionstore.importers._transcript import Link, Skipped, Transcript

_FOLDERS = ("session", "message", "part")


def is_opencode_storage(path: Path) -> bool:
    """Whether `path` is an OpenCode storage folder (it holds `session`, `message` and `part`
    folders)."""
    return all((path / name).is_dir() for name in _FOLDERS)


def opencode_session_ids(root: Path) -> list[str]:
    """The sessions under a storage root that are not another's subagent (a child comes with
    its parent), in id order, which is creation order. Reads the session files."""
    found: dict[str, object] = {}
    for file in sorted((root / "session").glob("*/*.json")):
        info = _json(file.read_text(encoding="utf-8", errors="replace"))
        found[file.stem] = info.get("parentID") if isinstance(info, dict) else None
    return sorted(
        i for i, parent in found.items() if not (isinstance(parent, str) and parent in found)
    )


def read_opencode_session(root: Path, session_id: str) -> dict[str, str]:
    """The texts of a session's files and its descendants', by their paths relative to `root`:
    what `opencode_storage_transcript` reads."""
    files: dict[str, str] = {}
    sessions = {p.stem: p for p in (root / "session").glob("*/*.json")}
    parents: dict[str, list[str]] = {}
    for sid, path in sessions.items():
        files[_relative(root, path)] = path.read_text(encoding="utf-8", errors="replace")
        info = _json(files[_relative(root, path)])
        parent = info.get("parentID") if isinstance(info, dict) else None
        if isinstance(parent, str):
            parents.setdefault(parent, []).append(sid)
    wanted, queue = set(), [session_id]
    while queue:
        sid = queue.pop()
        if sid not in wanted:
            wanted.add(sid)
            queue += parents.get(sid, [])
    files = {k: v for k, v in files.items() if PurePosixPath(k).stem in wanted}
    for sid in wanted:
        for extra in (root / "todo" / f"{sid}.json", root / "session_diff" / f"{sid}.json"):
            if extra.is_file():
                files[_relative(root, extra)] = extra.read_text(encoding="utf-8", errors="replace")
        for message in sorted((root / "message" / sid).glob("*.json")):
            files[_relative(root, message)] = message.read_text(encoding="utf-8", errors="replace")
            for part in sorted((root / "part" / message.stem).glob("*.json")):
                files[_relative(root, part)] = part.read_text(encoding="utf-8", errors="replace")
    return files


def opencode_storage_transcript(
    files: Mapping[str, str], session_id: str, encoding: str
) -> Transcript:
    """The session `session_id` (and its subagents, as children) from its storage files.
    `ImportRefused` when its session file is missing or unreadable, or it holds no messages;
    a file that is not JSON, or not what OpenCode writes, is skipped and reported."""
    return _Storage(files).transcript(session_id, encoding, None, set())


class _Storage:
    """The files, indexed by what they hold: sessions, each session's messages, each
    message's parts."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self.sessions: dict[str, str] = {}
        self.messages: dict[str, list[str]] = {}
        self.parts: dict[str, list[str]] = {}
        self.extras: dict[str, dict[str, str]] = {}
        for path in sorted(files):
            folders = PurePosixPath(path).parts
            if len(folders) < 2 or not path.endswith(".json"):
                continue
            stem = PurePosixPath(path).stem
            if folders[0] == "session" and len(folders) == 3:
                self.sessions[stem] = path
            elif folders[0] == "message" and len(folders) == 3:
                self.messages.setdefault(folders[1], []).append(path)
            elif folders[0] == "part" and len(folders) == 3:
                self.parts.setdefault(folders[1], []).append(path)
            elif folders[0] in ("todo", "session_diff") and len(folders) == 2:
                kind = "opencode.todos" if folders[0] == "todo" else "opencode.session_diff"
                self.extras.setdefault(stem, {})[kind] = path

    def transcript(
        self, session_id: str, encoding: str, link: Link | None, seen: set[str]
    ) -> Transcript:
        seen.add(session_id)
        path = self.sessions.get(session_id)
        if path is None:
            raise ImportRefused(f"no session file for OpenCode session {session_id!r}")
        info = _json(self.files[path])
        if not isinstance(info, dict) or info.get("id") != session_id:
            raise ImportRefused(f"{path} is not an OpenCode session info")
        skipped: list[Skipped] = []
        messages = []
        for message_path in sorted(self.messages.get(session_id, [])):
            message_id = PurePosixPath(message_path).stem
            parts = [(p, self._read(p, skipped)) for p in sorted(self.parts.get(message_id, []))]
            value = self._read(message_path, skipped)
            parts = [(p, v) for p, v in parts if v is not _UNREADABLE]
            if value is not _UNREADABLE:
                messages.append(SourceMessage(message_path, value, parts))
        extras: dict[str, JsonValue] = {}
        for kind, extra in self.extras.get(session_id, {}).items():
            value = self._read(extra, skipped)
            if value is not _UNREADABLE:
                extras[kind] = value  # type: ignore[assignment]
        transcript = session_transcript(info, messages, encoding, extras)
        transcript.skipped[:0] = skipped
        if link is not None:
            transcript.parent = link
        for child_id, child_path in sorted(self.sessions.items()):
            child = _json(self.files[child_path])
            if child_id in seen or not isinstance(child, dict):
                continue
            if child.get("parentID") != session_id:
                continue
            call_id = self._call_starting(session_id, child_id)
            try:
                transcript.children.append(
                    self.transcript(child_id, encoding, Link(session_id, call_id), seen)
                )
            except ImportRefused as exc:
                transcript.skip(None, exc.reason, child_path)
        return transcript

    def _read(self, path: str, skipped: list[Skipped]) -> object:
        value = _json(self.files[path])
        if value is _UNREADABLE:
            skipped.append(Skipped(None, "not JSON", path))
        return value

    def _call_starting(self, session_id: str, child_id: str) -> str | None:
        """The call id of the `task` tool part whose metadata names the child session."""
        for message_path in self.messages.get(session_id, []):
            for part_path in self.parts.get(PurePosixPath(message_path).stem, []):
                part = _json(self.files[part_path])
                if at(part, "state", "metadata", "sessionId") == child_id:
                    call_id = at(part, "callID")
                    return call_id if isinstance(call_id, str) else None
        return None


_UNREADABLE = object()


def _json(text: str) -> object:
    try:
        value: Json = json.loads(text)
    except (ValueError, RecursionError):
        return _UNREADABLE
    return value


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()
