"""Importing a long Claude Code transcript: `python -m bench.import_big [--lines 100000]
[--db sqlite:///... | postgresql://...] [--keep FILE] [--tracemalloc] [--profile FILE]`.

The transcript is generated (deterministic for a seed) in the shape Claude Code writes: one
entry per content block, chained by `parentUuid`; a prompt, then replies whose thinking, text
and tool_use blocks are entries of one response (`message.id`), each call answered by a
tool_result line (`toolUseResult` beside it); progress, file-history-snapshot and system
records between them; about one output in thirty is large (20-60 KB: a file read whole, a
test run's log). Its line sizes follow those of the real transcripts we have (median near a
kilobyte, a long tail), so the tokenizer sees what it sees in real imports.

What it prints: the file (lines, MB, the largest line), the seconds the import took (wall
clock around `SessionStore.import_session`, and the process's CPU seconds, which a machine
shared with other work inflates less), the peak RSS of the process from just before the store
opened (its high-water mark reset there, after the tokenizer's tables loaded) and the RSS then,
with `--tracemalloc` the peak of Python's allocations during the import (slower: the seconds
are then not the figure),
and the events written; then the machine and the command. A second import of the same file is
timed too: it must write nothing. `bench.storage` runs it in a process of its own for its
import rows (`import_rows`).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import machine
from bench.storage_table import OURS, Row
from sessionstore import SessionStore
from sessionstore.context import DEFAULT_ENCODING, load_encoding

SESSION = "4b1f6f0e-2a7d-4c55-9d0b-3e7c1a5f8e21"
_SAID = (
    "the import reads each line of the transcript once and writes its events in batches so "
    "memory follows the longest line def return self value for in if else while try except "
    "class import from path file test assert error warning passed failed module function "
    "ledger account balance total report row schema cache index query session event payload"
)
_WORDS = _SAID.split()


class _Text:
    """Cheap deterministic text: slices of one long pool of words and code-like lines."""

    def __init__(self, rng: random.Random) -> None:
        lines = []
        for n in range(4_000):
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(4, 14)))
            lines.append(f"{n:5d}  {words}" if n % 3 else f"    {words}()")
        self.pool = "\n".join(lines)
        self.rng = rng

    def of(self, size: int) -> str:
        start = self.rng.randrange(0, len(self.pool) - size - 1)
        return self.pool[start : start + size]


def transcript(lines: int, seed: int = 29) -> Iterator[str]:
    """`lines` lines (about) of a Claude Code session, each a JSON object."""
    rng = random.Random(seed)
    text = _Text(rng)
    clock = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    parent: str | None = None
    written = 0

    def line(kind: str, **fields: Any) -> str:
        nonlocal parent, clock, written
        me = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        clock += timedelta(milliseconds=rng.randrange(200, 4_000))
        entry = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/ledger",
            "sessionId": SESSION,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": me,
            "timestamp": clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        }
        parent = me
        written += 1
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))

    def output_size() -> int:
        if rng.random() < 1 / 30:
            return rng.randrange(20_000, 60_000)
        return int(rng.lognormvariate(6.8, 1.0))  # median ~900 bytes

    while written < lines:
        prompt = text.of(rng.randrange(60, 900))
        yield line("user", message={"role": "user", "content": prompt})
        for _ in range(rng.randrange(1, 8)):  # replies of one turn
            response = f"msg_01{rng.getrandbits(88):022x}"
            usage = {
                "input_tokens": rng.randrange(3, 12),
                "cache_creation_input_tokens": rng.randrange(200, 3_000),
                "cache_read_input_tokens": rng.randrange(10_000, 150_000),
                "output_tokens": rng.randrange(20, 900),
            }
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                signature = f"{rng.getrandbits(512):0128x}"
                thinking = text.of(rng.randrange(200, 3_000))
                blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
            if rng.random() < 0.7:
                blocks.append({"type": "text", "text": text.of(rng.randrange(40, 1_500))})
            tools = ("Read", "Bash", "Edit", "Grep")
            calls = [
                (f"toolu_01{rng.getrandbits(96):024x}", rng.choice(tools))
                for _ in range(rng.choice((1, 1, 1, 2, 3)))
            ]
            for call_id, name in calls:
                arguments: dict[str, Any] = {"file_path": f"/home/dev/ledger/src/{call_id[-6:]}.py"}
                if name == "Bash":
                    arguments = {"command": text.of(rng.randrange(20, 200)), "timeout": 120000}
                elif name == "Edit":
                    arguments["old_string"] = text.of(rng.randrange(50, 800))
                    arguments["new_string"] = text.of(rng.randrange(50, 800))
                blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
            for n, block in enumerate(blocks):
                message = {
                    "id": response,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [block],
                    "stop_reason": "tool_use" if n == len(blocks) - 1 else None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                yield line("assistant", message=message, requestId=f"req_{response[6:20]}")
            for call_id, name in calls:
                output = text.of(output_size())
                result = {"tool_use_id": call_id, "type": "tool_result", "content": output}
                used = {"stdout": output[:200], "stderr": "", "interrupted": False}
                content = {"role": "user", "content": [result]}
                yield line("user", message=content, toolUseResult=used if name == "Bash" else {})
                if rng.random() < 0.3:
                    step = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": name}
                    yield line("progress", data=step, toolUseID=call_id, parentToolUseID=call_id)
        if rng.random() < 0.5:
            backups = {
                f"src/{rng.getrandbits(24):06x}.py": {"version": 1, "backupTime": "x"}
                for _ in range(rng.randrange(1, 6))
            }
            snapshot = {"messageId": parent, "trackedFileBackups": backups, "timestamp": "x"}
            yield line("file-history-snapshot", messageId=parent, snapshot=snapshot)
        if rng.random() < 0.2:
            yield line("system", subtype="turn_duration", durationMs=rng.randrange(1, 99_999))


def write_transcript(path: Path, lines: int) -> tuple[int, int, int]:
    """(lines, bytes, longest line in bytes) of the transcript written to `path`."""
    count = size = longest = 0
    with path.open("w", encoding="utf-8") as file:
        for text in transcript(lines):
            raw = text + "\n"
            file.write(raw)
            count += 1
            length = len(raw.encode("utf-8"))
            size += length
            longest = max(longest, length)
    return count, size, longest


def peak_rss_mb() -> float:
    """The process's peak resident memory since `reset_peak_rss` (or since it started)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return _status_kib(status, "VmHWM:") / 1024


def rss_mb() -> float:
    """The process's resident memory now."""
    return _status_kib(Path("/proc/self/status").read_text(), "VmRSS:") / 1024


def reset_peak_rss() -> None:
    """Set the peak to what is resident now (Linux: "5" to clear_refs), so the peak read after
    is the import's own, not that of the tokenizer's load or the transcript's writing."""
    Path("/proc/self/clear_refs").write_text("5")


def _status_kib(status: str, key: str) -> int:
    line = next(line for line in status.splitlines() if line.startswith(key))
    return int(line.split()[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--db", help="the store's URL (default: a SQLite file in a temp dir)")
    parser.add_argument("--keep", type=Path, help="write (or reuse) the transcript here")
    parser.add_argument("--tracemalloc", action="store_true", help="trace Python's allocations")
    parser.add_argument("--profile", type=Path, help="cProfile the first import into this file")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / f"{SESSION}.jsonl"
        if args.keep is None or not path.exists():
            write_transcript(path, args.lines)
        lines = size = longest = 0
        with path.open("rb") as file:  # a line at a time: the RSS before is the store's
            for raw in file:
                lines, size, longest = lines + 1, size + len(raw), max(longest, len(raw))
        print(f"transcript: {lines:,} lines, {size / 1e6:,.1f} MB, largest line {longest:,} B")
        load_encoding(DEFAULT_ENCODING)  # the tokenizer's tables, loaded once per process
        reset_peak_rss()
        rss_before = rss_mb()
        url = args.db or f"sqlite:///{folder}/import.db"
        with SessionStore(url) as store:
            if args.tracemalloc:
                tracemalloc.start()
            profile = cProfile.Profile() if args.profile else None
            began, cpu = time.perf_counter(), time.process_time()
            if profile is not None:
                profile.enable()
            result = store.import_session(path)
            if profile is not None:
                profile.disable()
                profile.dump_stats(args.profile)
            took, cpu = time.perf_counter() - began, time.process_time() - cpu
            traced = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
            tracemalloc.stop()
            began, again_cpu = time.perf_counter(), time.process_time()
            again = store.import_session(path)
            again_took, again_cpu = time.perf_counter() - began, time.process_time() - again_cpu
        written = result.events_written
        print(f"import: {took:.2f} s ({cpu:.2f} s of CPU), {written:,} events written")
        print(f"peak RSS: {peak_rss_mb():,.0f} MB (before the import: {rss_before:,.0f} MB)")
        if traced is not None:
            print(f"tracemalloc peak during the import: {traced / 1e6:,.1f} MB")
        print(
            f"import again: {again_took:.2f} s ({again_cpu:.2f} s of CPU), "
            f"{again.events_written:,} events written"
        )
    print(f"machine: {machine()}; load average {os.getloadavg()}")
    command = [sys.executable, "-m", "bench.import_big", *(argv or sys.argv[1:])]
    print(f"command: {' '.join(command)}")
    if args.json:
        figures = {
            "lines": lines,
            "bytes": size,
            "longest_line": longest,
            "events": written,
            "seconds": took,
            "cpu_seconds": cpu,
            "rss_before_mb": rss_before,
            "rss_peak_mb": peak_rss_mb(),
            "again_seconds": again_took,
            "again_written": again.events_written,
        }
        print(json.dumps(figures))


def import_rows(lines: int, extra: dict[str, Any], log: Callable[[str], None]) -> list[Row]:
    """The import rows of `bench.storage`: the time to import a `lines`-line transcript, and
    the peak RSS above the store's, measured in a process of their own (a peak is the
    process's highest, whatever ran in it before)."""
    took = Row("import_s", f"Claude Code transcript, {lines:,} lines: import", "s")
    took.target = "<= 5 s"
    memory = Row("import_mb", f"Claude Code transcript, {lines:,} lines: peak RSS added", "MB")
    memory.target = "bounded by the largest line"
    took.ratios = memory.ratios = False
    log(f"storage: importing a {lines:,}-line Claude Code transcript")
    done = subprocess.run(
        [sys.executable, "-m", "bench.import_big", "--lines", str(lines), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        took.na[OURS] = memory.na[OURS] = f"failed: {done.stderr.strip().splitlines()[-1:]}"
        return [took, memory]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    took.values[OURS] = figures["seconds"]
    memory.values[OURS] = figures["rss_peak_mb"] - figures["rss_before_mb"]
    extra["import"] = figures
    return [took, memory]


if __name__ == "__main__":
    main()
