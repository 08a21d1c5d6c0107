"""Full-text search, the part with no I/O: which texts of an event are searchable, how text
becomes the words an index keeps, how a query becomes the phrases it looks for, and the excerpt
a hit shows.

One tokenization serves every backend, so a query finds the same events on SQLite (FTS5), on
PostgreSQL (`tsvector`) and in memory: text is folded here (compatibility decomposition, Latin
diacritics dropped, case folded) and cut into words of letters and digits; everything else
(punctuation, `_`, spaces) separates words. The index receives those words joined by spaces,
and each backend's own tokenizer only splits them again where they are already split. So
`alembic.ini` is the words `alembic ini`, `session_id` is `session id`, and `Café` is `cafe`.
No stemming and no stop words: a word matches the same word, which is what a search of code,
commands and logs wants. A word over `MAX_WORD` characters (a base64 blob, a minified line) is
not indexed.

A query is words, each of which must occur (in one text of one event); words in double quotes,
and a word that folding splits (`session_id`), must occur as a phrase, next to each other and
in that order. Nothing else in a query is syntax: `OR`, `-x`, `*`, `:` are plain words or
separators, so any text typed or pasted searches as it reads.

A text is indexed in chunks of about `CHUNK` characters (cut at a space where there is one),
its first `MAX_INDEXED` characters only; a phrase that spans two chunks is not found.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sessionstore.events._errors import InvalidSearchQuery

MAX_WORD = 100
"""Characters of the longest word indexed: longer runs are data, not words."""
CHUNK = 32_000
"""Characters of text per index row (PostgreSQL keeps word positions up to 16,383 per row)."""
MAX_INDEXED = 1_000_000
"""Characters of one text that are indexed: its beginning, however long it is."""
MAX_QUERY_WORDS = 32
"""Words a query may hold."""

SEARCHED_EVENTS = {"MessageAppended": "message", "ContextCompacted": "summary"}
"""The events whose texts are indexed, and where their message is: each appended message, and
each compaction's summary. An undo's restored copies are the originals again (indexed once,
where they were appended); records are providers' and frameworks' own shapes, not text."""
REDACTION = "ContentRedacted"

_WORD = re.compile(r"[^\W_]+")
_ASCII_SEPARATORS = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isascii() and chr(c).isalnum())}
)
"""Every ASCII character but a letter or a digit, as a space: lower-cased ASCII text so
translated and split gives its words at C speed (a regular expression took twice as long)."""
_LATIN_MARKS = re.compile(r"[\u0300-\u036f]+")
_RUN = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f])*")
"""A run of word characters in unfolded text, with the diacritics folding drops."""
_QUOTED = re.compile(r'"([^"]*)"?|([^\s"]+)')


class SearchText(NamedTuple):
    """One searchable text of an event: the part it is in (its index in the message and its
    id), what kind of text it is, the message's role, and the digest of the body it is read
    from (`None` when it is inline, written before content was a body): a redaction that
    deletes that body takes the text out of the index."""

    part: int
    part_id: str | None
    kind: str
    """`text`, `tool_call` (its name and arguments), `tool_result` (the full output, the
    original of a truncated or pruned one), or `summary` (a compaction's)."""
    role: str | None
    digest: str | None
    text: str


class SearchEntry(NamedTuple):
    """One row of the search index: a chunk of a searchable text, as the words it holds."""

    seq: int
    part: int
    chunk: int
    role: str | None
    event_type: str
    digest: str | None
    recorded_at: datetime
    terms: str
    """The chunk's words, folded, joined by single spaces."""


Phrases = tuple[tuple[str, ...], ...]
"""A parsed query: phrases (one word or more, in order), every one of which must occur."""


def words(text: str) -> list[str]:
    """The words of `text` as the index keeps them (see the module docstring). ASCII text,
    most of what agents read and write, takes the fast path: lower-cased, punctuation made
    spaces, split (about 50 ms a megabyte here)."""
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    folded = _LATIN_MARKS.sub("", unicodedata.normalize("NFKD", text)).casefold()
    return _WORD.findall(unicodedata.normalize("NFKD", folded))


def chunks(text: str) -> Iterator[tuple[int, str]]:
    """(start, chunk) of the indexed beginning of `text`, each about `CHUNK` characters, cut
    after a whitespace when one is in its second half."""
    end_of_indexed = min(len(text), MAX_INDEXED)
    start = 0
    while start < end_of_indexed:
        end = min(start + CHUNK, end_of_indexed)
        if end < end_of_indexed:
            cut = max(text.rfind(" ", start + CHUNK // 2, end), text.rfind("\n", start, end))
            if cut > start + CHUNK // 2:
                end = cut + 1
        yield start, text[start:end]
        start = end


def indexed_terms(text: str) -> str:
    """The words of one chunk as an index row holds them."""
    found = words(text)
    if found and max(map(len, found)) > MAX_WORD:
        found = [word for word in found if len(word) <= MAX_WORD]
    return " ".join(found)


def searchable_texts(
    event_type: str, data: Mapping[str, Any], texts: Mapping[str, str]
) -> list[SearchText]:
    """The searchable texts of an event as stored: `data` is its payload's JSON object (with
    references to bodies, or content inline), `texts` the bodies' texts by digest. A text
    whose body is not in `texts` (a redaction deleted it) is left out."""
    where = SEARCHED_EVENTS.get(event_type)
    message = data.get(where) if where is not None else None
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        return []
    role = message.get("role") if isinstance(message.get("role"), str) else None
    found = []
    for index, part in enumerate(message["parts"]):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text, digest = _text_of(part.get("text"), texts)
        elif kind == "tool_call":
            text, digest = _text_of(part.get("arguments"), texts)
            name = part.get("name")
            if text is not None and isinstance(name, str):
                text = f"{name} {text}"
        elif kind == "tool_result":
            text, digest = _text_of(part.get("output"), texts)
        else:
            continue
        if not text:
            continue
        part_id = part.get("id") if isinstance(part.get("id"), str) else None
        shown_kind = "summary" if where == "summary" else str(kind)
        found.append(SearchText(index, part_id, shown_kind, role, digest, text))
    return found


def _text_of(value: object, texts: Mapping[str, str]) -> tuple[str | None, str | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and isinstance(digest := value.get("sha256"), str):
        return texts.get(digest), digest
    return None, None


def search_entries(
    events: Iterable[tuple[int, datetime, str, Mapping[str, Any]]], texts: Mapping[str, str]
) -> tuple[list[SearchEntry], list[str]]:
    """The index rows of events written together ((seq, recorded_at, type, payload JSON) in
    seq order), and the digests whose rows their redactions delete from the index. A text
    redacted within the same write is not indexed at all."""
    entries: list[SearchEntry] = []
    unindexed: dict[str, None] = {}
    for seq, recorded_at, event_type, data in events:
        if event_type == REDACTION:
            named = {d for d in data.get("digests") or () if isinstance(d, str)}
            entries = [entry for entry in entries if entry.digest not in named]
            unindexed.update(dict.fromkeys(sorted(named)))
            continue
        for found in searchable_texts(event_type, data, texts):
            for number, (_, chunk) in enumerate(chunks(found.text)):
                terms = indexed_terms(chunk)
                if terms:
                    entry = SearchEntry(
                        seq, found.part, number, found.role, event_type, found.digest,
                        recorded_at, terms,
                    )  # fmt: skip
                    entries.append(entry)
    return entries, list(unindexed)


def parse_query(query: str) -> Phrases:
    """The phrases a query looks for (see the module docstring); `InvalidSearchQuery` when it
    holds no word, or more than `MAX_QUERY_WORDS`."""
    phrases: dict[tuple[str, ...], None] = {}
    for quoted, bare in _QUOTED.findall(query):
        found = tuple(words(quoted or bare))
        if found:
            phrases[found] = None
    count = sum(map(len, phrases))
    if not phrases:
        shown = query if len(query) <= 40 else query[:37] + "..."
        raise InvalidSearchQuery(
            f"the query {shown!r} holds no word to search for (words are letters and digits; "
            "punctuation is not indexed)"
        )
    if count > MAX_QUERY_WORDS:
        raise InvalidSearchQuery(f"a query holds at most {MAX_QUERY_WORDS} words, this one {count}")
    return tuple(phrases)


def holds_phrases(terms: Sequence[str], phrases: Phrases) -> bool:
    """Whether the words `terms` hold every phrase (each as consecutive words, in order)."""
    present = set(terms)
    for phrase in phrases:
        if not present.issuperset(phrase):
            return False
        if len(phrase) > 1 and not _phrase_at(terms, phrase):
            return False
    return True


def _phrase_at(terms: Sequence[str], phrase: tuple[str, ...]) -> bool:
    size = len(phrase)
    return any(
        tuple(terms[i : i + size]) == phrase for i, term in enumerate(terms) if term == phrase[0]
    )


EXCERPT_BEFORE = 60
EXCERPT_LENGTH = 200
"""Characters an excerpt shows before its first hit, and in all (about: spaces are squeezed)."""


def excerpt(text: str, phrases: Phrases) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About `EXCERPT_LENGTH` characters of `text` around the first place a phrase occurs,
    with runs of whitespace squeezed to one space and `…` where it is cut, and the (start,
    end) offsets in it of every phrase occurrence it shows. Its beginning when none occurs."""
    first = min((span[0] for span in _occurrences(text, phrases, first_only=True)), default=0)
    start = max(0, first - EXCERPT_BEFORE)
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space != -1 else start
    end = min(len(text), start + EXCERPT_LENGTH)
    spans = sorted(_occurrences(text, phrases, start, end))
    shown, offsets = _squeezed(text, start, end)
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    marks: list[tuple[int, int]] = []
    for low, high in _merged(spans):
        if low >= start and high <= end:
            a, b = offsets[low - start], offsets[high - start]
            marks.append((a + len(prefix), b + len(prefix)))
    body = shown.strip()
    lead = len(shown) - len(shown.lstrip())
    marks = [(a - lead, b - lead) for a, b in marks if b - lead <= len(prefix) + len(body)]
    return prefix + body + suffix, tuple(marks)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans, those that overlap or touch as one."""
    merged: list[tuple[int, int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def holds_all(text: str, phrases: Phrases) -> bool:
    """Whether `text` holds every one of `phrases`, as the index finds them."""
    return all(
        next(_occurrences(text, (phrase,), first_only=True), None) is not None for phrase in phrases
    )


def _occurrences(
    text: str, phrases: Phrases, low: int = 0, high: int | None = None, *, first_only: bool = False
) -> Iterator[tuple[int, int]]:
    """(start, end) of each occurrence of each phrase that lies within `text[low:high]` (with
    `first_only`, each phrase's first occurrence). ASCII text is searched as it is,
    lower-cased (its offsets are the text's); other text word by word, each run of word
    characters folded as the index folds it."""
    high = len(text) if high is None else high
    if text.isascii():
        lowered = text.lower()
        for phrase in phrases:
            between = "[^a-z0-9]+".join(map(re.escape, phrase))
            pattern = re.compile(f"(?<![a-z0-9]){between}(?![a-z0-9])")
            if first_only:
                match = pattern.search(lowered, low, high)
                if match is not None:
                    yield match.span()
                continue
            yield from (match.span() for match in pattern.finditer(lowered, low, high))
        return
    tokens = [
        (match.start(), match.end(), word)
        for match in _RUN.finditer(text, low, high)
        for word in words(match.group())
    ]
    terms = [word for _, _, word in tokens]
    for phrase in phrases:
        size = len(phrase)
        for i, term in enumerate(terms):
            if term == phrase[0] and tuple(terms[i : i + size]) == phrase:
                yield tokens[i][0], tokens[i + size - 1][1]
                if first_only:
                    break


def _squeezed(text: str, start: int, end: int) -> tuple[str, list[int]]:
    """`text[start:end]` with whitespace runs as one space, and where each of its offsets
    (and its end) lands in that."""
    out: list[str] = []
    offsets: list[int] = []
    spaced = False
    for char in text[start:end]:
        offsets.append(len(out))
        if char.isspace():
            if not spaced:
                out.append(" ")
            spaced = True
        else:
            out.append(char)
            spaced = False
    offsets.append(len(out))
    return "".join(out), offsets


def marked(excerpt: str, matches: Sequence[tuple[int, int]], open: str, close: str) -> str:
    """`excerpt` with each match between `open` and `close`."""
    pieces, at = [], 0
    for low, high in matches:
        pieces += [excerpt[at:low], open, excerpt[low:high], close]
        at = high
    return "".join([*pieces, excerpt[at:]])
