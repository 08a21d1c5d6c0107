"""A payload over `max_payload_bytes` is refused before anything counts, cuts or copies it.

Tokenising 50 MB took seconds and hundreds of MB before `encode_batch` refused the payload;
a `Session` now measures the text first. The early check only ever refuses what the exact
check would refuse too: these tests pin both halves (never called, never stricter).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionstore.context._at_append as store_at_append
import sessionstore.log._append as store_append
import sessionstore.session._session as store_session
from sessionstore import PayloadTooLarge, Session, SessionStore, ToolCall
from tests.builders import started, user
from tests.conftest import Backend


def fifty_megabytes() -> str:
    return "word " * 10_000_000


class Forbidden(AssertionError):
    """Raised by anything a refused payload must never reach."""


def forbidden(*_args: Any, **_kwargs: Any) -> Any:
    raise Forbidden("called before the size check")


def forbid_counting_and_cutting(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, tiktoken and truncation fail the test if called (they are the slow steps
    that copy the text)."""
    monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", forbidden)
    monkeypatch.setattr(tiktoken.Encoding, "encode", forbidden)
    monkeypatch.setattr(store_at_append, "truncate", forbidden)


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStore]:
    """A store with a 16 MiB limit, which 50 MB is over (the default, 256 MiB, takes a 100 MB
    output)."""
    opened = SessionStore(backend.url, max_payload_bytes=16 * 1024 * 1024)
    yield opened
    opened.close()


@pytest.fixture
def session(store: SessionStore) -> Session:
    handle = store.create_session(model="m")
    handle.append_user("run the tests")
    handle.append_assistant("", tool_calls=[ToolCall(id="c1", name="bash", input={})])
    return handle


@pytest.mark.parametrize(
    "append",
    [
        lambda s, text: s.append_user(text),
        lambda s, text: s.append_system(text),
        lambda s, text: s.append_tool_result("c1", text),
        lambda s, text: s.append_assistant(text),
        lambda s, text: s.append_assistant(
            "", tool_calls=[ToolCall(id="c2", name="write", input={"text": text})]
        ),
    ],
    ids=["user", "system", "tool result", "assistant", "tool call input"],
)
def test_fifty_megabytes_are_refused_before_tiktoken_or_truncation_sees_them(
    session: Session, backend: Backend, monkeypatch: pytest.MonkeyPatch, append: Any
) -> None:
    before = backend.table_rows()
    forbid_counting_and_cutting(monkeypatch)

    with pytest.raises(
        PayloadTooLarge,
        match=r"^MessageAppended payload is [\d,]+ bytes, over the store's limit of 16,777,216",
    ) as caught:
        append(session, fifty_megabytes())

    assert caught.value.size >= 50_000_000
    assert backend.table_rows() == before
    assert session.version == 3


def test_a_raw_append_of_fifty_megabytes_is_refused_before_it_is_encoded(
    store: SessionStore, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append("s1", [started()], expected_version=0)
    before = backend.table_rows()
    monkeypatch.setattr(store_append, "encode_event", forbidden)  # the copy to JSON

    with pytest.raises(PayloadTooLarge, match="over the store's limit of 16,777,216"):
        store.append("s1", [user(fifty_megabytes())], expected_version=1)

    assert backend.table_rows() == before


def test_multibyte_text_under_the_limit_in_characters_is_measured_in_bytes(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SessionStore(backend.url, max_payload_bytes=10_000) as limited:
        session = limited.create_session(model="m")
        forbid_counting_and_cutting(monkeypatch)

        with pytest.raises(PayloadTooLarge, match=r"payload is 12,\d{3} bytes") as caught:
            session.append_user("é" * 6_000)  # 6,000 characters, 12,000 bytes

        assert 12_000 < caught.value.size < 12_500  # the text, the ids and the role, at least
        assert session.version == 1


@pytest.mark.parametrize(
    "text", ["x" * 9_500, "é" * 4_750, "😀" * 2_375], ids=["ascii", "2-byte", "4-byte"]
)
def test_text_just_under_the_limit_is_still_appended(backend: Backend, text: str) -> None:
    with SessionStore(backend.url, max_payload_bytes=10_000) as limited:
        session = limited.create_session(model="m")
        session.append_user("go")
        session.append_assistant("", tool_calls=[ToolCall(id="c1", name="bash", input={})])

        session.append_user(text)
        session.append_tool_result("c1", text)

        assert session.version == 5
        assert limited.verify(session.id).ok


def test_content_counts_by_its_utf8_bytes_not_by_its_json_escaping(backend: Backend) -> None:
    """Control characters are 1 byte of UTF-8 and 6 of JSON (`\\u0001`): a message's text is a
    body, stored and measured as its UTF-8 bytes, so 6,000 of them fit a 10,000-byte limit and
    7,000 of them plus the event's own JSON do not."""
    with SessionStore(backend.url, max_payload_bytes=10_000) as limited:
        session = limited.create_session(model="m")
        message = session.append_user("\x01" * 6_000)
        before = backend.table_rows()

        with pytest.raises(PayloadTooLarge, match="payload is 10,"):
            session.append_user("\x01" * 9_900)

        assert backend.table_rows() == before
        resumed = limited.session(session.id).context().messages[-1].parts[0]
        assert resumed.text == "\x01" * 6_000  # type: ignore[union-attr]
        assert message.parts[0].text == "\x01" * 6_000  # type: ignore[union-attr]


pieces = st.lists(
    st.tuples(st.sampled_from(["a", "é", "漢", "😀", "\x01", '"', "\n"]), st.integers(0, 900)),
    max_size=4,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(runs=pieces)
def test_the_early_check_refuses_exactly_what_the_exact_check_refuses(
    sqlite_backend: Backend, monkeypatch: pytest.MonkeyPatch, runs: list[tuple[str, int]]
) -> None:
    """The same message, appended with the early check and with it switched off: refused by
    both or by neither, so the early check is never stricter than the limit."""
    text = "".join(char * count for char, count in runs)

    def outcome(limited: SessionStore) -> str:
        session = limited.create_session(model="m")
        try:
            session.append_user(text)
        except PayloadTooLarge:
            return "refused"
        return "appended"

    with SessionStore(sqlite_backend.url, max_payload_bytes=2_000) as limited:
        with_check = outcome(limited)
        with monkeypatch.context() as patched:
            patched.setattr(store_session, "check_text_size", lambda *_args: None)
            without_check = outcome(limited)

    assert with_check == without_check


def test_an_output_over_the_old_16_mib_limit_is_stored_whole_and_shown_cut(
    backend: Backend,
) -> None:
    """The default store takes what the earlier one refused: the original is a compressed body,
    the model is shown the truncated view (the only text counted at append), and a restore
    brings back every byte, counted then."""
    output = "".join(
        f"{n:08d} compiling crate_{n % 977} v0.{n % 13}.{n % 7}\n" for n in range(480_000)
    )
    assert len(output) > 16 * 1024 * 1024
    with SessionStore(backend.url) as default:
        s = default.create_session(model="m")
        s.append_assistant("", tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "make"})])
        part = s.append_tool_result("c1", output).parts[0]
        assert part.truncation is not None and part.truncation.output_tokens is None  # type: ignore[union-attr]
        assert len(part.truncation.shown.encode()) < 52 * 1024  # type: ignore[union-attr]
        resumed = default.session(s.id)
        event = resumed.restore([part.id])
        assert event is not None
        restored = resumed.context().messages[-1].parts[0]
        assert restored.output == output  # type: ignore[union-attr]
        assert default.verify(s.id).ok
