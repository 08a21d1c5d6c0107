"""The last error before a compaction keeps its decisive lines in the summary, whatever else
crowds it out: the failing assertion and the tests' summaries of a pytest run, every distinct
tsc error of a workspace build (printed once per package), a Rust test's panic with its
`left`/`right`, rustc's first error with its location, a Python traceback's exception (not
the first lines of the traceback), Node's `Error:` line above its stack. Outputs shaped like
the tools print them; the lines kept are exact."""

from __future__ import annotations

import pytest

from sessionstore.context._summarize import ExtractiveSummarizer, SummaryAnchors
from sessionstore.context._tokens import count
from sessionstore.events import Message, TextPart, ToolCallPart, ToolResultPart
from sessionstore.projections import artifact_trail, context_of, decisive_lines, fold_events
from sessionstore.projections._summary_text import parse_summary
from tests.projections.log import Log

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0
rootdir: /home/dev/invoice
configfile: pyproject.toml
collected 64 items

tests/test_totals.py ..F.....                                            [ 12%]
tests/test_tax.py .......F..                                             [ 28%]
tests/test_export.py ..............................................      [100%]

=================================== FAILURES ===================================
_____________________________ test_rounds_half_up ______________________________

    def test_rounds_half_up():
>       assert total([Line(2.675, 1)]) == Decimal("2.68")
E       AssertionError: assert Decimal('2.67') == Decimal('2.68')
E        +  where Decimal('2.67') = total([Line(price=2.675, qty=1)])

tests/test_totals.py:18: AssertionError
_____________________________ test_vat_on_discount _____________________________

    def test_vat_on_discount():
        invoice = Invoice(lines=[Line(100, 1)], discount=0.1)
>       assert invoice.vat() == 18
E       assert 20.0 == 18
E        +  where 20.0 = <bound method Invoice.vat of Invoice(lines=[...])>()

tests/test_tax.py:33: AssertionError
=========================== short test summary info ============================
FAILED tests/test_totals.py::test_rounds_half_up - AssertionError: assert Decimal('2.67...
FAILED tests/test_tax.py::test_vat_on_discount - assert 20.0 == 18
========================= 2 failed, 62 passed in 0.84s =========================
"""

TSC = """\

> pi-monorepo@0.0.3 check
> biome check --write . && npm run check --workspaces --if-present

Checked 212 files in 61ms. No fixes applied.

> @mariozechner/pi-agent-core@0.10.2 check
> tsgo --noEmit

../coding-agent/src/core/agent-session.ts(16,58): error TS2305: Module '"@mariozechner/pi-agent-core"' has no exported member 'QueueMode'.
../coding-agent/src/core/agent-session.ts(532,34): error TS2339: Property 'tokensAfter' does not exist on type 'CompactionEntry'.
npm error Lifecycle script `check` failed with error:
npm error code 2
npm error path /home/dev/pi-mono/packages/agent
npm error workspace @mariozechner/pi-agent-core@0.10.2
npm error location /home/dev/pi-mono/packages/agent
npm error command failed
npm error command sh -c tsgo --noEmit

> @mariozechner/pi-coding-agent@0.10.2 check
> tsgo --noEmit

src/core/agent-session.ts(16,58): error TS2305: Module '"@mariozechner/pi-agent-core"' has no exported member 'QueueMode'.
src/core/agent-session.ts(532,34): error TS2339: Property 'tokensAfter' does not exist on type 'CompactionEntry'.
../coding-agent/src/core/agent-session.ts(16,58): error TS2305: Module '"@mariozechner/pi-agent-core"' has no exported member 'QueueMode'.
npm error Lifecycle script `check` failed with error:
npm error code 2


Command exited with code 2
"""  # noqa: E501

CARGO_TEST = """\
   Compiling ledger v0.3.1 (/home/dev/ledger)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 1.92s
     Running unittests src/lib.rs (target/debug/deps/ledger-3f2a9c1b7e4d5a60)

running 12 tests
test parse::tests::parses_amounts ... ok
test parse::tests::rejects_letters ... ok
test balance::tests::carries_over ... FAILED
test balance::tests::opens_at_zero ... ok

failures:

---- balance::tests::carries_over stdout ----
thread 'balance::tests::carries_over' panicked at src/balance.rs:88:9:
assertion `left == right` failed
  left: 1250
 right: 1200
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    balance::tests::carries_over

test result: FAILED. 11 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `--lib`
"""

CARGO_BUILD = """\
   Compiling ledger v0.3.1 (/home/dev/ledger)
error[E0308]: mismatched types
  --> src/balance.rs:41:20
   |
41 |     let carried: i64 = opening.amount;
   |                  ---   ^^^^^^^^^^^^^^ expected `i64`, found `u32`
   |                  |
   |                  expected due to this
   |
help: you can convert a `u32` to an `i64`
   |
41 |     let carried: i64 = opening.amount.into();
   |                                       +++++++

error[E0425]: cannot find value `carry` in this scope
  --> src/balance.rs:57:13
   |
57 |     total + carry
   |             ^^^^^ help: a local variable with a similar name exists: `carried`

Some errors have detailed explanations: E0308, E0425.
For more information about an error, try `rustc --explain E0308`.
error: could not compile `ledger` (lib) due to 2 previous errors
"""

TRACEBACK = """\
Loading settings from /etc/app/config.json
Traceback (most recent call last):
  File "/home/dev/app/loader.py", line 12, in load
    return json.loads(path.read_text())
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.12/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/dev/app/main.py", line 40, in <module>
    main()
  File "/home/dev/app/main.py", line 31, in main
    config = load(args.config)
             ^^^^^^^^^^^^^^^^^
  File "/home/dev/app/loader.py", line 14, in load
    raise ConfigError(f"{path} is not JSON") from error
app.errors.ConfigError: /etc/app/config.json is not JSON
"""

NODE = """\
node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module './theme/theme.js'
Require stack:
- /home/dev/pi-mono/packages/coding-agent/[eval]
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Module.require (node:internal/modules/cjs/loader:1311:19)
    at require (node:internal/modules/helpers:179:18)
    at [eval]:1:30
    at runScriptInThisContext (node:internal/vm:209:10)
    at node:internal/process/execution:118:14 {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/home/dev/pi-mono/packages/coding-agent/[eval]' ]
}

Node.js v23.4.0
Command exited with code 1
"""

KEPT = {
    "pytest": (
        PYTEST,
        "E       AssertionError: assert Decimal('2.67') == Decimal('2.68')\n"
        "E        +  where Decimal('2.67') = total([Line(price=2.675, qty=1)])\n"
        "tests/test_totals.py:18: AssertionError\n"
        "E       assert 20.0 == 18\n"
        "E        +  where 20.0 = <bound method Invoice.vat of Invoice(lines=[...])>()\n"
        "tests/test_tax.py:33: AssertionError\n"
        "FAILED tests/test_totals.py::test_rounds_half_up - AssertionError: assert "
        "Decimal('2.67...\n"
        "FAILED tests/test_tax.py::test_vat_on_discount - assert 20.0 == 18\n"
        "========================= 2 failed, 62 passed in 0.84s =========================",
    ),
    "tsc": (
        TSC,
        "../coding-agent/src/core/agent-session.ts(16,58): error TS2305: Module "
        "'\"@mariozechner/pi-agent-core\"' has no exported member 'QueueMode'.\n"
        "../coding-agent/src/core/agent-session.ts(532,34): error TS2339: Property "
        "'tokensAfter' does not exist on type 'CompactionEntry'.\n"
        "src/core/agent-session.ts(16,58): error TS2305: Module "
        "'\"@mariozechner/pi-agent-core\"' has no exported member 'QueueMode'.\n"
        "src/core/agent-session.ts(532,34): error TS2339: Property 'tokensAfter' does not "
        "exist on type 'CompactionEntry'.",
    ),
    "cargo test": (
        CARGO_TEST,
        "thread 'balance::tests::carries_over' panicked at src/balance.rs:88:9:\n"
        "assertion `left == right` failed\n"
        "left: 1250\n"
        "right: 1200\n"
        "test result: FAILED. 11 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
        "finished in 0.01s\n"
        "error: test failed, to rerun pass `--lib`",
    ),
    "cargo build": (
        CARGO_BUILD,
        "error[E0308]: mismatched types\n"
        "--> src/balance.rs:41:20\n"
        "error[E0425]: cannot find value `carry` in this scope\n"
        "--> src/balance.rs:57:13\n"
        "error: could not compile `ledger` (lib) due to 2 previous errors",
    ),
    "traceback": (
        TRACEBACK,
        'File "/home/dev/app/loader.py", line 14, in load\n'
        'raise ConfigError(f"{path} is not JSON") from error\n'
        "app.errors.ConfigError: /etc/app/config.json is not JSON",
    ),
    "node": (
        NODE,
        "Error: Cannot find module './theme/theme.js'\n"
        "code: 'MODULE_NOT_FOUND',\n"
        "requireStack: [ '/home/dev/pi-mono/packages/coding-agent/[eval]' ]\n"
        "}\n"
        "Node.js v23.4.0\n"
        "Command exited with code 1",
    ),
}


def tokens(text: str) -> int:
    return count(text, "cl100k_base")


class Agent:
    """A session log as an agent loop writes it."""

    def __init__(self) -> None:
        self.log = Log()
        self.n = 0

    def _id(self) -> str:
        self.n += 1
        return f"m{self.n}"

    def user(self, text: str) -> None:
        message_id = self._id()
        part = TextPart(id=f"{message_id}.t", text=text)
        self.log.message(Message(id=message_id, role="user", parts=(part,)))

    def run(self, command: str, output: str, error: bool = False) -> None:
        call_id, message_id = f"c{self.n}", self._id()
        call = ToolCallPart.from_input(
            id=f"{message_id}.c", call_id=call_id, name="Bash", input={"command": command}
        )
        self.log.message(Message(id=message_id, role="assistant", parts=(call,)))
        result_id = self._id()
        part = ToolResultPart(
            id=f"{result_id}.r", call_id=call_id, name="Bash", output=output, is_error=error
        )
        self.log.message(Message(id=result_id, role="tool", parts=(part,)))


@pytest.mark.parametrize("tool", list(KEPT))
def test_the_decisive_lines_of_an_output_are_exactly_these(tool: str) -> None:
    output, kept = KEPT[tool]
    assert decisive_lines(output).text == kept


@pytest.mark.parametrize("tool", list(KEPT))
def test_the_last_error_keeps_every_decisive_line_in_a_crowded_small_summary(tool: str) -> None:
    output, kept = KEPT[tool]
    agent = Agent()
    agent.user("Make the build green again.")
    for n in range(3):  # earlier errors and commands, to crowd the section out
        agent.run(f"make lint{n}", f"error: lint {n} failed\n" + "noise\n" * 50, error=True)
        agent.run(f"make step{n}", "ok\n" * 200)
    agent.run("the failing check", output, error=True)
    messages = context_of(fold_events(agent.log.events)).messages
    anchors = SummaryAnchors(previous=None, trail=artifact_trail(agent.log.events))
    text = ExtractiveSummarizer()(messages, 150, anchors=anchors)
    parsed = parse_summary(text)
    assert parsed is not None and parsed.last_error is not None
    assert parsed.last_error.decisive == kept
    assert f"; not fixed yet ({len(kept):,} characters):\n{kept}\n" in text
    assert "error: lint 0 failed" not in text  # the older errors gave way
