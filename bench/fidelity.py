"""Does compaction keep the work? Run by hand: `python -m bench.fidelity [--quick]
[--windows 32000 64000] [--sessions scripted claude-code codex real real-pi ...]
[--transcripts DIR] [--strategies incremental sliding_window importance adaptive]
[--out bench/fidelity.json]`.

Each strategy (`CompressionConfig.strategy`, default `incremental` alone) gets its own row;
a strategy's drop (a marker in place of the messages) counts as a compaction.

Replays long sessions message by message into fresh sessions with the default settings, at
32k, 64k and 128k windows, as an agent loop would: `before_llm_call()` before each assistant
message (whose usage then says what was sent), `after_tool_result()` after each tool result.
The sessions: the demo's scripted agent (`sessionstore.cli._scripted`, 50 turns, seed 7), and a
Claude Code transcript and a Codex rollout from `bench/fixtures/` (written by
`bench.make_fixtures`), imported through `SessionStore.import_session` like real ones. With
`--sessions real` (or `real-pi`, `real-claude-code`...), recorded sessions of pi, Claude Code,
Codex and OpenCode from `../shared/transcripts`, outside the repository (`bench.fidelity_real`);
a transcript that is absent is skipped with a message, and a run of nothing but absent ones
exits 0.

At every compaction it measures (`bench.fidelity_measure`) how many of the user's requests,
the changed file paths and the last error so far are still in the live context; the tokens
the compaction saved; and over the run the peak tokens sent against the window, the model
calls sent over the usable window (window minus output reserve), prunes against compactions
and whether a prune came before the first compaction. At the end every original is checked
to be restorable byte for byte. Prints the table; writes every sample to the JSON file.

Repeatable: each replay runs in a store of its own with seeded ids and a fixed clock (see
`repeatable`), so a rerun on the same code prints the same figures, and a change in them is a
change in the code.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args
from unittest import mock

from bench.fidelity_measure import Kept, context_text, kept
from bench.fidelity_real import ALL_REAL, BY_NAME, TRANSCRIPTS, missing, real_messages
from bench.make_fixtures import CLAUDE_CODE_FILE, CODEX_FILE, FIXTURES
from bench.report import machine, write_json
from sessionstore import Session, SessionStore
from sessionstore.cli._scripted import coding_session
from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    PartsPreviewed,
    RecordedEvent,
    Strategy,
    TextPart,
    ToolResultPart,
    Usage,
)
from sessionstore.projections import ArtifactFold, LiveToolResult

WINDOWS = (32_000, 64_000, 128_000)
SCRIPTED_TURNS = 50
QUICK_MESSAGES = 160
"""`--quick` replays each session's first this many messages, at 32k only."""


@dataclass(frozen=True)
class Source:
    """A session to replay: its messages as first recorded (original outputs)."""

    name: str
    messages: tuple[Message, ...]


@dataclass
class Sample:
    """One compaction (or a strategy's previews), measured right after it."""

    seq: int
    reason: str
    tokens_before: int
    tokens_after: int
    summary_tokens: int
    kept: Kept
    kind: str = "compaction"
    """`compaction` (a summary or a drop's marker) or `previews` (`PartsPreviewed`)."""

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after


@dataclass
class Run:
    """One session replayed at one window."""

    session: str
    window: int
    usable: int
    samples: list[Sample] = field(default_factory=list)
    prune_seqs: list[int] = field(default_factory=list)
    llm_calls: int = 0
    peak: int = 0
    over_window: int = 0
    failed_checks: list[str] = field(default_factory=list)
    not_restorable: list[str] = field(default_factory=list)
    chain_ok: bool = False
    seconds: float = 0.0
    strategy: str = "incremental"

    @property
    def compactions(self) -> int:
        return sum(s.kind == "compaction" for s in self.samples)

    @property
    def previews(self) -> int:
        return sum(s.kind == "previews" for s in self.samples)

    @property
    def prune_first(self) -> bool:
        """Whether a prune came before the first compaction (or pruning alone was enough)."""
        if not self.prune_seqs:
            return False
        return not self.samples or self.prune_seqs[0] < self.samples[0].seq

    def total(self, name: str) -> tuple[int, int]:
        """(kept, total) of `requests` or `paths`, summed over the compactions."""
        return (
            sum(getattr(s.kept, name) for s in self.samples),
            sum(getattr(s.kept, f"{name}_total") for s in self.samples),
        )

    def whole_requests(self) -> tuple[int, int]:
        """(kept word for word, total) of the requests, summed over the compactions."""
        return (
            sum(s.kept.requests_whole for s in self.samples),
            sum(s.kept.requests_total for s in self.samples),
        )

    def errors(self) -> tuple[int, int]:
        seen = [s.kept.error for s in self.samples if s.kept.error is not None]
        return sum(seen), len(seen)

    def whole_errors(self) -> tuple[int, int]:
        """(compactions that kept every decisive line of the last error, those with one)."""
        seen = [s.kept.error_lines for s in self.samples if s.kept.error_lines is not None]
        return sum(share == 1.0 for share in seen), len(seen)


# the sessions


def messages_of(events: list[RecordedEvent]) -> tuple[Message, ...]:
    return tuple(e.payload.message for e in events if isinstance(e.payload, MessageAppended))


def scripted(store: SessionStore, turns: int = SCRIPTED_TURNS, seed: int = 7) -> Source:
    """The demo's scripted coding agent, recorded once with no window (nothing shrunk)."""
    s = store.create_session(model="scripted-coder", title=f"scripted {turns} turns")
    calls = 0
    for turn in coding_session(turns, seed):
        s.append_user(turn.request)
        for reply in turn.steps:
            ids = [f"call_{calls + n}" for n in range(1, len(reply) + 1)]
            calls += len(reply)
            tool_calls = [
                {"id": call_id, "name": step.tool, "input": step.input}
                for call_id, step in zip(ids, reply, strict=True)
            ]
            s.append_assistant("Working on it.", tool_calls=tool_calls, usage=Usage(output=40))
            for call_id, step in zip(ids, reply, strict=True):
                s.append_tool_result(call_id, step.output, is_error=step.is_error)
        s.append_assistant(turn.answer, usage=Usage(output=12))
    return Source(f"scripted ({turns} turns)", messages_of(store.read(s.id)))


def imported(store: SessionStore, path: Path, name: str) -> Source:
    result = store.import_session(path)
    return Source(name, messages_of(store.read(result.session_ids[0])))


SOURCES: dict[str, Callable[[SessionStore], Source]] = {
    "scripted": scripted,
    "claude-code": lambda store: imported(store, FIXTURES / CLAUDE_CODE_FILE, "Claude Code"),
    "codex": lambda store: imported(store, FIXTURES / CODEX_FILE, "Codex"),
}


def source(name: str, store: SessionStore, transcripts: Path, scratch: Path) -> Source:
    """The session `name` (one of `SOURCES`, or a real transcript of `bench.fidelity_real`
    under `transcripts`) as recorded in `store`."""
    if name in SOURCES:
        return SOURCES[name](store)
    real = BY_NAME[name]
    return Source(real.label, real_messages(store, real, transcripts, scratch))


def chosen(names: list[str], transcripts: Path, log: Callable[[str], None] = print) -> list[str]:
    """The sessions `names` asks for (`real` is every real transcript), without the real ones
    absent from `transcripts` (each skipped with a message)."""
    wanted = [n for name in names for n in (list(BY_NAME) if name == ALL_REAL else [name])]
    kept: list[str] = []
    for name in dict.fromkeys(wanted):
        why = missing(BY_NAME[name], transcripts) if name in BY_NAME else None
        if why is None:
            kept.append(name)
        else:
            log(f"skipped {name}: {why}")
    return kept


# the replay

SessionStoreFactory = Callable[[str], SessionStore]


@contextmanager
def repeatable(seed: int) -> Iterator[SessionStoreFactory]:
    """Make what happens inside reproducible: ids are random UUIDv7s and the prune placeholder
    quotes the time, and summaries and placeholders carry both, so their token counts (and
    every decision after them) would change from run to run. Inside, ids come from a generator
    seeded by `seed` (same shape), and each store it opens reads a clock that starts at a
    fixed time and ticks one second per reading."""
    rng = random.Random(seed)
    ms = int(datetime(2025, 10, 2, 9, tzinfo=UTC).timestamp() * 1000)

    def uuid7() -> uuid.UUID:
        nonlocal ms
        ms += 1
        bits = (ms << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62)
        return uuid.UUID(int=bits | rng.getrandbits(62))

    def store(url: str) -> SessionStore:
        return SessionStore(url, clock=_Clock())

    with mock.patch("sessionstore.events._ids.uuid7", uuid7):
        yield store


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 10, 2, 9, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def replay(
    store: SessionStore, source: Source, window: int, strategy: Strategy = "incremental"
) -> Run:
    """Play `source` into a fresh session with a `window`-token context and the defaults, but
    for the context `strategy`."""
    began = time.perf_counter()
    s = store.create_session(
        model="replayed", context_window=window, title=f"{source.name} at {window:,}"
    )
    if strategy != "incremental":
        s.configure(strategy=strategy)
    run = Run(source.name, window, window - s.header.output_reserve, strategy=strategy)
    trail = ArtifactFold()
    outputs: dict[str, str] = {}
    for message in source.messages:
        if message.role == "assistant":
            _check(store, s, run, trail, s.before_llm_call)
            sent = s.context().tokens
            run.llm_calls += 1
            run.peak = max(run.peak, sent)
            run.over_window += sent > run.usable
            output = message.usage.output if message.usage is not None else 50
            s.append_message(message.model_copy(update={"usage": Usage(input=sent, output=output)}))
        elif message.role == "tool":
            results = [p for p in message.parts if isinstance(p, ToolResultPart)]
            parts = [
                s.tool_result_part(
                    p.call_id,
                    p.output if p.blocks is None else p.blocks,
                    is_error=p.is_error,
                    name=p.name,
                )
                for p in results
            ]
            outputs.update((p.call_id, p.output) for p in results)
            s.append_message(Message(role="tool", parts=tuple(parts), native=message.native))
            _check(store, s, run, trail, s.after_tool_result)
        else:
            s.append_message(message)
    run.not_restorable = _not_restorable(store, s, source, outputs)
    run.chain_ok = store.verify(s.id).ok
    run.seconds = time.perf_counter() - began
    return run


def _check(
    store: SessionStore, s: Session, run: Run, trail: ArtifactFold, check: Callable[[], Any]
) -> None:
    try:
        result = check()
    except Exception as error:  # a failed summary: the session is unchanged, the loop goes on
        run.failed_checks.append(f"{type(error).__name__}: {error}")
        return
    if result.pruned is not None:
        run.prune_seqs.append(result.pruned.seq)
    for event in result.compactions:
        # a drop without a marker is not sampled (it says nothing the model reads)
        if isinstance(event.payload, ContextCompacted | PartsPreviewed):
            run.samples.append(_sample(store, s, trail, event))


def _sample(store: SessionStore, s: Session, trail: ArtifactFold, event: RecordedEvent) -> Sample:
    payload = event.payload
    assert isinstance(payload, ContextCompacted | PartsPreviewed)
    for new in store.read(s.id, trail.seq + 1, event.seq):
        trail.apply(new)
    live = s.context() if event.seq == s.version else s.context(at=event.seq)
    if isinstance(payload, PartsPreviewed):
        return Sample(
            seq=event.seq,
            reason=payload.strategy,
            tokens_before=live.tokens + payload.tokens_freed,
            tokens_after=live.tokens,
            summary_tokens=0,
            kept=kept(trail.trail(), context_text(live.messages)),
            kind="previews",
        )
    summary = sum(p.tokens or 0 for p in payload.summary.parts if isinstance(p, TextPart))
    return Sample(
        seq=event.seq,
        reason=payload.reason,
        tokens_before=payload.tokens_before,
        tokens_after=payload.tokens_after,
        summary_tokens=summary,
        kept=kept(trail.trail(), context_text(live.messages)),
    )


def _not_restorable(
    store: SessionStore, s: Session, source: Source, outputs: dict[str, str]
) -> list[str]:
    """What is not restorable byte for byte: a live tool result whose `restore_pruned` output
    is not its original, a live user message whose text is not, or an original output the log
    does not hold (compacted messages are restored from the log)."""
    wrong: list[str] = []
    users = {m.id: _text(m.parts) for m in source.messages if m.role == "user"}
    for message in s.context(restore_pruned=True).messages:
        for part in message.parts:
            if isinstance(part, LiveToolResult) and part.output != outputs.get(part.call_id):
                wrong.append(f"tool result {part.call_id}")
        shown = message.role == "user" and not message.summary and message.id in users
        if shown and _text(message.parts) != users[message.id]:
            wrong.append(f"user message {message.id}")
    logged = {
        part.call_id: part.output
        for m in messages_of(store.read(s.id))
        for part in m.parts
        if isinstance(part, ToolResultPart)
    }
    wrong += [f"log: {c}" for c, output in outputs.items() if logged.get(c) != output]
    return wrong


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if isinstance(p, TextPart))


# the report


def _ratio(kept: int, total: int) -> str:
    return f"{kept}/{total}" if total else "-"


def table(runs: list[Run]) -> str:
    rows = [
        "| run | compactions | previews | prunes (first?) | requests kept whole | requests kept "
        "(first 80 characters) | changed paths kept | last error kept (its decisive line) | "
        "last error kept (every decisive line) | median saved | worst call (sent/window) | "
        "over-window calls | restorable |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        saved = [s.saved for s in run.samples]
        first = "yes" if run.prune_first else "no"
        restorable = "yes" if not run.not_restorable and run.chain_ok else "NO"
        by = "" if run.strategy == "incremental" else f", {run.strategy}"
        rows.append(
            f"| {run.session}, {run.window // 1000}k{by} | {run.compactions} | {run.previews} | "
            f"{len(run.prune_seqs)} ({first}) | {_ratio(*run.whole_requests())} | "
            f"{_ratio(*run.total('requests'))} | {_ratio(*run.total('paths'))} | "
            f"{_ratio(*run.errors())} | {_ratio(*run.whole_errors())} | "
            f"{int(statistics.median(saved)) if saved else 0:,} | "
            f"{run.peak:,}/{run.window:,} ({run.peak / run.window:.0%}) | "
            f"{run.over_window}/{run.llm_calls} | {restorable} |"
        )
    return "\n".join(rows)


def as_json(run: Run) -> dict[str, Any]:
    data = asdict(run)
    data["samples"] = [{**asdict(s), "saved": s.saved} for s in run.samples]
    data["prune_first"] = run.prune_first
    data["compactions"] = run.compactions
    data["previews"] = run.previews
    data["totals"] = {
        "requests": run.total("requests"),
        "whole_requests": run.whole_requests(),
        "paths": run.total("paths"),
        "errors": run.errors(),
        "whole_errors": run.whole_errors(),
    }
    return data


def runs(
    folder: Path,
    sessions: list[str],
    windows: tuple[int, ...],
    limit: int | None = None,
    log: Callable[[str], None] = print,
    strategies: tuple[Strategy, ...] = ("incremental",),
    transcripts: Path = TRANSCRIPTS,
) -> Iterator[Run]:
    """Replay each named session at each window (its first `limit` messages when given), each
    replay in a store of its own under `folder`, repeatable alone (see `repeatable`)."""
    for name in sessions:
        with repeatable(0) as open_store, open_store(_url(folder, name)) as store:
            played = source(name, store, transcripts, folder)
        if limit is not None:
            played = Source(played.name, played.messages[:limit])
        for window in windows:
            for strategy in strategies:
                url = _url(folder, name, window, strategy)
                with repeatable(window) as open_store, open_store(url) as store:
                    run = replay(store, played, window, strategy)
                log(
                    f"{run.session} at {window:,} ({strategy}): {run.compactions} compactions, "
                    f"{run.seconds:.1f} s"
                )
                yield run


def _url(folder: Path, *names: object) -> str:
    return f"sqlite:///{folder / '-'.join(map(str, names))}.db"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32k only, sessions cut short")
    parser.add_argument("--windows", type=int, nargs="+", help=f"default {WINDOWS}")
    parser.add_argument(
        "--sessions",
        nargs="+",
        choices=[*SOURCES, ALL_REAL, *BY_NAME],
        help=f"default: {' '.join(SOURCES)}; {ALL_REAL}: every real transcript",
    )
    parser.add_argument(
        "--transcripts",
        type=Path,
        default=TRANSCRIPTS,
        help="the real transcripts' folder (default: ../shared/transcripts beside the repository)",
    )
    parser.add_argument(
        "--strategies", nargs="+", choices=get_args(Strategy), default=["incremental"]
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="default: bench/fidelity.json, or none when a real transcript is replayed (its "
        "samples quote it, and the transcripts stay outside the repository)",
    )
    args = parser.parse_args(argv)
    windows = tuple(args.windows or ((32_000,) if args.quick else WINDOWS))
    sessions = chosen(args.sessions or list(SOURCES), args.transcripts)
    if not sessions:
        print("nothing to replay: every session asked for is absent")
        return
    began = time.perf_counter()
    limit = QUICK_MESSAGES if args.quick else None
    strategies = tuple(args.strategies)
    with tempfile.TemporaryDirectory() as folder:
        done = list(
            runs(
                Path(folder),
                sessions,
                windows,
                limit,
                strategies=strategies,
                transcripts=args.transcripts,
            )
        )
    seconds = time.perf_counter() - began
    text = table(done)
    print(text)
    print(f"{seconds:.0f} s in all")
    out = args.out
    if out is None and not any(name in BY_NAME for name in sessions):
        out = Path(__file__).parent / "fidelity.json"
    if out is None:
        return
    write_json(
        out,
        {
            "machine": machine(),
            "windows": windows,
            "quick": args.quick,
            "strategies": args.strategies,
            "seconds": seconds,
            "runs": [as_json(run) for run in done],
            "markdown": text,
        },
    )


if __name__ == "__main__":
    main()
