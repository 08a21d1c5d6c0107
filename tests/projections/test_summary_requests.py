"""The user's requests in a summary: word for word within their own budget, a shortened one
with its first sentence whole, and the section within its budget, for any requests and any
budget (property-based), and on the shapes recorded sessions have."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore.context._tokens import count
from sessionstore.projections._summary import RequestEntry, StructuredSummary
from sessionstore.projections._summary_requests import (
    HEAD_CHARS,
    REQUEST_HEAD,
    block,
    elided,
    fit_requests,
    head,
    requests_budget,
)
from sessionstore.projections._summary_text import TASK, parse_summary, render_summary


def tokens(text: str) -> int:
    return count(text, "cl100k_base")


def section_tokens(blocks: list[str]) -> int:
    """The section's cost as the fitter counts it: heading, blank line, each block and its
    line break."""
    return tokens(TASK) + 2 + sum(tokens(b) + 1 for b in blocks)


def labels(n: int) -> list[str]:
    return [f"Request {k}, seq {10 * k}" for k in range(1, n + 1)]


def entries(texts: list[str]) -> list[RequestEntry]:
    return [RequestEntry(10 * k, text, len(text)) for k, text in enumerate(texts, 1)]


_ELISION = re.compile(r" \[… ([\d,]+) characters left out …\] ")


def body(text: str) -> str:
    """The request text of a block (what follows its header line)."""
    return text.split("\n", 1)[1]


def least_cost(label: str, text: str) -> int:
    """What a request costs at its shortest: its first sentence and the elision, unless that
    is no shorter than the whole."""
    whole = tokens(block(label, text, len(text))) + 1
    kept = text[: head(text)]
    left = len(text) - len(kept)
    if left <= len(elided(left)):
        return whole
    return min(whole, tokens(block(label, kept + elided(left), len(text))) + 1)


# the first sentence


def test_the_head_is_the_first_sentence_or_line_at_least_80_characters() -> None:
    sentence = (
        "Make the parser accept ISO week dates, like 2024-W05-3, and keep the old API as is. "
    )
    assert head(sentence + "Then add tests.") == len(sentence) - 1
    assert head("Fix it.\nThen " + "x" * 200) == REQUEST_HEAD
    line = "  read @src/main.ts and @src/tui/ and tell me what the interactive mode does for us"
    assert head(line + "\n" + "more " * 50) == len(line)
    assert head("y" * 3000) == HEAD_CHARS  # a paste with no sentence end: cut
    assert head("short") == 5


# fitting, on known requests


def test_requests_that_fit_are_all_word_for_word() -> None:
    texts = ["Fix the parser.", "Now  keep\tthe old API!\n\nAnd the tests.", "x" * 900]
    blocks = fit_requests(labels(3), entries(texts), 2_000, TASK, tokens)
    assert blocks == [
        block(label, text, len(text)) for label, text in zip(labels(3), texts, strict=True)
    ]


def test_only_the_request_too_long_for_its_share_is_shortened_and_keeps_its_first_sentence() -> (
    None
):
    short = [
        f"Request number {n}: rename the field `total` to `amount` in module {n}."
        for n in range(10)
    ]
    paste = (
        "Here is the failing CI log, find out why the build breaks on ARM only.\n"
        + "".join(f"[{n:05d}] compiling crate_{n} v0.{n}.0 ... ok\n" for n in range(2_000))
        + "What do you think?"
    )
    texts = [*short[:5], paste, *short[5:]]
    blocks = fit_requests(labels(11), entries(texts), 1_500, TASK, tokens)
    for n in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10):
        assert body(blocks[n]) == texts[n]
    shown = body(blocks[5])
    first = "Here is the failing CI log, find out why the build breaks on ARM only."
    assert shown.startswith(first) and shown.endswith("What do you think?")
    assert blocks[5].startswith(f"Request 6, seq 60 ({len(paste):,} characters, shortened to ")
    assert section_tokens(blocks) <= 1_500
    assert section_tokens(blocks) > 1_300  # and it uses what the short ones leave


def test_equally_long_requests_are_shortened_equally_not_the_oldest_first() -> None:
    texts = [f"Task {n}: do the thing number {n} now. " + "word " * 400 for n in range(6)]
    blocks = fit_requests(labels(6), entries(texts), 900, TASK, tokens)
    shown = {len(body(b)) for b in blocks}
    assert len(shown) == 1 and shown.pop() < len(texts[0])
    for text, b in zip(texts, blocks, strict=True):
        assert body(b).startswith(text[: head(text)]) and body(b).endswith("word ")
    assert section_tokens(blocks) <= 900


def test_when_even_first_sentences_do_not_fit_each_request_is_its_first_sentence() -> None:
    texts = [f"Request {n} begins with a sentence of its own. " + "z" * 500 for n in range(30)]
    blocks = fit_requests(labels(30), entries(texts), 100, TASK, tokens)
    for label, text, b in zip(labels(30), texts, blocks, strict=True):
        kept = text[: head(text)]
        assert kept == text[:REQUEST_HEAD]  # its first sentence, and to 80 characters
        assert body(b).startswith(kept + " [… ") and tokens(b) + 1 == least_cost(label, text)


def test_a_request_shortened_by_an_earlier_summary_is_not_cut_into_its_first_sentence() -> None:
    whole = "Keep the old code around for reference. " + "q" * 3_000 + " the end"
    earlier = whole[:200] + elided(len(whole) - 260) + whole[-60:]
    entry = RequestEntry(7, earlier, len(whole))
    [again] = fit_requests(["Request 1, seq 7"], [entry], 120, TASK, tokens)
    assert body(again).startswith(whole[:REQUEST_HEAD]) and body(again).endswith("the end")
    found = _ELISION.search(body(again))
    assert found is not None
    assert len(body(again)) - len(found.group(0)) + int(found.group(1).replace(",", "")) == len(
        whole
    )
    [same] = fit_requests(["Request 1, seq 7"], [entry], 2_000, TASK, tokens)
    assert body(same) == earlier  # room enough: shown as the earlier summary had it


# the budget


def test_the_requests_budget_is_a_tenth_of_the_usable_window_never_under_their_share() -> None:
    assert requests_budget(2_000, 0.3, 27_904) == 2_790  # a 32k window
    assert requests_budget(2_000, 0.3, 61_440) == 6_144  # 64k
    assert requests_budget(2_000, 0.3, 4_096) == 600  # 8k: their share of the target
    assert requests_budget(2_000, 0.3, None) == 2_000  # unknown: the target itself


def test_requests_beyond_their_share_lengthen_the_summary_not_squeeze_the_rest() -> None:
    requests = tuple(RequestEntry(n, f"Request {n}: " + "detail " * 60, 0) for n in range(12))
    requests = tuple(RequestEntry(r.seq, r.text, len(r.text)) for r in requests)
    summary = StructuredSummary(through_seq=99, requests=requests, state="All done. " * 30)
    text = render_summary(summary, 1_000, tokens, usable=27_904)
    parsed = parse_summary(text)
    assert parsed is not None and parsed.requests == requests  # every one word for word
    assert parsed.state == summary.state  # the state still has its share
    assert tokens(text) > 1_000


# the property


_WORD = st.text(alphabet="abcdefgh", min_size=1, max_size=12)
_SEPARATOR = st.sampled_from([" ", " ", " ", ". ", "! ", "\n", ", ", "  "])
_REQUEST = st.lists(st.tuples(_WORD, _SEPARATOR), min_size=1, max_size=400).map(
    lambda pairs: "".join(word + sep for word, sep in pairs).strip() or "x"
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_REQUEST, min_size=1, max_size=20), budget=st.integers(20, 4_000))
def test_any_requests_fit_any_budget_word_for_word_or_from_their_first_sentence(
    texts: list[str], budget: int
) -> None:
    n = len(texts)
    blocks = fit_requests(labels(n), entries(texts), budget, TASK, tokens)
    assert len(blocks) == n
    available = budget - tokens(TASK) - 2
    share = available // n
    whole_costs = [
        tokens(block(label, t, len(t))) + 1 for label, t in zip(labels(n), texts, strict=True)
    ]
    least_costs = [least_cost(label, text) for label, text in zip(labels(n), texts, strict=True)]
    for label, text, b in zip(labels(n), texts, blocks, strict=True):
        shown = body(b)
        assert b.startswith(f"{label} ({len(text):,} characters")
        if shown == text:
            continue
        # shortened: the first sentence whole, then the elision, then the end
        kept = text[: head(text)]
        assert shown.startswith(kept) and shown[:REQUEST_HEAD] == text[:REQUEST_HEAD]
        found = _ELISION.search(shown, len(kept) - 1)
        assert found is not None
        start, end = shown[: found.start()], shown[found.end() :]
        assert text.startswith(start) and text.endswith(end)
        assert len(start) + int(found.group(1).replace(",", "")) + len(end) == len(text)
    if sum(whole_costs) <= available:
        assert all(body(b) == t for b, t in zip(blocks, texts, strict=True))
    if sum(least_costs) <= available:  # the shortest forms fit: so does the section
        assert section_tokens(blocks) <= budget
    if all(cost <= share for cost in least_costs):
        for text, b, cost in zip(texts, blocks, whole_costs, strict=True):
            if cost <= share:  # fits its share: word for word
                assert body(b) == text
    summary = StructuredSummary(requests=tuple(entries(texts)))
    parsed = parse_summary(render_summary(summary, budget, tokens))
    assert parsed is not None
    for entry, text in zip(parsed.requests, texts, strict=True):
        assert entry.length == len(text) and entry.text[:REQUEST_HEAD] == text[:REQUEST_HEAD]
