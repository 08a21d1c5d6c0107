"""One deterministic, realistic message mix that every store in the comparison is fed.

An agent loop's session is turns of: a short user message, then a few steps of an assistant
message calling one tool (sometimes with a sentence of text) and that tool's output, then a
closing assistant answer. Tool outputs are 200 B to 60 KB, log-uniformly (most are small, a
few are whole files or long logs), cut from a seeded corpus of code-like and log-like lines so
that tokenizers and compressors see text, not `"x" * n`. The same seed gives the same messages
in every process, so each store stores exactly the same bytes.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

SEED = 7
MIN_OUTPUT = 200
MAX_OUTPUT = 60_000

_WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "None",
    "True",
    "False",
    "for",
    "in",
    "if",
    "else",
    "elif",
    "while",
    "try",
    "except",
    "raise",
    "with",
    "as",
    "from",
    "lambda",
    "yield",
    "assert",
    "pass",
    "break",
    "continue",
    "async",
    "await",
    "value",
    "result",
    "config",
    "session",
    "store",
    "event",
    "message",
    "context",
    "token",
    "append",
    "resume",
    "replay",
    "snapshot",
    "fold",
    "error",
    "warning",
    "info",
    "debug",
    "test",
    "failed",
    "passed",
    "assert",
    "expected",
    "actual",
    "line",
    "file",
    "path",
    "module",
    "function",
    "args",
    "kwargs",
    "data",
    "items",
    "key",
    "index",
    "count",
    "total",
    "size",
    "bytes",
    "offset",
]
_TOOLS = ("read", "bash", "grep", "edit", "ls")


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Msg:
    """One message as an agent loop appends it: exactly one store call per `Msg`."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_call: ToolUse | None = None
    call_id: str = ""
    tool_name: str = ""

    @property
    def size(self) -> int:
        """Bytes of content (text or output plus the call's arguments)."""
        extra = len(json.dumps(self.tool_call.input)) if self.tool_call else 0
        return len(self.text.encode()) + extra


def _corpus(rng: random.Random, size: int = 400_000) -> str:
    """Lines that look like code and logs, about 20 to 110 characters each."""
    lines: list[str] = []
    total = 0
    while total < size:
        width = rng.randint(3, 16)
        indent = " " * (4 * rng.randint(0, 3))
        words = " ".join(rng.choice(_WORDS) for _ in range(width))
        if rng.random() < 0.3:
            words = f"{rng.randint(1, 9999):>5}: {words} = {rng.randint(0, 10**6)}"
        line = indent + words + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def messages(count: int, seed: int = SEED) -> Iterator[Msg]:
    """The first `count` messages of the mix (a turn may be cut at the end)."""
    rng = random.Random(seed)
    corpus = _corpus(rng)
    doubled = corpus + corpus
    produced = 0
    turn = 0
    call = 0

    def sentence(low: int, high: int) -> str:
        start = rng.randrange(len(corpus))
        return " ".join(doubled[start : start + rng.randint(low, high)].split())

    while produced < count:
        turn += 1
        yield Msg(role="user", text=f"Turn {turn}: " + sentence(20, 300))
        produced += 1
        for _ in range(rng.randint(1, 6)):
            if produced >= count:
                return
            call += 1
            name = rng.choice(_TOOLS)
            arguments: dict[str, Any] = (
                {"command": f"pytest -q tests/test_{call % 97}.py"}
                if name == "bash"
                else {"path": f"src/pkg/module_{call % 211}.py", "pattern": sentence(5, 30)}
            )
            use = ToolUse(id=f"call_{call:06d}", name=name, input=arguments)
            text = sentence(30, 200) if rng.random() < 0.3 else ""
            yield Msg(role="assistant", text=text, tool_call=use)
            produced += 1
            if produced >= count:
                return
            size = int(math.exp(rng.uniform(math.log(MIN_OUTPUT), math.log(MAX_OUTPUT))))
            start = rng.randrange(len(corpus))
            yield Msg(
                role="tool", text=doubled[start : start + size], call_id=use.id, tool_name=name
            )
            produced += 1
        if produced >= count:
            return
        yield Msg(role="assistant", text=sentence(100, 1_500))
        produced += 1


def long_output(size: int, seed: int = SEED) -> str:
    """`size` bytes (ASCII) of numbered log lines that never repeat, as a whole build or test
    log a tool might return: random words, not a loop over one corpus, so a compressor with a
    long window (zstd) cannot shrink it to the corpus and flatter a store that compresses."""
    rng = random.Random(seed)
    chunks: list[str] = []
    total = 0
    line = 0
    while total < size:
        words = rng.choices(_WORDS, k=12 * 10_000)
        lines = []
        for start in range(0, len(words), 12):
            line += 1
            lines.append(f"{line:>8}: " + " ".join(words[start : start + 12]) + "\n")
        chunk = "".join(lines)
        chunks.append(chunk)
        total += len(chunk)
    return "".join(chunks)[:size]


def describe(sample: int = 10_000) -> dict[str, float]:
    """Counts and sizes of the first `sample` messages, for the report."""
    msgs = list(messages(sample))
    tools = [m for m in msgs if m.role == "tool"]
    sizes = sorted(len(m.text.encode()) for m in tools)
    return {
        "messages": len(msgs),
        "user": sum(m.role == "user" for m in msgs),
        "assistant": sum(m.role == "assistant" for m in msgs),
        "tool": len(tools),
        "tool_output_median_bytes": sizes[len(sizes) // 2],
        "tool_output_max_bytes": sizes[-1],
        "tool_outputs_over_50KiB": sum(s > 51_200 for s in sizes),
        "mean_message_bytes": sum(m.size for m in msgs) / len(msgs),
    }


# Renderings for the peers: each gets the message in its own native shape.


def openai_items(msg: Msg) -> list[dict[str, Any]]:
    """Responses-API input items (what the OpenAI Agents SDK sessions store)."""
    if msg.role == "user":
        return [{"role": "user", "content": msg.text}]
    if msg.role == "tool":
        return [{"type": "function_call_output", "call_id": msg.call_id, "output": msg.text}]
    items: list[dict[str, Any]] = []
    if msg.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": msg.text, "annotations": []}],
            }
        )
    if msg.tool_call:
        items.append(
            {
                "type": "function_call",
                "call_id": msg.tool_call.id,
                "name": msg.tool_call.name,
                "arguments": json.dumps(msg.tool_call.input),
            }
        )
    return items
