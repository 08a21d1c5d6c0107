"""Through the Session API on every backend: a compaction in a 32k window keeps every request
of a coding session word for word (the session hands the summarizer its usable window, and
the requests get a tenth of it), and a pasted log, the one request too long for its share,
keeps its first line whole."""

from __future__ import annotations

from sessionstore import SessionStore, ToolCall
from sessionstore.projections import parse_summary

FIRST = "Here is the CI log of the failing ARM build; find why it breaks there only."
PASTE = FIRST + "\n" + "".join(f"[{n:05d}] compiling crate_{n} ... ok\n" for n in range(1_500))


def request(n: int) -> str:
    """A request of 600 to 900 characters (longer than a summary used to keep whole)."""
    return f"Step {n}: change the invoice module as follows. " + " ".join(
        f"item {n}.{k} must round half up and keep two decimals;" for k in range(12 + n % 6)
    )


def test_a_32k_compaction_keeps_every_request_word_for_word_and_a_paste_its_first_line(
    store: SessionStore,
) -> None:
    s = store.create_session(model="m", context_window=32_000)
    requests = [request(n) for n in range(8)]
    requests.insert(4, PASTE)
    compactions = 0
    for n, text in enumerate(requests):
        s.append_user(text)
        for k in range(3):
            call = ToolCall(id=f"c{n}.{k}", name="read", input={"path": f"/repo/m{n}{k}.py"})
            s.append_assistant(tool_calls=[call])
            source = "".join(f"def f{j}(x):\n    return x * {j}\n" for j in range(300))
            s.append_tool_result(call.id, output=source)
            compactions += len(s.after_tool_result().compactions)
        s.append_assistant(f"Done with step {n}. " + "Rounding now follows the rules. " * 300)
        compactions += len(s.before_llm_call().compactions)
    assert compactions >= 1
    summary = next(m for m in s.context().messages if m.summary)
    text = summary.parts[0].text  # type: ignore[union-attr]
    parsed = parse_summary(text)
    assert parsed is not None
    shown = {r.seq: r for r in parsed.requests}
    assert len(shown) >= 5
    for entry in shown.values():
        original = next(t for t in requests if t.startswith(entry.text[:80]))
        if original is PASTE:
            assert entry.text.startswith(FIRST + "\n") and entry.length == len(PASTE)
            assert len(entry.text) < len(PASTE)
        else:
            assert entry.text == original  # word for word
