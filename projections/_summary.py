"""A compaction summary with fixed sections, built from the artifact trail and merged, not nested.

A summary that nests the previous one and cuts the whole at a length loses the newest requests,
files and errors first. A `StructuredSummary` instead holds entries per section: the user's
requests in order, decisions and preferences in the user's words, files and what was done to
each, commands and errors with their fixes, the current state, next steps, and free notes (what
a model summarizer wrote). Compacting again parses the previous summary back (`parse_summary`)
and `merge`s the new range into its sections; `render_summary` fits each section to its own
budget, oldest entries first, and never drops a user request (it shortens it to its beginning
and end), a changed file's path, or the last error.

Entries come from the trail, computed from the events (`summary_from_trail`): a model cannot
lose a file path that is not its to recall. Decisions and preferences are read from the user's
requests by a heuristic (sentences with "only", "always", "don't", "keep"...): marked so, and
quoted, never paraphrased.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from sessionstore.events import TextPart
from sessionstore.projections._artifacts import ArtifactTrail, FileAction, TodoItem
from sessionstore.projections._live import LiveMessage

T = TypeVar("T")

SUMMARY_MARKER = "[Summary of earlier conversation]"
"""The first line of every compaction summary: it tells the model (whatever API renders it)
that this user turn is a summary, not the user speaking."""

FILE_ACTIONS: tuple[FileAction, ...] = ("created", "modified", "deleted", "read")
DONE = frozenset({"completed", "complete", "done", "cancelled", "canceled"})
"""Todo statuses that leave nothing to do."""

COMMAND_CHARS = 160
"""A command is shown on one line, at most this long (its head and its end)."""
DECISION_CHARS = 240


@dataclass(frozen=True, slots=True)
class RequestEntry:
    """A user request: `text` is the whole request, or (parsed back from a summary that had
    shortened it) its beginning and end around `ELIDED`; `length` is the whole request's."""

    seq: int | None
    text: str
    length: int


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    seq: int | None
    text: str


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A path, how many times each action was done to it (in `FILE_ACTIONS` order), and the
    last one."""

    path: str
    counts: tuple[tuple[FileAction, int], ...]
    last_action: FileAction
    last_seq: int | None

    @property
    def changed(self) -> bool:
        return any(action != "read" for action, _ in self.counts)


@dataclass(frozen=True, slots=True)
class CommandEntry:
    """A command that did not fail (its failures are errors), run `times` times in a row."""

    seq: int | None
    command: str
    outcome: str
    times: int = 1


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    """A failed call: `what` names the tool and its target on one line, `decisive` is the
    output's decisive lines verbatim, `fixed_by` the later call that succeeded, if any."""

    seq: int | None
    what: str
    decisive: str
    fixed_by: str | None = None


@dataclass(frozen=True, slots=True)
class StructuredSummary:
    """What a summary holds, section by section; every tuple in order, oldest first."""

    through_seq: int | None = None
    compactions: int = 1
    requests: tuple[RequestEntry, ...] = ()
    decisions: tuple[DecisionEntry, ...] = ()
    files: tuple[FileEntry, ...] = ()
    tools: tuple[tuple[str, int], ...] = ()
    commands: tuple[CommandEntry, ...] = ()
    errors: tuple[ErrorEntry, ...] = ()
    state: str | None = None
    """The assistant's last message."""
    todos: tuple[TodoItem, ...] = ()
    unanswered: tuple[int | None, str] | None = None
    """(seq, beginning) of the last request no assistant message followed."""
    notes: str | None = None
    notes_by: str | None = None

    @property
    def last_error(self) -> ErrorEntry | None:
        return self.errors[-1] if self.errors else None


# building from the trail


def summary_from_trail(
    trail: ArtifactTrail, messages: Sequence[LiveMessage], *, exact_seqs: bool = True
) -> StructuredSummary:
    """The sections of `trail` (requests, decisions, files, commands, errors, todos), with the
    current state and the unanswered request read from `messages` (the ones replaced).
    `exact_seqs=False` when the trail was folded from messages rather than the log: its seqs
    are positions, not events, and are left out."""

    def seq(value: int) -> int | None:
        return value if exact_seqs else None

    requests = tuple(
        RequestEntry(seq(r.seq), r.text, len(r.text)) for r in trail.requests if not r.reverted
    )
    files = tuple(
        FileEntry(
            path=f.path,
            counts=_counts(action for action, _ in f.actions),
            last_action=f.last_action,
            last_seq=seq(f.last_seq),
        )
        for f in trail.files
    )
    fixes = {c.result_seq: c.command for c in trail.commands if c.ok and c.result_seq}
    for f in trail.files:
        for action, at in f.actions:
            fixes.setdefault(at, f"{action} {f.path}")
    errors = tuple(
        ErrorEntry(
            seq=seq(e.seq),
            what=_one_line(
                f"{e.tool}({e.target})" + (f", exit {e.exit_code}" if e.exit_code else ""),
                COMMAND_CHARS,
            ),
            decisive=e.decisive,
            fixed_by=None
            if e.fixed_by_seq is None
            else _fixed_by(seq(e.fixed_by_seq), fixes.get(e.fixed_by_seq)),
        )
        for e in trail.errors
    )
    commands: list[CommandEntry] = []
    for c in trail.commands:
        if c.ok is False:
            continue  # an error entry says more
        outcome = "no result yet" if c.ok is None else "ok"
        line = _one_line(c.command, COMMAND_CHARS)
        done = seq(c.result_seq or c.seq)  # when it took effect, as errors and files are dated
        if commands and (commands[-1].command, commands[-1].outcome) == (line, outcome):
            commands[-1] = replace(commands[-1], seq=done, times=commands[-1].times + 1)
        else:
            commands.append(CommandEntry(done, line, outcome))
    state, unanswered = _state(messages, trail, exact_seqs)
    return StructuredSummary(
        through_seq=seq(trail.seq),
        requests=requests,
        decisions=decisions_in(requests),
        files=files,
        tools=trail.tool_calls,
        commands=tuple(commands),
        errors=errors,
        state=state,
        todos=trail.todos,
        unanswered=unanswered,
    )


def _fixed_by(seq: int | None, what: str | None) -> str:
    where = f"at seq {seq}" if seq is not None else "later"
    return f"{where} by {_one_line(what, COMMAND_CHARS)}" if what else where


def _counts(actions: Iterable[FileAction]) -> tuple[tuple[FileAction, int], ...]:
    seen = list(actions)
    return tuple((a, seen.count(a)) for a in FILE_ACTIONS if a in seen)


def _state(
    messages: Sequence[LiveMessage], trail: ArtifactTrail, exact_seqs: bool
) -> tuple[str | None, tuple[int | None, str] | None]:
    """The assistant's last text among `messages`, and the last request none followed."""
    own = {r.message_id: r for r in trail.requests}
    state: str | None = None
    unanswered: tuple[int | None, str] | None = None
    for message in messages:
        if message.summary:
            continue
        text = "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
        if message.role == "assistant" and text:
            state, unanswered = text, None
        elif message.role == "user" and message.id in own:
            request = own[message.id]
            unanswered = (request.seq if exact_seqs else None, _one_line(request.text, 160))
    return state, unanswered


DECISION = re.compile(
    r"\b(?:only|always|never|don'?t|do not|must|mustn'?t|should(?:n'?t)?|prefer|keep|instead"
    r"|avoid|make sure|stick to|rather than|from now on|no more|without|not allowed)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def decisions_in(requests: Sequence[RequestEntry]) -> tuple[DecisionEntry, ...]:
    """The sentences of the user's requests that read as a decision or a preference ("only
    E2E tests", "keep the old code", "don't touch the API"): a heuristic, so they are quoted
    as the user wrote them and marked as read by it. Long sentences (pasted logs, code) are
    not taken."""
    found: dict[tuple[int | None, str], DecisionEntry] = {}
    for request in requests:
        for sentence in _SENTENCE.split(request.text):
            sentence = sentence.strip()
            if 3 <= len(sentence) <= DECISION_CHARS and DECISION.search(sentence):
                found.setdefault((request.seq, sentence), DecisionEntry(request.seq, sentence))
    return tuple(found.values())


def _one_line(text: str, width: int) -> str:
    """`text` on one line, at most `width` characters: its head and its end."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    tail = width // 4
    return flat[: width - tail - 1] + "…" + flat[-tail:]


# merging a new range into the previous summary


def merge(previous: StructuredSummary, new: StructuredSummary) -> StructuredSummary:
    """`new` folded into `previous`, section by section. Entries are matched by seq (and
    request text or path): a matching entry from `new` replaces the old one (a trail read from
    the log knows the whole request that the previous summary had shortened, and which error
    was fixed since); the rest keep their order. The current state, the todo list and the
    unanswered request are the newest known; notes are the newest written."""
    requests = _union(previous.requests, new.requests, lambda r: (r.seq, r.text[:80]))
    return StructuredSummary(
        through_seq=new.through_seq if new.through_seq is not None else previous.through_seq,
        compactions=previous.compactions + 1,
        requests=requests,
        decisions=_union(previous.decisions, new.decisions, lambda d: (d.seq, d.text)),
        files=_merge_files(previous.files, new.files),
        tools=_merge_tools(previous.tools, new.tools),
        commands=_union(previous.commands, new.commands, lambda c: (c.seq, c.command)),
        errors=_union(previous.errors, new.errors, lambda e: (e.seq, e.what)),
        state=new.state if new.state is not None else previous.state,
        todos=new.todos or previous.todos,
        unanswered=new.unanswered
        if new.unanswered is not None or new.state is not None or new.requests
        else previous.unanswered,
        notes=new.notes if new.notes is not None else previous.notes,
        notes_by=new.notes_by if new.notes is not None else previous.notes_by,
    )


def _union(old: Sequence[T], new: Sequence[T], key: Callable[[T], Hashable]) -> tuple[T, ...]:
    """`old` then `new`, a `new` entry taking the place of the old entry with its key."""
    fresh = {key(entry): entry for entry in new}
    merged = [fresh.pop(key(entry), entry) for entry in old]
    merged += [entry for entry in new if key(entry) in fresh]
    seqs = [getattr(entry, "seq", None) for entry in merged]
    known = [seq for seq in seqs if isinstance(seq, int)]
    if len(known) == len(merged):  # an entry the previous summary left out
        order = sorted(range(len(merged)), key=lambda n: known[n])  # comes back in its place
        merged = [merged[n] for n in order]
    return tuple(merged)


def _merge_files(old: Sequence[FileEntry], new: Sequence[FileEntry]) -> tuple[FileEntry, ...]:
    """A path in both keeps, for each action, the larger count: a trail from the log counts
    everything the previous summary counted; a previous summary from another log (a fork's
    parent) may count acts this trail never saw."""
    fresh = {f.path: f for f in new}
    merged: list[FileEntry] = []
    for entry in old:
        newer = fresh.pop(entry.path, None)
        if newer is None:
            merged.append(entry)
            continue
        counts = dict(entry.counts)
        for action, n in newer.counts:
            counts[action] = max(counts.get(action, 0), n)
        ordered = tuple((a, counts[a]) for a in FILE_ACTIONS if a in counts)
        merged.append(replace(newer, counts=ordered))
    merged += [f for f in new if f.path in fresh]
    return tuple(merged)


def _merge_tools(
    old: Sequence[tuple[str, int]], new: Sequence[tuple[str, int]]
) -> tuple[tuple[str, int], ...]:
    counts = dict(old)
    for name, n in new:
        counts[name] = max(counts.get(name, 0), n)
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
