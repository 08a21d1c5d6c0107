"""How long the command line takes to start: `python -m bench.cli_start [--runs N]`, or its
rows in `python -m bench` (by default, and alone with `--only cli_start`).

Runs the installed `sessionstore` script with `--version` and with `ls` on a small SQLite file
(the demo's session, 20 turns), each `--runs` times in fresh processes, interleaved (one of
each, then again), and prints the median and the fastest wall time with the machine and its
load. The targets: `--version` within 0.15 s, `ls` within 0.4 s on an idle 2-core machine. A
start is dominated by imports: `python -X importtime -m sessionstore.cli --db URL ls` shows
where the time goes, and `tests/cli/test_start.py` checks which modules each command loads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import machine

SCRIPT = Path(sys.executable).with_name("sessionstore")
TARGETS = {"--version": 0.15, "ls": 0.4}
"""Seconds each start may take on an idle 2-core machine (issue 29)."""


def measure(runs: int) -> dict[str, list[float]]:
    """Wall seconds of `runs` starts of each command, each in a new process; the commands
    take turns, so a change of the machine's load lands on both."""
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{Path(folder) / 'demo.db'}"
        subprocess.run(
            [str(SCRIPT), "--db", db, "demo", "--turns", "20"],
            check=True,
            capture_output=True,
            cwd=folder,  # the demo also writes its HTML page here
        )
        commands = {"--version": ["--version"], "ls": ["--db", db, "ls"]}
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, args in commands.items():
                began = time.perf_counter()
                subprocess.run([str(SCRIPT), *args], check=True, capture_output=True)
                seconds[name].append(time.perf_counter() - began)
    return seconds


def markdown(seconds: dict[str, list[float]]) -> str:
    lines = ["| start | median | fastest | target |", "|---|---|---|---|"]
    for name, samples in seconds.items():
        shown = "sessionstore ls (one session)" if name == "ls" else f"sessionstore {name}"
        lines.append(
            f"| `{shown}` | {statistics.median(samples):.3f} s | {min(samples):.3f} s "
            f"| {TARGETS[name]:.2f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    seconds = measure(args.runs)
    print(f"machine: {machine()}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"command: python -m bench.cli_start --runs {args.runs}")
    print(markdown(seconds))


if __name__ == "__main__":
    main()
