"""Fitting a summary's sections to a token budget: each its own share, oldest entries first.

A section is a heading and entries. An entry has forms, from whole to most compact (a request
shortened more and more), and is either kept (it may only take a more compact form) or
droppable. Fitting runs in two steps:

1. each section gets its share of the budget, plus a part of what the sections that need less
   than their share leave over; a section over its share drops its droppable entries, lowest
   rank (oldest) first, then gives its kept entries their more compact forms, oldest first;
2. if the kept entries still make the whole too long, the other sections give way: they drop
   their droppable entries, section by section in `give_way` order, oldest first.

Kept entries are never dropped, so a summary can end over its budget: only when what must be
kept does not fit in it. Counting is the caller's (`count`), so the budget is in the tokens of
the session's encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Count = Callable[[str], int]


@dataclass(slots=True)
class Entry:
    forms: tuple[str, ...]
    """The entry's text, whole first; each next one more compact."""
    keep: bool = False
    rank: int = 0
    """Droppable entries go in order of rank, kept ones take their compact forms in it."""
    level: int = 0
    dropped: bool = False

    @property
    def text(self) -> str:
        return self.forms[self.level]


@dataclass(slots=True)
class Section:
    heading: str
    share: float
    entries: list[Entry]
    give_way: int = 0
    """When kept entries elsewhere do not fit, sections give way in this order, lowest first."""
    empty: str = "(none)"
    _costs: dict[tuple[int, int], int] = field(default_factory=dict)

    def dropped(self) -> int:
        return sum(entry.dropped for entry in self.entries)


OMITTED = "({count} older entr{ies} left out to fit; the event log keeps them all)"


def omitted_line(count: int) -> str:
    return OMITTED.format(count=count, ies="y" if count == 1 else "ies")


def section_size(section: Section, count: Count) -> int:
    """What `section` costs as `fit` counts it: its heading and a blank line, each entry left
    in and its line break, and the line saying how many were left out."""
    shown = sum(count(entry.text) + 1 for entry in section.entries if not entry.dropped)
    dropped = section.dropped()
    return count(section.heading) + 2 + shown + (count(omitted_line(dropped)) if dropped else 0)


def fit(sections: Sequence[Section], budget: int, count: Count) -> None:
    """Choose every entry's form, or drop it, so the sections fit in `budget` tokens where the
    kept entries allow; see the module."""

    def cost(section: Section, n: int) -> int:
        entry = section.entries[n]
        if entry.dropped:
            return 0
        key = (n, entry.level)
        if key not in section._costs:
            section._costs[key] = count(entry.text) + 1
        return section._costs[key]

    def size(section: Section) -> int:
        total = count(section.heading) + 2 + sum(cost(section, n) for n in _range(section))
        return total + (count(omitted_line(section.dropped())) if section.dropped() else 0)

    shares = {id(s): s.share * budget for s in sections}
    needs = {id(s): size(s) for s in sections}
    slack = sum(max(0.0, shares[id(s)] - needs[id(s)]) for s in sections)
    over = sum(max(0.0, needs[id(s)] - shares[id(s)]) for s in sections)
    for s in sections:
        excess = needs[id(s)] - shares[id(s)]
        if excess > 0 and over > 0:
            shares[id(s)] += slack * excess / over
    for s in sections:
        _shrink(s, shares[id(s)], size, compact=True)
    excess = sum(size(s) for s in sections) - budget
    for s in sorted(sections, key=lambda s: s.give_way):
        if excess <= 0:
            break
        before = size(s)
        _shrink(s, before - excess, size, compact=False)
        excess -= before - size(s)


def _range(section: Section) -> range:
    return range(len(section.entries))


def _shrink(
    section: Section, target: float, size: Callable[[Section], int], *, compact: bool
) -> None:
    """Drop droppable entries, lowest rank first, then (when `compact`) give kept entries
    their next form, lowest rank first, until `section` fits in `target` or cannot shrink."""
    order = sorted(_range(section), key=lambda n: (section.entries[n].rank, n))
    for n in order:
        if size(section) <= target:
            return
        entry = section.entries[n]
        if not entry.keep and not entry.dropped:
            entry.dropped = True
    if not compact:
        return
    for level in range(1, max((len(e.forms) for e in section.entries), default=1)):
        for n in order:
            if size(section) <= target:
                return
            entry = section.entries[n]
            if entry.keep and entry.level < level < len(entry.forms):
                entry.level = level


def rendered(section: Section) -> str:
    """The section's text: its heading, its entries left in, and how many were left out."""
    lines = [section.heading]
    shown = [entry.text for entry in section.entries if not entry.dropped]
    dropped = section.dropped()
    if dropped:
        lines.append(omitted_line(dropped))
    lines += shown if shown or dropped else [section.empty]
    return "\n".join(lines)
