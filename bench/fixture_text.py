"""The texts a coding agent's tools print, generated: source files, test runs, type checks,
builds, searches and listings, with the noise real ones carry (collection banners, progress
dots, warnings summaries, compiler notes), so the decisive lines sit where real ones do.

Deterministic for a given `random.Random`: `bench.make_fixtures` builds the benchmark's
transcripts from it, and the same seed always gives the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

WORDS = [
    "account",
    "amount",
    "balance",
    "batch",
    "cache",
    "currency",
    "entry",
    "export",
    "filter",
    "journal",
    "ledger",
    "line",
    "period",
    "posting",
    "rate",
    "report",
    "row",
    "rule",
    "schema",
    "source",
    "split",
    "statement",
    "tag",
    "total",
    "value",
]


def name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def python_module(rng: random.Random, path: str, functions: int) -> str:
    """A Python module of `functions` typed, documented functions (and one dataclass)."""
    cls = "".join(word.title() for word in name(rng).split("_"))
    lines = [
        f'"""{path.rsplit("/", 1)[-1][:-3].replace("_", " ")}: part of the ledger package."""',
        "",
        "from __future__ import annotations",
        "",
        "import csv",
        "import logging",
        "from dataclasses import dataclass, field",
        "from decimal import Decimal, InvalidOperation",
        "from pathlib import Path",
        "",
        "log = logging.getLogger(__name__)",
        "",
        "",
        "@dataclass(frozen=True)",
        f"class {cls}:",
        f'    """One {cls.lower()} as read from a bank export."""',
        "",
    ]
    for _ in range(rng.randrange(3, 7)):
        lines.append(f"    {name(rng)}: {rng.choice(['str', 'Decimal', 'int', 'str | None'])}")
    lines += ["    tags: tuple[str, ...] = field(default=())", "", ""]
    for _ in range(functions):
        fn, arg = name(rng, 3), name(rng, 1)
        lines += [
            f"def {fn}({arg}: str, *, strict: bool = False) -> Decimal | None:",
            f'    """Parse the {arg} column of a row; `None` when it is empty and not strict."""',
            f"    text = {arg}.strip().replace('\\u00a0', '')",
            "    if not text:",
            "        if strict:",
            f'            raise ValueError("empty {arg}")',
            "        return None",
            "    try:",
            f"        value = Decimal(text) * {rng.randrange(1, 100)}",
            "    except InvalidOperation:",
            f'        log.warning("cannot parse %r as {arg}", text)',
            "        raise",
            f"    if value < {rng.randrange(0, 50)}:",
            f"        return value.quantize(Decimal('0.{'0' * rng.randrange(1, 4)}1'))",
            "    return value",
            "",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def rust_module(rng: random.Random, path: str, functions: int) -> str:
    """A Rust module of `functions` functions and a test module."""
    ty = "".join(word.title() for word in name(rng).split("_"))
    lines = [
        f"//! {path.rsplit('/', 1)[-1]}: tiles, chunks and their indices.",
        "",
        "use std::collections::HashMap;",
        "use crate::chunk::{Chunk, CHUNK};",
        "",
        "#[derive(Debug, Clone, PartialEq)]",
        f"pub struct {ty} {{",
    ]
    for _ in range(rng.randrange(3, 7)):
        lines.append(f"    pub {name(rng)}: {rng.choice(['u32', 'u16', 'i64', 'String', 'f32'])},")
    lines += ["}", ""]
    for _ in range(functions):
        fn = name(rng, 3)
        lines += [
            f"/// Index of a tile in {fn.replace('_', ' ')} order.",
            f"pub fn {fn}(x: u32, y: u32, chunks: &HashMap<u32, Chunk>) -> Option<u32> {{",
            "    let chunk = chunks.get(&(x / CHUNK))?;",
            f"    let idx = (x % CHUNK) * CHUNK + (y % CHUNK) + {rng.randrange(1, 64)};",
            "    if idx as usize >= chunk.tiles.len() {",
            "        return None;",
            "    }",
            "    Some(idx)",
            "}",
            "",
        ]
    lines += ["#[cfg(test)]", "mod tests {", "    use super::*;", ""]
    for _ in range(rng.randrange(2, 5)):
        lines += [
            "    #[test]",
            f"    fn {name(rng, 2)}() {{",
            f"        assert_eq!({rng.randrange(100)} % CHUNK, {rng.randrange(100)} % CHUNK);",
            "    }",
            "",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def numbered(text: str, start: int = 1) -> str:
    """A file as Claude Code's Read shows it: `cat -n` numbers and an arrow."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(text.splitlines(), start))


@dataclass(frozen=True)
class Failure:
    """A failing run: its full log, the test or location that failed, and why."""

    log: str
    target: str
    message: str


def _warnings(rng: random.Random, root: str, count: int) -> list[str]:
    lines = ["=============================== warnings summary ==============================="]
    for _ in range(count):
        lib = rng.choice(["dateutil/tz/tz.py:37", "pandas/core/frame.py:712", "babel/dates.py:91"])
        lines += [
            f".venv/lib/python3.12/site-packages/{lib}",
            f"  {root}/.venv/lib/python3.12/site-packages/{lib}: DeprecationWarning: "
            "datetime.datetime.utcfromtimestamp() is deprecated and scheduled for removal in a "
            "future version. Use timezone-aware objects to represent datetimes in UTC: "
            "datetime.datetime.fromtimestamp(timestamp, datetime.UTC).",
            "",
        ]
    lines.append("-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html")
    return lines


def _progress(rng: random.Random, files: list[str], total: int, failing: str | None) -> list[str]:
    lines, done = [], 0
    for n, path in enumerate(files):
        count = rng.randrange(8, 60)
        marks = ["."] * count
        if failing is not None and path == failing:
            marks[rng.randrange(count)] = "F"
        done = min(total, done + count) if n < len(files) - 1 else total
        lines.append(f"{path} {''.join(marks):<56}[{done * 100 // total:>3}%]")
    return lines


def pytest_header(root: str, collected: int) -> list[str]:
    return [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        f"rootdir: {root}",
        "configfile: pyproject.toml",
        "plugins: cov-5.0.0, xdist-3.6.1, hypothesis-6.108.5, anyio-4.4.0",
        f"collected {collected} items",
        "",
    ]


def pytest_failure(
    rng: random.Random, root: str, test_files: list[str], test_file: str, test: str, got: str
) -> Failure:
    """A failing pytest run: progress, the failure with its source and a library traceback,
    a warnings summary, the short summary and the total."""
    collected = rng.randrange(380, 460)
    lines = pytest_header(root, collected) + _progress(rng, test_files, collected, test_file)
    expected = f"Decimal('{rng.randrange(1, 9999)}.{rng.randrange(10, 99)}')"
    message = f"AssertionError: assert {got} == {expected}"
    lines += [
        "",
        "=================================== FAILURES ===================================",
        f"{'_' * 20} {test} {'_' * 20}",
        "",
        f"    def {test}():",
        '        rows = list(read_rows(FIXTURES / "export_de.csv", dialect="semicolon"))',
        f"        assert len(rows) == {rng.randrange(3, 40)}",
        ">       assert parse_amount(rows[0].amount) == " + expected,
        f"E       AssertionError: assert {got} == {expected}",
        f"E        +  where {got} = parse_amount('{rng.randrange(1, 9)}.234,56')",
        "E        +    where '1.234,56' = Row(date='2024-03-01', amount='1.234,56').amount",
        "",
        f"{test_file}:{rng.randrange(20, 300)}: AssertionError",
        "----------------------------- Captured log call ------------------------------",
    ]
    for _ in range(rng.randrange(2, 10)):
        lines.append(
            f"WARNING  ledger.csv_import:csv_import.py:{rng.randrange(40, 400)} cannot parse "
            f"'{rng.randrange(1000)},{rng.randrange(10, 99)}' as amount"
        )
    lines += _warnings(rng, root, rng.randrange(3, 12))
    lines += [
        "=========================== short test summary info ============================",
        f"FAILED {test_file}::{test} - {message}",
        f"============ 1 failed, {collected - 1} passed, 14 warnings in "
        f"{rng.uniform(2, 9):.2f}s ============",
    ]
    return Failure("\n".join(lines), f"{test_file}::{test}", message)


def pytest_pass(
    rng: random.Random, root: str, test_files: list[str], verbose: bool, per_file: int = 40
) -> str:
    """A passing run; `verbose` lists each test (between 8 and `per_file` of them per file)."""
    collected = rng.randrange(380, 460)
    lines = pytest_header(root, collected)
    if verbose:
        for path in test_files:
            for _ in range(rng.randrange(8, per_file)):
                lines.append(f"{path}::test_{name(rng, 3)} PASSED")
    else:
        lines += _progress(rng, test_files, collected, None)
    lines += ["", *_warnings(rng, root, rng.randrange(1, 5))]
    lines.append(
        f"============ {collected} passed, 14 warnings in {rng.uniform(2, 9):.2f}s ============"
    )
    return "\n".join(lines)


def mypy_errors(rng: random.Random, paths: list[str]) -> Failure:
    lines = []
    for path in paths:
        line = rng.randrange(10, 400)
        lines.append(
            f'{path}:{line}: error: Argument 1 to "parse_amount" has incompatible type '
            '"str | None"; expected "str"  [arg-type]'
        )
        lines.append(f"{path}:{line}: note: See https://mypy.rtfd.io/en/stable/_refs.html")
    lines.append(f"Found {len(paths)} errors in {len(paths)} files (checked 41 source files)")
    return Failure("\n".join(lines), paths[0], lines[0])


def python_traceback(rng: random.Random, root: str, module: str, key: str) -> Failure:
    lines = [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "<frozen runpy>", line 88, in _run_code',
        f'  File "{root}/src/ledger/__main__.py", line 4, in <module>',
        "    main()",
        f'  File "{root}/.venv/lib/python3.12/site-packages/click/core.py", line 1157, in __call__',
        "    return self.main(*args, **kwargs)",
        f'  File "{root}/.venv/lib/python3.12/site-packages/click/core.py", line 1078, in main',
        "    rv = self.invoke(ctx)",
        f'  File "{root}/{module}", line {rng.randrange(40, 300)}, in read_rows',
        f'    amount = row["{key}"]',
        "             ~~~^^^^^^^^^^",
        f"KeyError: '{key}'",
    ]
    return Failure("\n".join(lines), module, lines[-1])


def cargo_build_error(rng: random.Random, root: str, path: str) -> Failure:
    line = rng.randrange(20, 300)
    lines = [f"   Compiling {crate} v1.0.{rng.randrange(200)}" for crate in ("serde", "rand_core")]
    lines += [
        f"   Compiling tilemap v0.3.0 ({root})",
        "warning: unused import: `std::collections::HashMap`",
        " --> src/render.rs:3:5",
        "  |",
        "3 | use std::collections::HashMap;",
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^",
        "  |",
        "  = note: `#[warn(unused_imports)]` on by default",
        "",
        "error[E0308]: mismatched types",
        f"  --> {path}:{line}:24",
        "   |",
        f"{line} |         let idx: u16 = x * CHUNK + y;",
        "   |                  ---   ^^^^^^^^^^^^^ expected `u16`, found `u32`",
        "   |                  |",
        "   |                  expected due to this",
        "   |",
        "help: you can convert a `u32` to a `u16` and panic if the converted value doesn't fit",
        "   |",
        f"{line} |         let idx: u16 = (x * CHUNK + y).try_into().unwrap();",
        "   |                        +             +++++++++++++++++++++",
        "",
        "For more information about this error, try `rustc --explain E0308`.",
        "warning: `tilemap` (lib) generated 1 warning",
        "error: could not compile `tilemap` (lib) due to 1 previous error; 1 warning emitted",
    ]
    return Failure("\n".join(lines), f"{path}:{line}", "error[E0308]: mismatched types")


def cargo_test_failure(rng: random.Random, tests: list[str], failing: str) -> Failure:
    lines = [
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s",
        "     Running unittests src/lib.rs (target/debug/deps/tilemap-3f9e2c1a7b)",
        "",
        f"running {len(tests)} tests",
    ]
    lines += [f"test {t} ... {'FAILED' if t == failing else 'ok'}" for t in tests]
    left, right = rng.randrange(1000, 9000), rng.randrange(0, 10)
    panic = f"thread '{failing}' panicked at src/chunk.rs:{rng.randrange(100, 200)}:9:"
    lines += [
        "",
        "failures:",
        "",
        f"---- {failing} stdout ----",
        panic,
        "assertion `left == right` failed",
        f"  left: {left}",
        f" right: {right}",
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "",
        "failures:",
        f"    {failing}",
        "",
        f"test result: FAILED. {len(tests) - 1} passed; 1 failed; 0 ignored; 0 measured; "
        f"0 filtered out; finished in 0.0{rng.randrange(1, 9)}s",
        "",
        "error: test failed, to rerun pass `--lib`",
    ]
    return Failure("\n".join(lines), failing, panic)


def cargo_test_pass(rng: random.Random, tests: list[str]) -> str:
    lines = [
        "   Compiling tilemap v0.3.0 (/home/dev/tilemap)",
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.87s",
        "     Running unittests src/lib.rs (target/debug/deps/tilemap-3f9e2c1a7b)",
        "",
        f"running {len(tests)} tests",
        *(f"test {t} ... ok" for t in tests),
        "",
        f"test result: ok. {len(tests)} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; "
        f"finished in 0.0{rng.randrange(1, 9)}s",
        "",
        "   Doc-tests tilemap",
        "",
        "running 0 tests",
        "",
        "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
    ]
    return "\n".join(lines)


def search_hits(rng: random.Random, paths: list[str], pattern: str, hits: int) -> str:
    return "\n".join(
        f"{rng.choice(paths)}:{rng.randrange(1, 400)}:    value = {pattern}(row.amount, "
        "strict=True)"
        for _ in range(hits)
    )


def find_listing(rng: random.Random, root: str, entries: int) -> str:
    """What `find .` prints for a project with a virtualenv and caches: the paste that fills
    a small window by itself."""
    folders = [
        "src/ledger",
        "tests",
        "tests/fixtures",
        "docs",
        ".venv/lib/python3.12/site-packages",
    ]
    lines = ["."]
    for _ in range(entries):
        folder = rng.choice(folders)
        if folder.startswith(".venv"):
            package = rng.choice(["pandas", "numpy", "dateutil", "babel", "click", "pytest"])
            leaf = f"{package}/{name(rng, 1)}/{name(rng, 2)}.py"
        else:
            leaf = f"{name(rng, 2)}.{rng.choice(['py', 'csv', 'md', 'pyc'])}"
        lines.append(f"./{folder}/{leaf}")
    return "\n".join(lines)
