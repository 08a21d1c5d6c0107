"""Fuzzing the public API: every public method of `SessionStore` and `Session` (and the models
callers build by hand) called with arguments of every type, on each backend.

Whatever the arguments, only `SessionStoreError`s escape, each message is one short line, and a
call that raises leaves every row of the store as it was. The one allowed exception: an
automatic context check whose compaction fails after it pruned (or compacted) appends exactly
what its `CompactionError.check` reports.

The arguments mix values of every type (None, bools, ints past every column's range, NaN and
infinities, text with NUL and lone surrogates, bytes, containers, 3,000-deep nesting, naive,
aware and out-of-range datetimes, objects of the wrong class) with plausible ones (ids of the
session's live messages, pending calls, tool outputs long enough to be cut, valid and broken
transcripts), so that calls get past their argument checks into the store too.

One store per backend serves all examples; the examples run one after another on it, so its
sessions grow, compact and fork as an agent's would. `FUZZ_EXAMPLES` runs more by hand, and
`FUZZ_REPORT=1` (or `=messages`) prints what each method did:
`FUZZ_EXAMPLES=20000 FUZZ_REPORT=1 python -m pytest -s tests/contract/test_fuzz_api.py -k sqlite`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import (
    CompactionError,
    ExtractiveSummarizer,
    Session,
    SessionStore,
    SessionStoreError,
    ToolCall,
    Usage,
)
from sessionstore.events import MODELS, CompressionConfig, Message, NewEvent, TextPart, ToolLimits
from sessionstore.events._brief import brief
from tests.conftest import Backend

EXAMPLES = {"sqlite": 500, "postgresql": 150}
"""Examples per backend in the default run (about 10 s a backend on a busy 2-core machine);
the slow set runs `SLOW_EXAMPLES`."""
SLOW_EXAMPLES = {"sqlite": 2_500, "postgresql": 900}

OMIT: Any = object()
"""Drawn for a parameter: leave it at its default."""


# values of every type


def nest(depth: int, kind: str) -> object:
    value: object = {} if kind == "dict" else []
    for _ in range(depth):
        value = {"a": value} if kind == "dict" else [value]
    return value


offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
datetimes = st.one_of(
    st.datetimes(),  # naive
    st.datetimes(timezones=st.just(UTC)),
    st.builds(lambda moment, zone: moment.replace(tzinfo=zone), st.datetimes(), offsets),
    st.builds(
        lambda end, zone: end.replace(tzinfo=zone),
        st.sampled_from([datetime.min, datetime.max]),
        offsets,
    ),
)
texts = st.text(st.characters(exclude_categories=()), max_size=30)  # NUL and lone surrogates too
surrogates = st.builds(  # a lone surrogate in plausible text, where a draw rarely puts one
    lambda head, surrogate: f"{head}{surrogate}",
    st.sampled_from(["", "a leaked key "]),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
)
ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
edge_ints = st.sampled_from(
    [-1, 0, 1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, 10**100]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 40),
    st.integers(),
    edge_ints,
    st.floats(),
    texts,
    st.binary(max_size=20),
    datetimes,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(texts, inner, max_size=3),
        st.frozensets(st.integers(), max_size=2),
    ),
    max_leaves=6,
)
deep = st.builds(nest, st.integers(300, 3_000), st.sampled_from(["dict", "list"]))
objects = st.sampled_from(
    [
        object(),
        ExtractiveSummarizer(),
        Usage(input=1),
        ToolCall(id="x", name="y"),
        CompressionConfig(),
        TextPart(text="a part"),
        Message(role="user", parts=(TextPart(text="a message"),)),
        NewEvent({"type": "MessagePinned", "message_id": "m"}),
        Exception("an exception"),
        str,
        len,
    ]
)
anything = st.one_of(
    values,
    deep,
    objects,
    st.builds(iter, st.lists(texts, max_size=3)),  # a one-shot iterator
)

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), edge_ints)
shallow_json = st.recursive(
    st.one_of(json_scalars, st.floats(), texts),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
json_values = st.one_of(
    shallow_json,
    st.builds(nest, st.integers(300, 600), st.sampled_from(["dict", "list"])),  # json.dumps can
)


def either(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value (so that calls with several parameters get past their checks
    often enough), else anything at all."""
    return st.integers(0, 4).flatmap(lambda n: plausible if n else anything)


def maybe(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A parameter with a default: left out, plausible, or anything."""
    return st.integers(0, 2).flatmap(lambda n: either(plausible) if n else st.just(OMIT))


# plausible values


CONFIG_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "max_lines": st.integers(-1, 3_000),
    "max_bytes": st.integers(-1, 60_000),
    "direction": st.sampled_from(["head", "tail", "middle"]),
    "tools": st.dictionaries(
        st.sampled_from(["read", "bash"]),
        st.fixed_dictionaries({}, optional={"max_lines": st.integers(-1, 50)}),
        max_size=1,
    ),
    "trigger_ratio": st.floats(0, 1.2),
    "safety_margin": st.integers(-1, 3_000),
    "protect_turns": st.integers(-1, 3),
    "protect_tokens": st.integers(-1, 5_000),
    "minimum_prune": st.integers(-1, 5_000),
    "protected_tools": st.lists(st.sampled_from(["skill", "read"]), max_size=2),
    "keep_recent_turns": st.integers(-1, 3),
    "keep_recent_tokens": st.integers(-1, 5_000),
    "max_attempts": st.integers(0, 5) | st.just(10**12),
    "cooldown_events": st.integers(-1, 10),
    "summary_tokens": st.integers(0, 500),
    "auto": st.booleans(),
    "bogus": st.integers(),
}
configs = st.lists(
    st.sampled_from(sorted(CONFIG_VALUES)).flatmap(
        lambda name: st.tuples(st.just(name), either(CONFIG_VALUES[name]))
    ),
    max_size=3,
).map(dict)
outputs = st.one_of(texts, st.integers(0, 3_000).map(lambda n: "log line\n" * n))
usages = st.builds(
    Usage,
    input=st.integers(0, 10**6),
    output=st.integers(0, 10**5),
    cache_read=st.integers(0, 10**6),
)
tool_calls = st.one_of(
    st.builds(
        ToolCall,
        id=ids.map(lambda i: f"c{i}"),
        name=st.sampled_from(["read", "bash", "skill"]),
        input=shallow_json.filter(lambda v: not isinstance(v, str)),  # a str is refused
    ),
    st.builds(
        ToolCall,
        id=ids.map(lambda i: f"c{i}"),
        name=st.sampled_from(["read", "bash"]),
        arguments=texts,  # the model's text, JSON or not
    ),
    st.builds(
        lambda i, arguments: {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read", "arguments": arguments},
        },
        ids,
        texts,
    ),
)
reasons = st.sampled_from(["before_llm_call", "after_tool", "manual", "bored"])
formats = st.sampled_from(["sessionstore", "openai", "claude-code", "csv"])
encodings = st.sampled_from(["cl100k_base", "o200k_base", ""])


def summarize_to(value: object) -> Callable[..., object]:
    def summarizer(messages: object, target_tokens: int) -> object:
        return value

    return summarizer


def failing(messages: object, target_tokens: int) -> str:
    raise RuntimeError("the model is down\nsecond line")


async def summarize_later(messages: object, target_tokens: int) -> object:
    return "A short summary, awaited."


summarizers = st.one_of(
    st.sampled_from([ExtractiveSummarizer(), failing, summarize_later, None]),
    st.builds(summarize_to, st.one_of(texts, st.just("Short summary."), anything)),
)
confirms = st.one_of(
    st.sampled_from([lambda proposal: True, lambda proposal: False, None]),
    st.builds(lambda answer: lambda proposal: answer, anything),
)


# the store under test, shared by every example


@dataclass
class World:
    """One store and its main session; what the examples created so far."""

    backend: Backend
    store: SessionStore
    main: Session
    engine: sa.Engine
    session_ids: list[str] = field(default_factory=list)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def rows(self) -> tuple[Any, ...]:
        """Every row of the store, in short: `events` is insert-only (its triggers refuse
        UPDATE and DELETE), so its count and last position stand for its rows."""
        with self.engine.connect() as conn:
            events = tuple(
                conn.execute(sa.text("SELECT count(*), max(position) FROM events")).one()
            )
            sessions = [
                tuple(row)
                for row in conn.execute(
                    sa.text(
                        "SELECT id, title, head_seq, head_hash, parent_id, parent_seq, "
                        "created_at, updated_at FROM sessions ORDER BY id"
                    )
                )
            ]
            snapshots = [
                tuple(row)
                for row in conn.execute(
                    sa.text(
                        "SELECT session_id, projection, projection_version, seq FROM snapshots "
                        "ORDER BY session_id, projection, projection_version, seq"
                    )
                )
            ]
            bodies = tuple(conn.execute(sa.text("SELECT count(*) FROM blobs")).one())
        return events, sessions, snapshots, bodies

    # What the store holds now, to draw plausible ids from. Hypothesis requires the shape of
    # what is drawn not to depend on outside state, so each draws an index, not a choice.

    def message_ids(self) -> st.SearchStrategy[str]:
        return _one_of([m.id for m in self.main.context().messages], "m")

    def part_ids(self) -> st.SearchStrategy[str]:
        return _one_of([p.id for m in self.main.context().messages for p in m.parts], "p")

    def pending_calls(self) -> st.SearchStrategy[str]:
        return _one_of(self.main._fold.pending_call_ids(), "c")

    def sessions(self) -> st.SearchStrategy[str]:
        return _one_of(self.session_ids, "s")

    def seqs(self) -> st.SearchStrategy[int]:
        span = self.main.version + 4
        return _INDEX.map(lambda n: n % span - 1)

    def exported(self) -> st.SearchStrategy[list[str]]:
        """The main session's export, whole or with one line dropped or changed."""
        lines = list(self.store.export_session(self.main.id))
        return st.one_of(
            st.just(lines),
            _INDEX.map(lambda n: [line for i, line in enumerate(lines) if i != n % len(lines)]),
            st.tuples(_INDEX, texts).map(
                lambda cut: [
                    line[:-3] + cut[1] if i == cut[0] % len(lines) else line
                    for i, line in enumerate(lines)
                ]
            ),
        )


_INDEX = st.integers(0, 2**16)


def _one_of(found: list[str], prefix: str) -> st.SearchStrategy[str]:
    """One of `found` (a made-up id when it is empty), drawn by index."""
    return _INDEX.map(lambda n: found[n % len(found)] if found else f"{prefix}{n}")


def json_either(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`either` for what goes into a JSON file: a plausible value, else any JSON value."""
    return st.integers(0, 4).flatmap(lambda n: plausible if n else json_values)


def openai_messages(w: World) -> st.SearchStrategy[str]:
    message = st.fixed_dictionaries(
        {
            "role": json_either(
                st.sampled_from(["system", "developer", "user", "assistant", "tool"])
            )
        },
        optional={
            "content": st.one_of(json_values, texts),
            "tool_call_id": st.one_of(ids, json_values),
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {"id": ids, "type": st.just("function")},
                    optional={
                        "function": st.fixed_dictionaries(
                            {"name": ids, "arguments": st.one_of(texts, json_values)}
                        )
                    },
                ),
                max_size=2,
            ),
        },
    )
    plain = st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant"]),
            "content": st.text(st.characters(codec="utf-8", exclude_characters="\x00")),
        }
    )
    return st.one_of(st.lists(message, max_size=4), st.lists(plain, min_size=1, max_size=4)).map(
        json.dumps
    )


def claude_code_lines(w: World) -> st.SearchStrategy[str]:
    block = st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "x"])},
        optional={
            "text": st.one_of(texts, json_values),
            "id": st.one_of(ids, json_values),
            "name": ids,
            "input": json_values,
            "tool_use_id": ids,
            "content": st.one_of(texts, json_values),
            "thinking": texts,
        },
    )
    timestamps = st.one_of(
        datetimes.map(lambda d: d.isoformat()),
        st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "soon"]),
    )
    entry = st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "assistant", "summary", "system"])},
        optional={
            "uuid": st.one_of(ids, json_values),
            "parentUuid": st.one_of(st.none(), ids, json_values),
            "timestamp": timestamps,
            "summary": st.one_of(texts, json_values),
            "isSidechain": st.booleans(),
            "message": st.fixed_dictionaries(
                {"content": st.one_of(texts, st.lists(block, max_size=3))},
                optional={
                    "id": ids,
                    "model": ids,
                    "usage": st.one_of(
                        json_values,
                        st.fixed_dictionaries({"input_tokens": st.integers(-1, 100)}),
                    ),
                },
            ),
        },
    )
    return st.lists(entry.map(json.dumps), max_size=4).map("\n".join)


def valid_payloads(w: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        texts.map(
            lambda t: {
                "type": "MessageAppended",
                "message": {"role": "user", "parts": [{"type": "text", "text": t}]},
            }
        ),
        w.message_ids().map(lambda m: {"type": "MessagePinned", "message_id": m}),
        w.part_ids().map(lambda p: {"type": "OutputsRestored", "part_ids": [p]}),
        st.just({"type": "CompressionChanged", "compression": {"max_lines": 20}}),
    )


def payloads(w: World) -> st.SearchStrategy[Any]:
    """What `append` takes: lists of payload mappings, plausible or not."""
    message = st.fixed_dictionaries(
        {
            "role": either(st.sampled_from(["user", "assistant", "tool", "system"])),
            "parts": st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "tool_call", "tool_result", "file"])},
                    optional={
                        "text": texts,
                        "call_id": either(w.pending_calls()),
                        "name": ids,
                        "output": outputs,
                        "arguments": texts,
                        "tokens": either(st.integers(0, 100)),
                    },
                ),
                max_size=2,
            ),
        }
    )
    payload = st.fixed_dictionaries(
        {"type": either(st.sampled_from([*MODELS, "Bogus"]))},
        optional={
            "message": either(message),
            "compression": either(configs),
            "message_id": either(w.message_ids()),
            "part_ids": either(st.lists(w.part_ids(), max_size=2)),
            "title": texts,
            "context_window": either(st.integers(-1, 10**6)),
            "parent_session_id": either(w.sessions()),
            "parent_seq": either(w.seqs()),
        },
    )
    return either(st.lists(st.one_of(valid_payloads(w), payload), max_size=3))


# the calls, by name: each draws its arguments and returns the call to make


Call = Callable[[], object]
Draw = Callable[[st.SearchStrategy[Any]], Any]


def call(method: Callable[..., object], **params: Any) -> Call:
    """`method` with the drawn arguments, leaving out the ones drawn as OMIT."""
    given_params = {name: value for name, value in params.items() if value is not OMIT}
    return lambda: method(**given_params)


def session_calls(w: World, draw: Draw) -> dict[str, Callable[[], Call]]:
    s = w.main
    return {
        "append_user": lambda: call(s.append_user, text=draw(either(texts))),
        "append_system": lambda: call(s.append_system, text=draw(either(texts))),
        "append_assistant": lambda: call(
            s.append_assistant,
            text=draw(maybe(texts)),
            tool_calls=draw(maybe(st.lists(tool_calls, max_size=2))),
            usage=draw(maybe(usages)),
        ),
        "append_tool_result": lambda: call(
            s.append_tool_result,
            call_id=draw(either(w.pending_calls())),
            output=draw(either(outputs)),
            is_error=draw(maybe(st.booleans())),
            name=draw(maybe(st.one_of(st.none(), ids))),
        ),
        "append_message": lambda: call(
            s.append_message,
            message=draw(
                either(
                    texts.map(lambda t: Message(role="user", parts=(TextPart(text=t),)))
                    | st.just(Message(role="user", parts=(TextPart(text="again"),)))
                )
            ),
        ),
        "append_events": lambda: call(s.append_events, payloads=draw(payloads(w))),
        "context": lambda: call(
            s.context,
            at=draw(maybe(st.one_of(w.seqs(), datetimes))),
            restore_pruned=draw(maybe(st.booleans())),
        ),
        "timeline": lambda: call(s.timeline),
        "to_markdown": lambda: call(
            s.to_markdown,
            at=draw(maybe(st.one_of(w.seqs(), datetimes))),
            history=draw(maybe(st.booleans())),
        ),
        "measure": lambda: call(s.measure),
        "refresh": lambda: call(s.refresh),
        "restore": lambda: call(
            s.restore,
            part_ids=draw(maybe(st.one_of(st.none(), st.lists(w.part_ids(), max_size=2)))),
        ),
        "redact": lambda: call(
            s.redact,
            part_ids=draw(either(st.lists(w.part_ids(), max_size=2))),
            reason=draw(either(st.one_of(texts, surrogates))),
        ),
        "revert": lambda: call(s.revert, to_message_id=draw(either(w.message_ids()))),
        "pin": lambda: call(s.pin, message_id=draw(either(w.message_ids()))),
        "unpin": lambda: call(s.unpin, message_id=draw(either(w.message_ids()))),
        "configure": lambda: call(s.configure, **draw(configs)),
        "prune": lambda: call(
            s.prune, dry_run=draw(maybe(st.booleans())), reason=draw(maybe(texts))
        ),
        "compact": lambda: call(
            s.compact,
            summarizer=draw(maybe(summarizers)),
            reason=draw(maybe(reasons)),
            keep_turns=draw(maybe(st.integers(0, 4))),
            keep_tokens=draw(maybe(st.integers(0, 5_000))),
        ),
        "propose_compaction": lambda: call(
            s.propose_compaction,
            summarizer=draw(maybe(summarizers)),
            reason=draw(maybe(reasons)),
            keep_turns=draw(maybe(st.integers(0, 4))),
            keep_tokens=draw(maybe(st.integers(0, 5_000))),
        ),
        "drop_oldest_turns": lambda: call(s.drop_oldest_turns, n=draw(either(st.integers(0, 3)))),
        "restore_messages": lambda: call(s.restore_messages, seq=draw(either(w.seqs()))),
        "undo": lambda: call(s.undo, seq=draw(either(w.seqs()))),
        "before_llm_call": lambda: call(
            s.before_llm_call,
            summarizer=draw(maybe(summarizers)),
            confirm=draw(maybe(confirms)),
        ),
        "after_tool_result": lambda: call(
            s.after_tool_result,
            summarizer=draw(maybe(summarizers)),
            confirm=draw(maybe(confirms)),
        ),
    }


def store_calls(w: World, draw: Draw) -> dict[str, Callable[[], Call]]:
    st_ = w.store

    def session_id() -> Any:
        return draw(either(w.sessions()))

    return {
        "create_session": lambda: call(
            st_.create_session,
            model=draw(maybe(ids)),
            context_window=draw(maybe(st.one_of(st.none(), st.integers(-1, 10**6)))),
            title=draw(maybe(texts)),
            output_reserve=draw(maybe(st.integers(-1, 10**4))),
            encoding=draw(maybe(encodings)),
            compression=draw(maybe(st.one_of(st.none(), configs))),
            session_id=draw(maybe(st.one_of(st.none(), ids, w.sessions()))),
        ),
        "session": lambda: call(st_.session, session_id=session_id()),
        "version": lambda: call(st_.version, session_id=session_id()),
        "session_info": lambda: call(st_.session_info, session_id=session_id()),
        "sessions": lambda: call(
            st_.sessions,
            limit=draw(maybe(st.one_of(st.none(), st.integers(0, 5), edge_ints))),
            offset=draw(maybe(st.one_of(st.integers(0, 5), edge_ints))),
        ),
        "stats": lambda: call(st_.stats),
        "summaries": lambda: call(
            st_.summaries,
            session_id=draw(maybe(st.one_of(st.none(), w.sessions()))),
            limit=draw(maybe(st.one_of(st.none(), st.integers(0, 5), edge_ints))),
            offset=draw(maybe(st.one_of(st.integers(0, 5), edge_ints))),
        ),
        "verify": lambda: call(st_.verify, session_id=session_id()),
        "purge": lambda: call(
            st_.purge, session_id=session_id(), reason=draw(maybe(st.one_of(texts, surrogates)))
        ),
        "export_session": lambda: call(
            lambda **a: list(st_.export_session(**a)), session_id=session_id()
        ),
        "read": lambda: call(
            st_.read,
            session_id=session_id(),
            from_seq=draw(maybe(st.one_of(w.seqs(), edge_ints))),
            to_seq=draw(maybe(st.one_of(st.none(), w.seqs(), edge_ints))),
        ),
        "fork": lambda: call(
            st_.fork,
            session_id=session_id(),
            at=draw(maybe(st.one_of(st.none(), w.seqs(), datetimes))),
            title=draw(maybe(st.one_of(st.none(), texts))),
        ),
        "append": lambda: call(
            st_.append,
            session_id=session_id(),
            events=draw(payloads(w)),
            expected_version=draw(either(st.one_of(st.none(), w.seqs()))),
        ),
        "import_session": lambda: _import(w, draw),
        # the models callers build by hand
        "ToolCall": lambda: call(
            ToolCall,
            id=draw(either(ids)),
            name=draw(either(ids)),
            input=draw(maybe(json_values)),
        ),
        "Usage": lambda: call(
            Usage,
            input=draw(maybe(st.integers(-1, 100))),
            output=draw(maybe(st.integers(-1, 100))),
        ),
        "CompressionConfig": lambda: call(CompressionConfig, **draw(configs)),
        "ToolLimits": lambda: call(
            ToolLimits,
            max_lines=draw(maybe(st.integers(-1, 100))),
            direction=draw(maybe(st.sampled_from(["head", "up"]))),
        ),
    }


def _import(w: World, draw: Draw) -> Call:
    """A transcript of one format, mostly imported as that format."""
    kind = draw(st.sampled_from(["sessionstore", "openai", "claude-code"]))
    sources = {
        "sessionstore": w.exported(),
        "openai": openai_messages(w),
        "claude-code": claude_code_lines(w),
    }
    return call(
        w.store.import_session,
        source=draw(either(sources[kind])),
        format=draw(st.integers(0, 3).flatmap(lambda n: st.just(kind) if n else maybe(formats))),
        session_id=draw(maybe(st.one_of(st.none(), ids, w.sessions()))),
        title=draw(maybe(st.one_of(st.none(), texts))),
        model=draw(maybe(st.one_of(st.none(), ids))),
        context_window=draw(maybe(st.one_of(st.none(), st.integers(-1, 10**5)))),
        encoding=draw(maybe(encodings)),
    )


def one_call(w: World, draw: Draw) -> None:
    w.main.refresh()  # a raw append may have moved its head
    calls = {**session_calls(w, draw), **store_calls(w, draw)}
    name = draw(st.sampled_from(sorted(calls)))
    draw(_INDEX)  # a call without arguments is worth repeating as the store changes
    make_call = calls[name]()
    before = w.rows()
    try:
        result = make_call()
    except SessionStoreError as error:
        w.outcomes[name, type(error).__name__] += 1
        if os.environ.get("FUZZ_REPORT") == "messages":
            print(f"{name:20} {type(error).__name__:20} {brief(str(error))}")
        message = str(error)
        assert "\n" not in message and len(message) <= 600, (name, brief(message))
        after = w.rows()
        if isinstance(error, CompactionError) and error.check is not None:
            check: Any = error.check  # what the check appended before its compaction failed
            appended = (check.pruned is not None) + len(check.compactions)
            assert after[0][0] == before[0][0] + appended, (name, brief(message))
        else:
            assert after == before, (name, brief(message))
        return
    w.outcomes[name, "ok"] += 1
    if isinstance(result, Session) and result.id not in w.session_ids:
        w.session_ids.append(result.id)


@pytest.mark.parametrize(
    "examples",
    [EXAMPLES, pytest.param(SLOW_EXAMPLES, marks=pytest.mark.slow)],
    ids=["default", "slow"],
)
def test_any_call_with_any_arguments_raises_only_typed_errors_and_writes_nothing_then(
    backend: Backend, examples: dict[str, int]
) -> None:
    store = SessionStore(backend.url)
    main = store.create_session(
        model="gpt-4o",
        context_window=8_000,
        output_reserve=1_000,
        compression={"safety_margin": 0, "minimum_prune": 100, "protect_tokens": 500},
        session_id="fz",
    )
    main.append_system("You are a coding agent.")
    for turn in range(6):  # a history that compaction and pruning can work on
        main.append_user(f"Step {turn}: read the next module.")
        call_id = f"seed{turn}"
        main.append_assistant("", tool_calls=[ToolCall(id=call_id, name="read", input={})])
        main.append_tool_result(call_id, f"line {turn}\n" * 200)
    other = store.create_session(session_id="other", title="another session")
    other.append_user("hello")
    engine = sa.create_engine(backend.url)
    world = World(backend, store, main, engine, ["fz", "other"])
    count = int(os.environ.get("FUZZ_EXAMPLES", examples[backend.name]))

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def examples_on_one_store(data: st.DataObject) -> None:
        one_call(world, data.draw)

    try:
        examples_on_one_store()
        assert store.verify("fz").ok
        if os.environ.get("FUZZ_REPORT"):
            for (name, outcome), times in sorted(world.outcomes.items()):
                print(f"{name:20} {outcome:24} {times:6}")
    finally:
        engine.dispose()
        store.close()
