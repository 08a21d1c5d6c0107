"""A `StructuredSummary` as text, and back: stable headings, entries the parser reads exactly.

The text is what the model is shown (and what the event records), so it reads as markdown:
a first line marking it as a summary, one `## ` heading per section, always in the same order.
It is also what the next compaction starts from, so `parse_summary` reads it back into
sections: text that may hold anything (a request, an error's lines, the assistant's message,
a model's notes, which may well contain `## ` lines of their own) is written as a block whose
header says its length in characters, so it is read back exactly, whatever it contains.

The user's requests are shown word for word within a budget of their own (see
`_summary_requests`): only one that alone would not fit its share is shortened, and it keeps
its first sentence whole, then its beginning and end around `[… N characters left out …]`.
Other long entries (the assistant's last message, notes) keep their beginning and end
(`shorten`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sessionstore.projections._artifacts import FileAction, TodoItem
from sessionstore.projections._live import estimate_tokens
from sessionstore.projections._summary import (
    DONE,
    FILE_ACTIONS,
    SUMMARY_MARKER,
    CommandEntry,
    DecisionEntry,
    ErrorEntry,
    FileEntry,
    RequestEntry,
    StructuredSummary,
    merge,
)
from sessionstore.projections._summary_fit import (
    Count,
    Entry,
    Section,
    fit,
    rendered,
    section_size,
)
from sessionstore.projections._summary_requests import (
    REQUEST_HEAD,
    block,
    elided,
    fit_requests,
    replaced_room,
    requests_budget,
)

TASK = "## The task and the user's requests, in order"
DECISIONS = "## Decisions and preferences (the user's words, picked out by a heuristic)"
FILES = "## Files and what was done to each"
COMMANDS = "## Commands and errors, with their fixes"
STATE = "## Current state"
NEXT = "## Next steps"
NOTES = "## Notes from the summarizer"
HEADINGS = (TASK, DECISIONS, FILES, COMMANDS, STATE, NEXT, NOTES)

SHARES = {TASK: 0.30, DECISIONS: 0.07, FILES: 0.20, COMMANDS: 0.20, STATE: 0.13, NEXT: 0.10}
"""Each section's share of the budget; with notes, these are 70% of it and the notes 30%."""
NOTES_SHARE = 0.30
GIVE_WAY = {COMMANDS: 0, STATE: 1, NEXT: 2, DECISIONS: 3, FILES: 4, NOTES: 5}
"""When what must be kept does not fit, the other sections give way in this order. The
requests' section is fitted apart, to its own budget, and never gives way."""

SHORT_REQUEST = 160
"""A text this long or shorter is never shortened by `shorten`."""
TOOLS_SHOWN = 12

_ELIDED = re.compile(r" \[… ([\d,]+) characters left out …\] ")


def shorten(text: str, length: int, width: int) -> str:
    """`text` (whole, or shortened earlier: see `elided`) cut to about `width` characters: two
    thirds from its beginning (never under `REQUEST_HEAD`), the rest from its end. `length` is
    the whole text's. Whole when it is at most `SHORT_REQUEST` characters, or when cutting
    would not make it shorter. For the assistant's message, notes and transcripts; requests
    are fitted by `fit_requests`."""
    found = _ELIDED.search(text) if len(text) != length else None
    if found is None:
        length = len(text)  # whole (or shortened by someone else: taken as it is)
        if length <= max(width + 40, SHORT_REQUEST):
            return text
    head, tail = (text[: found.start()], text[found.end() :]) if found else (text, text)
    keep_head = max(width * 2 // 3, REQUEST_HEAD)
    keep_tail = max(width - keep_head, 0)
    head, tail = head[:keep_head], tail[len(tail) - keep_tail :] if keep_tail else ""
    left_out = length - len(head) - len(tail)
    if left_out <= len(elided(left_out)):
        return text
    return head + elided(left_out) + tail


def _forms(make: Callable[[int], str], widths: tuple[int, ...]) -> tuple[str, ...]:
    forms: list[str] = []
    for width in widths:
        form = make(width)
        if not forms or form != forms[-1]:
            forms.append(form)
    return tuple(forms)


# rendering


def render_summary(
    summary: StructuredSummary,
    budget: int,
    count: Count = estimate_tokens,
    *,
    usable: int | None = None,
    replacing: int | None = None,
    carried: int = 0,
) -> str:
    """The summary as text, its sections fitted to `budget` tokens as counted by `count` (see
    `_summary_fit`). The user's requests have a budget of their own (`requests_budget`): a
    share of the session's `usable` window when it is known; when the summary replaces
    messages of `replacing` tokens, no more than keeps the whole summary at three quarters of
    them, unless that is less than the `carried` tokens the previous summary among them gave
    the requests (`requests_tokens`; see `SUMMARY_OF_REPLACED`). So they are shown word for
    word
    unless one alone would not fit; what they take beyond their share of `budget` lengthens
    the summary rather than squeezing the other sections. User requests, changed files' paths
    and the last error's decisive lines are never left out, so the text is longer than that
    only when they alone do not fit."""
    scale = 1.0 - NOTES_SHARE if summary.notes else 1.0
    first = _first_line(summary)
    share = SHARES[TASK] * scale
    own = requests_budget(budget, share, usable)
    task = Section(TASK, share, _requests(summary, own, count))
    sections = [
        _section(DECISIONS, scale, share, _decisions(summary)),
        _section(FILES, scale, share, _files(summary)),
        _section(COMMANDS, scale, share, _commands(summary)),
        _section(STATE, scale, share, _state(summary, budget)),
        _section(NEXT, scale, share, _next_steps(summary)),
    ]
    if summary.notes:
        notes = _notes(summary, budget)
        sections.append(Section(NOTES, NOTES_SHARE / (1 - share), notes, GIVE_WAY[NOTES]))
    taken = min(section_size(task, count), int(share * budget))
    fit(sections, budget - count(first) - taken, count)
    if replacing is not None:
        rest = count(first) + sum(section_size(s, count) + 1 for s in sections)
        room = replaced_room(replacing, rest, carried)
        if section_size(task, count) > room:
            task = Section(TASK, share, _requests(summary, room, count))
    return "\n\n".join([first, rendered(task), *(rendered(s) for s in sections)])


def requests_tokens(summary: StructuredSummary, count: Count = estimate_tokens) -> int:
    """What `summary`'s requests section costs with each request as it stands (word for word,
    or as an earlier summary shortened it)."""
    return section_size(Section(TASK, 0.0, _requests(summary, 10**12, count)), count)


def _section(heading: str, scale: float, requests: float, entries: list[Entry]) -> Section:
    """A section with its share of what the requests' share leaves."""
    return Section(heading, SHARES[heading] * scale / (1 - requests), entries, GIVE_WAY[heading])


def _first_line(summary: StructuredSummary) -> str:
    through = f", through seq {summary.through_seq}" if summary.through_seq is not None else ""
    return (
        f"{SUMMARY_MARKER} Compaction {summary.compactions}{through}. The requests, files, "
        "commands and errors below are computed from the session's events, not recalled; long "
        "entries keep their beginning and end."
    )


def _requests(summary: StructuredSummary, budget: int, count: Count) -> list[Entry]:
    labels = [
        f"Request {n}" + (f", seq {request.seq}" if request.seq is not None else "")
        for n, request in enumerate(summary.requests, 1)
    ]
    blocks = fit_requests(labels, summary.requests, budget, TASK, count)
    return [Entry((text,), keep=True, rank=n) for n, text in enumerate(blocks, 1)]


def _decisions(summary: StructuredSummary) -> list[Entry]:
    return [
        Entry((f"- (seq {d.seq}) {d.text}" if d.seq is not None else f"- {d.text}",), rank=n)
        for n, d in enumerate(summary.decisions)
    ]


def _file_line(entry: FileEntry) -> str:
    acts = ", ".join(a if n == 1 else f"{a} x{n}" for a, n in entry.counts)
    at = f" at seq {entry.last_seq}" if entry.last_seq is not None else ""
    return f"- {entry.path} — {acts}; last {entry.last_action}{at}"


def _files(summary: StructuredSummary) -> list[Entry]:
    entries = []
    for n, f in enumerate(summary.files):
        if f.changed:
            entries.append(Entry((_file_line(f), f"- {f.path} — {f.last_action}"), keep=True))
        else:
            entries.append(Entry((_file_line(f),), rank=n))
    return entries


def _error_block(error: ErrorEntry, decisive: str) -> str:
    at = f" at seq {error.seq}" if error.seq is not None else ""
    fix = f"fixed {error.fixed_by}" if error.fixed_by else "not fixed yet"
    return block(f"Error{at} — {error.what}; {fix}", decisive, len(decisive))


def _commands(summary: StructuredSummary) -> list[Entry]:
    entries = []
    if summary.tools:
        shown = ", ".join(f"{name} x{n}" for name, n in summary.tools[:TOOLS_SHOWN])
        rest = summary.tools[TOOLS_SHOWN:]
        more = f", and {len(rest)} more ({sum(n for _, n in rest)} calls)" if rest else ""
        entries.append(Entry((f"Tools used: {shown}{more}",), rank=10**6))
    for n, c in enumerate(summary.commands):
        times = f" x{c.times}" if c.times > 1 else ""
        at = f" (seq {c.seq})" if c.seq is not None else ""
        entries.append(Entry((f"- $ {c.command} → {c.outcome}{times}{at}",), rank=n))
    last = len(summary.errors) - 1
    for n, error in enumerate(summary.errors):
        lines = [line for line in error.decisive.splitlines() if line.strip()]
        whole = _error_block(error, error.decisive)
        compact = _error_block(error, lines[-1] if lines else "")
        # the last error keeps every decisive line (they are few: see `decisive_lines`); an
        # older one may come down to its last line, or go
        forms = (whole,) if compact == whole or n == last else (whole, compact)
        entries.append(Entry(forms, keep=n == last, rank=10**5 + n))
    return entries


def _state(summary: StructuredSummary, budget: int) -> list[Entry]:
    entries = []
    if summary.todos:
        todo = [f"- [{t.status or 'todo'}] {' '.join(t.text.split())}" for t in summary.todos]
        open_ = [line for line, t in zip(todo, summary.todos, strict=True) if t.status not in DONE]
        head = "Todo list, as the last todo call left it:"
        forms = tuple(dict.fromkeys("\n".join([head, *lines]) for lines in (todo, open_)))
        entries.append(Entry(forms, rank=1))
    if summary.state is not None:
        text, length = summary.state, _length(summary.state)

        def form(width: int) -> str:
            return block("The assistant's last message", shorten(text, length, width), length)

        entries.append(Entry(_forms(form, (max(600, budget * 2 // 5), 300)), rank=0))
    return entries


def _length(text: str) -> int:
    """The whole text's length, read from its elision when it was shortened."""
    found = _ELIDED.search(text)
    if found is None:
        return len(text)
    return len(text) - len(found.group(0)) + int(found.group(1).replace(",", ""))


def _next_steps(summary: StructuredSummary) -> list[Entry]:
    lines = [
        f"- Todo ({t.status or 'todo'}): {' '.join(t.text.split())}"
        for t in summary.todos
        if t.status not in DONE
    ]
    lines += [
        f"- Fix the error{f' at seq {e.seq}' if e.seq is not None else ''}: {e.what}"
        for e in summary.errors
        if e.fixed_by is None
    ]
    if summary.unanswered is not None:
        seq, head = summary.unanswered
        at = f" (seq {seq})" if seq is not None else ""
        lines.append(f"- Answer the last request{at}: {head}")
    return [Entry((line,), rank=n) for n, line in enumerate(lines)]


def _notes(summary: StructuredSummary, budget: int) -> list[Entry]:
    text, length, by = summary.notes or "", _length(summary.notes or ""), summary.notes_by

    def form(width: int) -> str:
        return block(f"Written by {by or 'a summarizer'}", shorten(text, length, width), length)

    return [Entry(_forms(form, (budget * 4, budget * 2, budget)), rank=0)]


# parsing


_FIRST = re.compile(r"Compaction (\d+)(?:, through seq (\d+))?")
_BLOCK = re.compile(r"^(.*) \(([\d,]+) characters(?:, shortened to ([\d,]+))?\):$")
_REQUEST = re.compile(r"^Request \d+(?:, seq (\d+))?$")
_DECISION = re.compile(r"^- (?:\(seq (\d+)\) )?(.*)$")
_FILE = re.compile(r"^- (.*) — ([a-z x\d,]+?)(?:; last (\w+)(?: at seq (\d+))?)?$")
_COUNT = re.compile(r"^(created|modified|deleted|read)(?: x(\d+))?$")
_COMMAND = re.compile(r"^- \$ (.*) → (ok|no result yet)(?: x(\d+))?(?: \(seq (\d+)\))?$")
_ERROR = re.compile(r"^Error(?: at seq (\d+))? — (.*); (?:fixed (.*)|not fixed yet)$")
_TOOLS = re.compile(r"^(.+) x(\d+)$")
_TODO = re.compile(r"^- \[(.*?)\] (.*)$")
_UNANSWERED = re.compile(r"^- Answer the last request(?: \(seq (\d+)\))?: (.*)$")
_WRITTEN = re.compile(r"^Written by (.*)$")


def parse_summary(text: str) -> StructuredSummary | None:
    """The sections of a summary `render_summary` wrote (several, merged in order, when
    `text` holds more than one); `None` when `text` is no such summary."""
    starts = [m.start() for m in re.finditer(re.escape(SUMMARY_MARKER), text)]
    starts = [s for s in starts if s == 0 or text[s - 1] == "\n"]
    if not starts or starts[0] != 0:
        return None
    parsed: StructuredSummary | None = None
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        one = _parse_one(text[start:end].rstrip("\n"))
        parsed = one if parsed is None else merge(parsed, one)
    return parsed


def _parse_one(text: str) -> StructuredSummary:
    lines = _Lines(text)
    first = _FIRST.search(lines.next())
    summary = StructuredSummary(
        compactions=int(first.group(1)) if first else 1,
        through_seq=int(first.group(2)) if first and first.group(2) else None,
    )
    fields: dict[str, list[object]] = {h: [] for h in HEADINGS}
    section = ""
    todos: list[TodoItem] = []
    state: str | None = None
    unanswered: tuple[int | None, str] | None = None
    notes: tuple[str | None, str] | None = None
    tools: list[tuple[str, int]] = []
    while not lines.done():
        line = lines.next()
        if line in HEADINGS:
            section = line
            continue
        block = _BLOCK.match(line)
        label = block.group(1) if block else None
        length = int(block.group(2).replace(",", "")) if block else 0
        shown = int(block.group(3).replace(",", "")) if block and block.group(3) else length
        if section == TASK and label is not None and (found := _REQUEST.match(label)):
            seq = int(found.group(1)) if found.group(1) else None
            fields[TASK].append(RequestEntry(seq, lines.take(shown), length))
        elif section == DECISIONS and (found := _DECISION.match(line)):
            seq = int(found.group(1)) if found.group(1) else None
            fields[DECISIONS].append(DecisionEntry(seq, found.group(2)))
        elif section == FILES and (found := _FILE.match(line)):
            fields[FILES].extend(_file(found))
        elif section == COMMANDS and label is not None and (found := _ERROR.match(label)):
            seq = int(found.group(1)) if found.group(1) else None
            body = lines.take(shown)
            fields[COMMANDS].append(ErrorEntry(seq, found.group(2), body, found.group(3)))
        elif section == COMMANDS and (found := _COMMAND.match(line)):
            seq = int(found.group(4)) if found.group(4) else None
            times = int(found.group(3) or 1)
            fields[COMMANDS].append(CommandEntry(seq, found.group(1), found.group(2), times))
        elif section == COMMANDS and line.startswith("Tools used: "):
            for item in line.removeprefix("Tools used: ").split(", "):
                if found := _TOOLS.match(item):
                    tools.append((found.group(1), int(found.group(2))))
        elif section == STATE and label == "The assistant's last message":
            state = lines.take(shown)
        elif section == STATE and (found := _TODO.match(line)):
            todos.append(TodoItem(found.group(2), found.group(1)))
        elif section == NEXT and (found := _UNANSWERED.match(line)):
            unanswered = (int(found.group(1)) if found.group(1) else None, found.group(2))
        elif section == NOTES and label is not None and (found := _WRITTEN.match(label)):
            notes = (found.group(1), lines.take(shown))
    entries = fields[COMMANDS]
    return StructuredSummary(
        through_seq=summary.through_seq,
        compactions=summary.compactions,
        requests=tuple(e for e in fields[TASK] if isinstance(e, RequestEntry)),
        decisions=tuple(e for e in fields[DECISIONS] if isinstance(e, DecisionEntry)),
        files=tuple(e for e in fields[FILES] if isinstance(e, FileEntry)),
        tools=tuple(tools),
        commands=tuple(e for e in entries if isinstance(e, CommandEntry)),
        errors=tuple(e for e in entries if isinstance(e, ErrorEntry)),
        state=state,
        todos=tuple(todos),
        unanswered=unanswered,
        notes=notes[1] if notes else None,
        notes_by=notes[0] if notes else None,
    )


def _file(found: re.Match[str]) -> list[FileEntry]:
    counts: dict[FileAction, int] = {}
    for item in found.group(2).split(", "):
        count = _COUNT.match(item.strip())
        if count is None:
            return []
        action = _action(count.group(1))
        counts[action] = int(count.group(2) or 1)
    last = _action(found.group(3)) if found.group(3) in FILE_ACTIONS else None
    ordered = tuple((a, counts[a]) for a in FILE_ACTIONS if a in counts)
    seq = int(found.group(4)) if found.group(4) else None
    return [FileEntry(found.group(1), ordered, last or ordered[-1][0], seq)]


def _action(name: str) -> FileAction:
    return next(a for a in FILE_ACTIONS if a == name)


class _Lines:
    """A cursor over a text: whole lines, or a block of exactly so many characters."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def done(self) -> bool:
        return self.at >= len(self.text)

    def next(self) -> str:
        end = self.text.find("\n", self.at)
        end = len(self.text) if end < 0 else end
        line, self.at = self.text[self.at : end], end + 1
        return line

    def take(self, count: int) -> str:
        body = self.text[self.at : self.at + count]
        self.at += count
        if self.text[self.at : self.at + 1] == "\n":
            self.at += 1
        return body
