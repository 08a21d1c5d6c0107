"""The user's requests in a summary: word for word, unless one alone would not fit.

What the user asked is what the agent works for, and a request cut in its middle can invert it
("keep the old code around for reference" is not "keep the old code"). So the requests section
has a budget of its own (`requests_budget`: a share of the usable window, a few thousand
tokens at 32k, never less than the requests' share of the summary's target), and fits it by
water-filling: every request whose block costs at most a level `T` is shown whole, and the
longer ones are shortened to about `T` tokens each, `T` as high as the budget allows. So every
request that fits an equal share of the budget is shown word for word, and only the longest
(a pasted log, a long specification) are shortened.

A shortened request always keeps its first sentence or line whole (`head`), and at least its
first `REQUEST_HEAD` characters (what `merge` matches a request by when it was parsed back from
an earlier summary); then as much more of its beginning as fits, and its end, around the
elision the parser reads back (`[… N characters left out …]`). Only a first sentence longer
than `HEAD_CHARS` (a paste with no sentence end, a one-line JSON document) is cut, at that
length.

The section's cost is counted as `_summary_fit` counts a section: its heading, then each
entry and its line break. It stays within its budget unless the requests' shortest forms
alone exceed it (every request at its first sentence, and still too many): requests are never
dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sessionstore.projections._summary import RequestEntry
from sessionstore.projections._summary_fit import Count

REQUEST_HEAD = 80
"""The least of a request's beginning a shortened one shows: `merge` matches requests by it."""
HEAD_CHARS = 500
"""A first sentence or line longer than this is not a sentence but a paste: it is cut here."""
REQUESTS_OF_WINDOW = 0.10
"""The requests' budget, as a share of the usable window: 2,790 tokens for a 32,000-token
window (27,904 usable with the default output reserve), 5,990 for 64,000, 12,390 for 128,000.
pi's recorded sessions hold 2-3k tokens of requests over hundreds of model calls (58 and 79
requests): at 32k all but the few longest stay whole (docs/benchmarks.md)."""
SUMMARY_OF_REPLACED = 0.75
"""When a summary replaces little besides the user's long messages, the requests are shortened
so that the whole summary is at most this share of what it replaces (a compaction must save
`minimum_compaction_saving`, a fifth by default), but never below what the previous summary
among the replaced messages already gave them: requests it showed whole are not cut to let a
compaction through that replaces little else (it saves too little, and the session replaces
more instead). In an agent's session tool outputs make what is replaced many times the
requests (a compaction at 32k replaces some 15,000 tokens), and this bound does not bite."""

_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
_ELIDED = re.compile(r" \[… ([\d,]+) characters left out …\] ")


def elided(count: int) -> str:
    return f" [… {count:,} characters left out …] "


def block(label: str, text: str, length: int) -> str:
    """An entry whose text may hold anything: its header says its length (and the length
    shown, when shortened), so the parser reads it back exactly."""
    shortened = f", shortened to {len(text):,}" if len(text) != length else ""
    return f"{label} ({length:,} characters{shortened}):\n{text}"


def requests_budget(target: int, share: float, usable: int | None) -> int:
    """The tokens the requests may take in a summary of `target` tokens in which their share
    is `share`: a tenth of the `usable` window (`REQUESTS_OF_WINDOW`), never less than their
    share of the target; without a known window, the target itself."""
    least = int(target * share)
    return max(least, target if usable is None else int(usable * REQUESTS_OF_WINDOW))


def replaced_room(replacing: int, rest: int, carried: int) -> int:
    """The tokens the requests may take in a summary that replaces `replacing` tokens and
    whose other sections take `rest`: see `SUMMARY_OF_REPLACED`."""
    return max(carried, int(replacing * SUMMARY_OF_REPLACED) - rest)


def head(text: str) -> int:
    """The length of `text`'s first sentence (its full stop included) or line (its line break
    not), leading blanks included: at least `REQUEST_HEAD` characters, at most `HEAD_CHARS`
    past its first character, and never more than `text`."""
    start = len(text) - len(text.lstrip())
    found = _SENTENCE_END.search(text, start)
    end = len(text) if found is None else found.start() if found.group() == "\n" else found.end()
    end = min(end, start + HEAD_CHARS)
    return min(max(end, REQUEST_HEAD), len(text))


class _Request:
    """One request's forms: whole (as given: whole, or shortened by an earlier summary), and
    shortened to a width in characters around its elision."""

    def __init__(self, label: str, entry: RequestEntry) -> None:
        self.label = label
        self.text = entry.text
        self.length = entry.length
        found = _ELIDED.search(entry.text) if len(entry.text) != entry.length else None
        if found is None:
            self.start, self.end = entry.text, entry.text
            self.length = len(entry.text)
        else:  # shortened earlier: its beginning and end are the original's
            self.start, self.end = entry.text[: found.start()], entry.text[found.end() :]
        self.head = head(self.start)

    def block(self, text: str) -> str:
        return block(self.label, text, self.length)

    def shortened(self, width: int) -> str | None:
        """The request cut to about `width` characters: two thirds (and never less than its
        `head`) from its beginning, the rest from its end. `None` when that would not be
        shorter than what it is now."""
        keep_start = min(max(width * 2 // 3, self.head), len(self.start))
        keep_end = min(max(width - keep_start, 0), len(self.end))
        left_out = self.length - keep_start - keep_end
        if left_out <= len(elided(left_out)):
            return None
        text = self.start[:keep_start] + elided(left_out) + self.end[len(self.end) - keep_end :]
        return text if len(text) < len(self.text) else None


def fit_requests(
    labels: Sequence[str], requests: Sequence[RequestEntry], budget: int, heading: str, count: Count
) -> list[str]:
    """Each request's block (its label, then its text whole or shortened), fitted so that
    `heading` and the blocks cost at most `budget` tokens: see the module."""
    found = [_Request(label, entry) for label, entry in zip(labels, requests, strict=True)]
    if not found:
        return []
    whole = [r.block(r.text) for r in found]
    costs = [count(text) + 1 for text in whole]
    available = budget - count(heading) - 2
    if sum(costs) <= available:
        return whole
    least_forms = [r.shortened(0) for r in found]
    least = [
        cost if form is None else min(cost, count(r.block(form)) + 1)
        for r, form, cost in zip(found, least_forms, costs, strict=True)
    ]

    def spent(level: int) -> int:
        return sum(c if c <= level else max(m, level) for c, m in zip(costs, least, strict=True))

    low, high = 0, max(costs)  # the highest level whose spending fits (0 when none does)
    while low < high:
        middle = (low + high + 1) // 2
        if spent(middle) <= available:
            low = middle
        else:
            high = middle - 1
    blocks = []
    for r, text, cost, floor, form in zip(found, whole, costs, least, least_forms, strict=True):
        if cost <= max(low, floor) or form is None:
            blocks.append(text)  # whole: within the level, or no shorter form is shorter
        elif low <= floor:
            blocks.append(r.block(form))  # at its shortest
        else:
            blocks.append(_longest(r, low, count, cost, form))
    return blocks


def _longest(request: _Request, tokens: int, count: Count, whole: int, least: str) -> str:
    """The block of `request` shortened to about as little as fits in `tokens` (its line
    break included), `whole` being what it costs whole; `least`, its shortest text, when no
    longer one fits. The first width tried is the one the request's own characters per token
    give, then a tenth less (or in proportion to the overshoot) at each try: a few counts, not
    a search, as a long session holds hundreds of requests."""
    width = len(request.text) * tokens // whole
    for _ in range(8):
        form = request.shortened(width)
        cost = None if form is None else count(request.block(form)) + 1
        if form is not None and cost is not None and cost <= tokens:
            return request.block(form)
        shrunk = width * 9 // 10
        width = shrunk if cost is None else min(shrunk, width * tokens // cost)
        if width <= len(least):
            break
    return request.block(least)
