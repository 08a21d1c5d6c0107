"""The artifact trail on hand-built sessions of each agent family, with exact expected trails."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.events import (
    ContentRedacted,
    Message,
    MessagesReverted,
    Native,
    OutputsPruned,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.projections import (
    DEFAULT_TOOLS,
    ArtifactFold,
    ArtifactTrail,
    CommandRun,
    ErrorSeen,
    FileArtifact,
    TodoItem,
    ToolMap,
    ToolSpec,
    UserRequest,
    artifact_trail,
    decisive_lines,
)
from tests.builders import compaction
from tests.projections.log import Log


class Agent:
    """A log written the way an agent loop writes it: a call, then its result."""

    def __init__(self) -> None:
        self.log = Log()
        self.n = 0

    def user(self, text: str, native: Native | None = None) -> str:
        self.n += 1
        mid = f"u{self.n}"
        part = TextPart(id=f"{mid}.t", text=text)
        self.log.message(Message(id=mid, role="user", parts=(part,), native=native))
        return mid

    def run(
        self, name: str, arguments: object, output: str = "", *, error: bool = False
    ) -> tuple[int, int]:
        """Call `name` and answer it; (seq of the call, seq of the result)."""
        self.n += 1
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = ToolCallPart(id=f"a{self.n}.c", call_id=f"c{self.n}", name=name, arguments=text)
        self.log.message(Message(id=f"a{self.n}", role="assistant", parts=(call,)))
        result = ToolResultPart(
            id=f"t{self.n}.r", call_id=f"c{self.n}", name=name, output=output, is_error=error
        )
        self.log.message(Message(id=f"t{self.n}", role="tool", parts=(result,)))
        return len(self.log.events) - 1, len(self.log.events)

    def trail(self, at: int | None = None, tools: ToolMap | None = None) -> ArtifactTrail:
        return artifact_trail(self.log.events, at, tools=tools)


def files_of(trail: ArtifactTrail) -> dict[str, tuple[tuple[str, int], ...]]:
    return {file.path: file.actions for file in trail.files}


# the families


def test_claude_code_files_commands_todos_and_injected_messages() -> None:
    agent = Agent()
    agent.user("Add a CHANGELOG and fix the notebook.")  # seq 2
    agent.user("<system-reminder>\nThe date is 2025-08-27.\n</system-reminder>")  # 3
    agent.user("<command-name>/clear</command-name>")  # 4
    agent.user("Keep the old API.", native=Native(api="claude-code", value={"isMeta": True}))  # 5
    agent.run("Read", {"file_path": "/w/src/app.py"}, "     1→import os")  # 6, 7
    agent.run("Write", {"file_path": "/w/CHANGELOG.md", "content": "# 1.0"}, "File created")  # 9
    agent.run("Write", {"file_path": "/w/CHANGELOG.md", "content": "# 1.1"}, "File updated")  # 11
    agent.run("Edit", {"file_path": "/w/src/app.py", "old_string": "a", "new_string": "b"})  # 13
    agent.run("MultiEdit", {"file_path": "/w/src/app.py", "edits": []})  # 15
    agent.run("NotebookEdit", {"notebook_path": "/w/nb.ipynb", "new_source": "x"})  # 17
    agent.run("Glob", {"pattern": "**/*.py"}, "/w/src/app.py")  # 19: names no file
    agent.run("Bash", {"command": "rm /w/old.txt && ls"}, "app.py")  # 21
    todos = [{"content": "Write it", "status": "in_progress", "activeForm": "Writing it"}]
    agent.run("TodoWrite", {"todos": todos}, "Todos have been modified")  # 23
    todos = [
        {"content": "Write it", "status": "completed", "activeForm": "Writing it"},
        {"content": "Test it", "status": "pending", "activeForm": "Testing it"},
    ]
    agent.run("TodoWrite", {"todos": todos}, "Todos have been modified")  # 25
    trail = agent.trail()
    assert trail.files == (
        FileArtifact(
            "/w/src/app.py", "modified", 15, 3, (("read", 7), ("modified", 13), ("modified", 15))
        ),
        FileArtifact("/w/CHANGELOG.md", "modified", 11, 2, (("created", 9), ("modified", 11))),
        FileArtifact("/w/nb.ipynb", "modified", 17, 1, (("modified", 17),)),
        FileArtifact("/w/old.txt", "deleted", 21, 1, (("deleted", 21),)),
    )
    assert [file.path for file in trail.changed_files] == [
        "/w/src/app.py",
        "/w/CHANGELOG.md",
        "/w/nb.ipynb",
        "/w/old.txt",
    ]
    assert trail.commands == (
        CommandRun(20, "c12", "Bash", "rm /w/old.txt && ls", 21, None, True, ""),
    )
    assert trail.todos == (TodoItem("Write it", "completed"), TodoItem("Test it", "pending"))
    assert trail.todos_seq == 25
    assert trail.user_messages == (
        UserRequest(2, "u1", "Add a CHANGELOG and fix the notebook."),
        UserRequest(
            3, "u2", "<system-reminder>\nThe date is 2025-08-27.\n</system-reminder>", True
        ),
        UserRequest(4, "u3", "<command-name>/clear</command-name>", True),
        UserRequest(5, "u4", "Keep the old API.", True),
    )
    assert [r.text for r in trail.requests] == ["Add a CHANGELOG and fix the notebook."]
    assert trail.tool_calls == (
        ("TodoWrite", 2),
        ("Write", 2),
        ("Bash", 1),
        ("Edit", 1),
        ("Glob", 1),
        ("MultiEdit", 1),
        ("NotebookEdit", 1),
        ("Read", 1),
    )
    assert trail.errors == ()


def test_a_message_mixing_a_reminder_and_the_users_words_keeps_only_the_words() -> None:
    log = Log()
    parts = (
        TextPart(id="u.1", text="<system-reminder>Todo list is empty</system-reminder>"),
        TextPart(id="u.2", text="Now rename parse to parse_date."),
    )
    log.message(Message(id="u", role="user", parts=parts))
    [request] = artifact_trail(log.events).user_messages
    assert request == UserRequest(2, "u", "Now rename parse to parse_date.")


CODEX_PATCH = """*** Begin Patch
*** Add File: docs/usage.md
+# Usage
*** Update File: src/parse.py
*** Move to: src/dates/parse.py
@@ def parse(text):
-    return None
+    return text
*** Update File: src/cli.py
@@
-import parse
+from dates import parse
*** Delete File: src/legacy.py
*** End Patch
"""


def test_codex_apply_patch_shell_plan_and_environment_context() -> None:
    agent = Agent()
    agent.user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")  # 2
    agent.user("<turn_aborted>", native=Native(api="codex.injected", value={}))  # 3
    agent.user("Move parse into a dates package.")  # 4
    agent.run("apply_patch", CODEX_PATCH, "Success. Updated the following files: ...")  # 5, 6
    shell = {"command": ["bash", "-lc", "pytest -q"], "workdir": "/w"}
    output = "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n"
    output += "E   ImportError: cannot import name 'parse'\n"
    agent.run("shell", shell, output)  # 7, 8
    envelope = {
        "output": "3 passed in 0.02s\n",
        "metadata": {"exit_code": 0, "duration_seconds": 0.3},
    }
    agent.run("shell", {"command": ["pytest", "-q"]}, json.dumps(envelope))  # 9, 10
    agent.run(
        "exec_command", {"cmd": "git status --short"}, "Process exited with code 0\nOutput:\n"
    )  # 12
    plan = {
        "explanation": "",
        "plan": [
            {"step": "Move", "status": "completed"},
            {"step": "Test", "status": "in_progress"},
        ],
    }
    agent.run("update_plan", plan, "Plan updated")  # 14
    trail = agent.trail()
    assert files_of(trail) == {
        "docs/usage.md": (("created", 6),),
        "src/parse.py": (("deleted", 6),),
        "src/dates/parse.py": (("created", 6),),
        "src/cli.py": (("modified", 6),),
        "src/legacy.py": (("deleted", 6),),
    }
    assert [(c.command, c.exit_code, c.ok) for c in trail.commands] == [
        ("pytest -q", 1, False),
        ("pytest -q", 0, True),
        ("git status --short", 0, True),
    ]
    assert trail.errors == (
        ErrorSeen(
            8,
            "c5",
            "shell",
            "pytest -q",
            "E   ImportError: cannot import name 'parse'",
            "pytest",
            1,
            10,
        ),
    )
    assert trail.todos == (TodoItem("Move", "completed"), TodoItem("Test", "in_progress"))
    assert [(r.seq, r.injected) for r in trail.user_messages] == [(2, True), (3, True), (4, False)]


def test_codex_apply_patch_through_the_shell_tool() -> None:
    agent = Agent()
    agent.run("shell", {"command": ["apply_patch", CODEX_PATCH]}, "Done!")
    trail = agent.trail()
    assert [f.path for f in trail.changed_files] == [
        "docs/usage.md",
        "src/parse.py",
        "src/dates/parse.py",
        "src/cli.py",
        "src/legacy.py",
    ]
    assert [c.command for c in trail.commands] == ["apply_patch"]


def test_pi_tools_and_its_exit_code_line() -> None:
    agent = Agent()
    agent.run("read", {"path": "/w/README.md"}, "# w")  # 3
    agent.run("write", {"path": "/w/notes.md", "content": "x"}, "Wrote 1 bytes")  # 5
    agent.run("edit", {"path": "/w/README.md", "oldText": "w", "newText": "W"}, "Edited")  # 7
    output = "src/main.c:3:5: error: use of undeclared identifier 'y'\n\nCommand exited with code 2"
    agent.run("bash", {"command": "make"}, output, error=True)  # 9
    trail = agent.trail()
    assert files_of(trail) == {
        "/w/README.md": (("read", 3), ("modified", 7)),
        "/w/notes.md": (("created", 5),),
    }
    assert trail.commands == (
        CommandRun(
            8,
            "c4",
            "bash",
            "make",
            9,
            2,
            False,
            "src/main.c:3:5: error: use of undeclared identifier 'y'",
        ),
    )
    assert [(e.kind, e.fixed_by_seq) for e in trail.errors] == [("compiler", None)]
    assert trail.open_errors == trail.errors


def test_opencode_tools() -> None:
    agent = Agent()
    agent.run("read", {"filePath": "/w/a.ts"}, "<file>")  # 3
    agent.run("edit", {"filePath": "/w/a.ts", "oldString": "a", "newString": "b"}, "")  # 5
    agent.run("write", {"filePath": "/w/b.ts", "content": ""}, "")  # 7
    todos = [{"content": "Ship", "status": "pending", "priority": "high", "id": "1"}]
    agent.run("todowrite", {"todos": todos}, "[]")  # 9
    agent.run("bash", {"command": "npm test", "description": "tests"}, "ok")  # 11
    trail = agent.trail()
    assert files_of(trail) == {
        "/w/a.ts": (("read", 3), ("modified", 5)),
        "/w/b.ts": (("created", 7),),
    }
    assert (trail.todos, trail.todos_seq) == ((TodoItem("Ship", "pending"),), 9)
    assert [c.command for c in trail.commands] == ["npm test"]


def test_openai_style_names_and_the_text_editor_tool() -> None:
    agent = Agent()
    agent.run("read_file", {"filename": "notes/todo.txt"}, "buy milk")  # 3
    agent.run("write_file", {"file": "out.csv", "content": "a,b"}, "ok")  # 5
    agent.run("run", {"cmd": "python -m pytest tests/test_io.py"}, "1 passed")  # 7
    editor = "str_replace_based_edit_tool"
    agent.run(editor, {"command": "create", "path": "/r/x.py", "file_text": ""}, "")  # 9
    agent.run(editor, {"command": "view", "path": "/r/x.py"}, "")  # 11
    agent.run(editor, {"command": "str_replace", "path": "/r/x.py"}, "")  # 13
    agent.run("delete_file", {"path": "out.csv"}, "deleted")  # 15
    trail = agent.trail()
    assert files_of(trail) == {
        "notes/todo.txt": (("read", 3),),
        "out.csv": (("created", 5), ("deleted", 15)),
        "/r/x.py": (("created", 9), ("read", 11), ("modified", 13)),
    }
    assert [(c.command, c.ok) for c in trail.commands] == [
        ("python -m pytest tests/test_io.py", True)
    ]


def test_a_write_after_a_delete_creates_again_and_a_failed_write_writes_nothing() -> None:
    agent = Agent()
    agent.run("Write", {"file_path": "/w/a"}, "")  # 3
    agent.run("Bash", {"command": "rm -f /w/a"}, "")  # 5
    agent.run("Write", {"file_path": "/w/b"}, "EACCES: permission denied", error=True)  # 7
    agent.run("Write", {"file_path": "/w/a"}, "")  # 9
    trail = agent.trail()
    assert files_of(trail) == {"/w/a": (("created", 3), ("deleted", 5), ("created", 9))}
    [error] = trail.errors
    assert (error.target, error.decisive, error.fixed_by_seq) == (
        "/w/b",
        "EACCES: permission denied",
        None,
    )


def test_a_shell_line_that_is_not_plain_deletes_nothing() -> None:
    agent = Agent()
    agent.run("Bash", {"command": "rm -rf build/*"}, "")
    agent.run("Bash", {"command": "rm $TMP/x"}, "")
    agent.run("Bash", {"command": "find . -name '*.pyc' | xargs rm"}, "")
    assert agent.trail().files == ()


def test_the_map_is_extended_for_an_agents_own_tools() -> None:
    agent = Agent()
    agent.run("save_doc", {"target": "/d/report.md"}, "saved")
    agent.run("sh", {"line": "make docs"}, "done")
    assert agent.trail().files == ()
    tools = DEFAULT_TOOLS.extended(
        {"save_doc": {"kind": "write", "keys": ["target"]}, "sh": ToolSpec("command", ("line",))}
    )
    trail = agent.trail(tools=tools)
    assert files_of(trail) == {"/d/report.md": (("created", 3),)}
    assert [c.command for c in trail.commands] == ["make docs"]
    assert DEFAULT_TOOLS.spec("todowrite") == ToolSpec("todos", ("todos",))
    assert DEFAULT_TOOLS.spec("read") == ToolSpec("read", ("path", "filePath"))


# errors and their decisive lines


PYTEST_OUTPUT = (
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\n"
    "rootdir: /home/dev/dateparse\nconfigfile: pyproject.toml\nplugins: hypothesis-6.112.0\n"
    "collected 48 items\n\n"
    "tests/test_core.py ........................................               [ 83%]\n"
    "tests/test_parser.py .......F                                              [100%]\n\n"
    "=================================== FAILURES ===================================\n"
    "_______________________________ test_parse_dates _______________________________\n\n"
    "    def test_parse_dates():\n"
    ">       assert parse('2024-03-10T02:30:00-05:00').utcoffset() == timedelta(hours=-5)\n"
    "E       AssertionError: assert None == datetime.timedelta(days=-1, seconds=68400)\n"
    "E        +  where None = <built-in method utcoffset of datetime.datetime object>()\n\n"
    "tests/test_parser.py:4: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_parser.py::test_parse_dates - AssertionError: assert None == ...\n"
    "========================= 1 failed, 47 passed in 0.31s =========================\n"
)


def test_a_pytest_failure_keeps_the_failing_assertion_not_the_header() -> None:
    decisive = decisive_lines(PYTEST_OUTPUT)
    assert decisive.kind == "pytest"
    assert decisive.text == (
        "E       AssertionError: assert None == datetime.timedelta(days=-1, seconds=68400)\n"
        "E        +  where None = <built-in method utcoffset of datetime.datetime object>()\n"
        "tests/test_parser.py:4: AssertionError\n"
        "FAILED tests/test_parser.py::test_parse_dates - AssertionError: assert None == ...\n"
        "========================= 1 failed, 47 passed in 0.31s ========================="
    )
    assert "platform linux" not in decisive.text and "collected" not in decisive.text


TRACEBACK = (
    "Loading config from /etc/app.toml\nConnecting to the cache at localhost:6379\n"
    * 4
    + "Traceback (most recent call last):\n"
    '  File "/w/app.py", line 40, in <module>\n'
    "    main()\n"
    '  File "/w/app.py", line 12, in main\n'
    "    rows = load(path)\n"
    '  File "/w/loader.py", line 7, in load\n'
    "    return json.loads(text)['rows']\n"
    "KeyError: 'rows'\n"
)


def test_a_traceback_keeps_its_last_frame_and_the_exception() -> None:
    decisive = decisive_lines(TRACEBACK)
    assert (decisive.kind, decisive.text) == (
        "traceback",
        "File \"/w/loader.py\", line 7, in load\nreturn json.loads(text)['rows']\nKeyError: 'rows'",
    )


RUSTC = (
    "   Compiling serde v1.0.204\n" * 8 + "   Compiling dateparse v0.1.0 (/w)\n"
    "error[E0308]: mismatched types\n"
    "  --> src/lib.rs:14:9\n"
    "   |\n"
    "14 |         offset\n"
    "   |         ^^^^^^ expected `i64`, found `i32`\n\n"
    "error: could not compile `dateparse` (lib) due to 1 previous error\n"
)


def test_a_compiler_error_keeps_the_error_lines_and_their_location() -> None:
    decisive = decisive_lines(RUSTC)
    assert (decisive.kind, decisive.text) == (
        "compiler",
        "error[E0308]: mismatched types\n"
        "--> src/lib.rs:14:9\n"
        "error: could not compile `dateparse` (lib) due to 1 previous error",
    )
    assert "Compiling serde" not in decisive.text


def test_decisive_lines_over_their_budget_keep_whole_lines_the_summary_and_the_first_first() -> (
    None
):
    failures = "".join(f"E   assert {n} == {n + 1}\n" for n in range(100))
    decisive = decisive_lines(failures + "FAILED tests/t.py::test_many\n")
    kept = "".join(f"E   assert {n} == {n + 1}\n" for n in range(28))
    assert decisive.text == kept + "FAILED tests/t.py::test_many\n(… 72 more lines left out)"
    assert len(decisive.text) <= 600
    plain = decisive_lines("\n".join(f"line {n}" for n in range(20)))
    assert plain == type(plain)("tail", "line 15\nline 16\nline 17\nline 18\nline 19")


def test_an_output_without_exit_code_fails_by_its_content_only() -> None:
    agent = Agent()
    agent.run("run", {"cmd": "python app.py"}, TRACEBACK)
    agent.run("run", {"cmd": "grep -n error: build.log"}, "12:  note: no error: here")
    agent.run("Bash", {"command": "cargo build"}, "Exit code 0\n" + RUSTC)
    assert [(c.command, c.ok) for c in agent.trail().commands] == [
        ("python app.py", False),
        ("grep -n error: build.log", True),  # no location before `error:`: not a compiler's
        ("cargo build", True),  # it said exit code 0
    ]


def test_a_later_success_of_the_same_test_target_fixes_the_error() -> None:
    agent = Agent()
    _, failed = agent.run(
        "Bash",
        {"command": "pytest tests/test_parser.py::test_dates -x"},
        "Exit code 1\n" + PYTEST_OUTPUT,
        error=True,
    )
    agent.run("Bash", {"command": "pytest tests/test_core.py"}, "3 passed")  # another target
    agent.run("Bash", {"command": "ls"}, "")  # another program
    assert agent.trail().errors[0].fixed_by_seq is None
    _, fixed = agent.run(
        "Bash", {"command": "cd /w && uv run pytest tests/test_parser.py -q"}, "1 passed"
    )
    [error] = agent.trail().errors
    assert (error.seq, error.fixed_by_seq, error.exit_code) == (failed, fixed, 1)


def test_the_whole_suite_passing_fixes_a_test_failure_but_not_a_build() -> None:
    agent = Agent()
    agent.run("Bash", {"command": "pytest tests/a.py"}, "FAILED tests/a.py::t", error=True)
    agent.run("Bash", {"command": "make dist"}, "make: *** [dist] Error 2", error=True)
    agent.run("Bash", {"command": "python -m pytest"}, "9 passed")  # 7
    agent.run("Bash", {"command": "make"}, "")
    assert [e.fixed_by_seq for e in agent.trail().errors] == [7, None]


def test_a_failed_edit_is_fixed_by_a_later_change_of_the_same_file_not_by_a_read() -> None:
    agent = Agent()
    agent.run("Edit", {"file_path": "/w/a.py"}, "String to replace not found", error=True)
    agent.run("Read", {"file_path": "/w/a.py"}, "...")
    assert agent.trail().errors[0].fixed_by_seq is None
    _, fixed = agent.run("Edit", {"file_path": "/w/a.py"}, "ok")
    assert agent.trail().errors[0].fixed_by_seq == fixed


# replay and the log's other events


def test_the_trail_at_an_earlier_seq_is_the_trail_of_then() -> None:
    agent = Agent()
    agent.user("Fix it.")  # 2
    agent.run("Bash", {"command": "pytest"}, "Exit code 1\nE   assert 0", error=True)  # 3, 4
    agent.run("Edit", {"file_path": "/w/a.py"}, "")  # 5, 6
    agent.run("Bash", {"command": "pytest"}, "1 passed")  # 7, 8
    assert agent.trail(at=3).commands == (CommandRun(3, "c2", "Bash", "pytest"),)  # running
    assert agent.trail(at=4).errors[0].fixed_by_seq is None
    assert agent.trail(at=5).files == ()  # the edit has not answered yet
    assert files_of(agent.trail(at=6)) == {"/w/a.py": (("modified", 6),)}
    assert agent.trail(at=8).errors[0].fixed_by_seq == 8
    assert agent.trail(at=6).seq == 6


def test_pruned_compacted_and_reverted_messages_stay_in_the_trail() -> None:
    agent = Agent()
    agent.user("Fix the parser.")  # 2
    agent.run("Read", {"file_path": "/w/p.py"}, "x" * 10_000)  # 3, 4
    agent.run("Edit", {"file_path": "/w/p.py"}, "ok")  # 5, 6
    agent.user("Also the docs.")  # 7
    agent.run("Write", {"file_path": "/w/docs.md"}, "ok")  # 8, 9
    before = agent.trail()
    log = agent.log
    log.add(OutputsPruned(part_ids=("t2.r",), placeholder="[pruned]", tokens_freed=100))
    log.add(compaction("Summary: fixed p.py", "u4", ["u1", "a2", "t2", "a3", "t3"]))
    log.add(MessagesReverted(after_message_id="t3", reverted_message_ids=("u4", "a5", "t5")))
    after = agent.trail()
    assert after.files == before.files and after.commands == before.commands
    assert after.user_messages == (
        UserRequest(2, "u1", "Fix the parser."),
        UserRequest(7, "u4", "Also the docs.", reverted=True),
    )
    assert after.seq == 12


def test_a_redaction_hides_the_redacted_text_in_the_trail() -> None:
    agent = Agent()
    agent.user("my token is hunter2")
    agent.run("Bash", {"command": "curl -H 'token: hunter2' x"}, "401", error=True)
    agent.log.add(ContentRedacted(part_ids=("u1.t", "a2.c"), digests=("0" * 64,), reason="secret"))
    trail = agent.trail()
    assert trail.user_messages[0].text == "[redacted: secret]"
    assert trail.commands[0].command == "[redacted: secret]"
    assert trail.errors[0].target == "[redacted: secret]"


def test_a_result_without_its_call_and_malformed_arguments_are_only_counted() -> None:
    log = Log()
    orphan = ToolResultPart(id="t.r", call_id="nope", name="Bash", output="Exit code 1")
    log.message(Message(id="t", role="tool", parts=(orphan,)))
    bad = ToolCallPart(id="a.c", call_id="c", name="Write", arguments="{not json")
    log.message(Message(id="a", role="assistant", parts=(bad,)))
    trail = artifact_trail(log.events)
    assert (trail.files, trail.commands, trail.errors) == ((), (), ())
    assert trail.tool_calls == (("Write", 1),)


# properties


TOOLS = st.sampled_from(["Bash", "Read", "Write", "Edit", "apply_patch", "shell", "TodoWrite", "x"])
ARGUMENTS = st.one_of(
    st.text(max_size=40),
    st.builds(
        json.dumps,
        st.dictionaries(
            st.sampled_from(["command", "file_path", "todos", "path", "cmd", "input"]),
            st.one_of(
                st.text(max_size=30),
                st.lists(st.text(max_size=10), max_size=3),
                st.lists(st.fixed_dictionaries({"content": st.text(max_size=5)}), max_size=2),
            ),
            max_size=3,
        ),
    ),
    st.just(CODEX_PATCH),
)
OUTPUTS = st.one_of(
    st.text(max_size=60), st.sampled_from([PYTEST_OUTPUT, TRACEBACK, RUSTC, "Exit code 2\n"])
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(max_size=30)),
        st.tuples(TOOLS, ARGUMENTS, OUTPUTS, st.booleans()),
    ),
    max_size=12,
)


def session_of(steps: list[tuple[object, ...]]) -> Agent:
    agent = Agent()
    for step in steps:
        if step[0] == "user":
            agent.user(str(step[1]) or " ")
        else:
            name, arguments, output, error = step
            agent.run(str(name), str(arguments), str(output), error=bool(error))
    return agent


@settings(max_examples=60, deadline=None)
@given(STEPS, st.data())
def test_the_trail_at_k_is_the_trail_of_the_first_k_events(
    steps: list[tuple[object, ...]], data: st.DataObject
) -> None:
    events = session_of(steps).log.events
    k = data.draw(st.integers(min_value=1, max_value=len(events)))
    assert artifact_trail(events[:k]) == artifact_trail(events, at=k)
    fold = ArtifactFold()
    for event in events[:k]:
        fold.apply(event)
    assert fold.trail() == artifact_trail(events, at=k)
