"""A tool's output as `Session.append_tool_result` takes it: text, or content blocks.

Tools return more than text (a screenshot, a rendered chart), and every provider takes images
in a tool result, each in its own shape. A list of blocks is read into sessionstore's parts
(`TextPart`, an image `FilePart`), whatever shape it came in:

- text: `TextPart`, `{"type": "text", "text": ...}` (Anthropic, Chat Completions),
  `{"type": "input_text", "text": ...}` (Responses);
- images: an image `FilePart`, Anthropic's `{"type": "image", "source": {"type": "base64",
  "media_type": ..., "data": ...}}` or `{"source": {"type": "url", "url": ...}}`, Chat
  Completions' `{"type": "image_url", "image_url": {"url": ...}}`, the Responses API's
  `{"type": "input_image", "image_url": ...}`; a `data:` URL is kept as its media type and
  base64 data, so every render can send it in its own shape.

Only the content is kept: keys about how to send it (`cache_control`, `detail`) are not, since
each render decides that for its API. A block of another kind (a document, a file id) is an
`InvalidArgument`: no provider's tool result takes it everywhere.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from sessionstore.events import FilePart, InvalidArgument, TextPart, brief, described

ResultBlock = TextPart | FilePart
BLOCK_SEPARATOR = "\n\n"
"""Between the texts of a result's text blocks in its `output`: the text truncation and pruning
act on, and the one view of it a render shows when it shows only text."""

INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every provider takes as inline data (Anthropic takes no other)."""

_MUST = "output must be a str or a list of content blocks (text and images)"
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+);base64,(.*)", re.DOTALL)


def result_content(output: object) -> tuple[str, tuple[ResultBlock, ...] | None]:
    """`(text, blocks)` of a tool's output: a str is its own text, with no blocks; a list of
    blocks gives the text of its text blocks (joined by `BLOCK_SEPARATOR`) and the blocks."""
    if isinstance(output, str):
        return output, None
    if isinstance(output, bytes | Mapping | BaseModel) or not isinstance(output, Sequence):
        raise InvalidArgument(f"{_MUST}, got {described(output)}")
    blocks = tuple(_block(n, block) for n, block in enumerate(output))
    text = BLOCK_SEPARATOR.join(b.text for b in blocks if isinstance(b, TextPart))
    return text, blocks


def _block(n: int, block: object) -> ResultBlock:
    where = f"output[{n}]"
    if isinstance(block, TextPart):
        return block
    if isinstance(block, FilePart):
        if not block.media_type.startswith("image/"):
            raise InvalidArgument(f"{where}: a tool result takes images, not {block.media_type}")
        _check_inline(where, block.media_type, block.data)
        return block
    if isinstance(block, BaseModel):  # an SDK's block object
        block = block.model_dump(mode="json", exclude_none=True)
    if not isinstance(block, Mapping):
        raise InvalidArgument(f"{_MUST}; {where} is {described(block)}")
    kind = block.get("type")
    if kind in ("text", "input_text"):
        return TextPart(text=_text(block, "text", where))
    if kind == "image":
        return _anthropic_image(block, where)
    if kind == "image_url":
        image_url = block.get("image_url")
        if not isinstance(image_url, Mapping):
            raise InvalidArgument(f"{where}: an image_url block needs image_url.url")
        return _image_at(_text(image_url, "url", f"{where}.image_url"), where)
    if kind == "input_image":
        return _image_at(_text(block, "image_url", where), where)
    raise InvalidArgument(
        f"{where}: a tool result block must be text or an image, got {brief(dict(block))}"
    )


def _text(block: Mapping[Any, Any], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise InvalidArgument(f"{where}: {key!r} must be a str, got {described(value)}")
    return value


def _anthropic_image(block: Mapping[Any, Any], where: str) -> FilePart:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise InvalidArgument(f"{where}: an image block needs a source")
    if source.get("type") == "base64":
        media_type = _text(source, "media_type", f"{where}.source")
        return _image(where, media_type=media_type, data=_text(source, "data", f"{where}.source"))
    if source.get("type") == "url":
        return _image_at(_text(source, "url", f"{where}.source"), where)
    raise InvalidArgument(
        f"{where}: an image's source must be base64 data or a URL, got {brief(dict(source))}"
    )


def _image_at(url: str, where: str) -> FilePart:
    """An image by URL; a `data:` URL becomes its media type and data."""
    if url.startswith("data:"):
        inline = _DATA_URL.fullmatch(url)
        if inline is None:
            raise InvalidArgument(f"{where}: a data URL must be data:<media type>;base64,<data>")
        return _image(where, media_type=inline[1], data=inline[2])
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    media_type = guessed if guessed is not None and guessed.startswith("image/") else "image/*"
    return _image(where, media_type=media_type, url=url)


def _image(where: str, **fields: str) -> FilePart:
    empty = [key for key, value in fields.items() if not value]
    if empty:
        raise InvalidArgument(f"{where}: an image's {empty[0]} is empty")
    if not fields["media_type"].startswith("image/"):
        raise InvalidArgument(f"{where}: a tool result takes images, not {fields['media_type']}")
    _check_inline(where, fields["media_type"], fields.get("data"))
    return FilePart(**fields)


def _check_inline(where: str, media_type: str, data: str | None) -> None:
    if data is not None and media_type not in INLINE_IMAGE_TYPES:
        raise InvalidArgument(
            f"{where}: an image sent as data must be PNG, JPEG, GIF or WebP (what every "
            f"provider takes), not {media_type}"
        )
