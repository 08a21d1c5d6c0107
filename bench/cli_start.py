"""How long the command line takes to start: `python -m bench.cli_start [--runs N]`.

Runs the installed `sessionstore` script with `--version` and with `ls` on a small SQLite file
(the demo's session, 20 turns), each `--runs` times in fresh processes, and prints the median
and the fastest wall time with the machine. The targets: `--version` within 0.15 s, `ls`
within 0.4 s on an idle 2-core machine. A start is dominated by imports: `python -X importtime
-m sessionstore.cli --version` shows where the time goes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import machine

SCRIPT = Path(sys.executable).with_name("sessionstore")


def timed(args: list[str], runs: int) -> list[float]:
    """Wall seconds of `runs` runs of `sessionstore ARGS`, each in a new process."""
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([str(SCRIPT), *args], check=True, capture_output=True)
        seconds.append(time.perf_counter() - began)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{Path(folder) / 'demo.db'}"
        subprocess.run(
            [str(SCRIPT), "--db", db, "demo", "--turns", "20"], check=True, capture_output=True
        )
        rows = {
            "sessionstore --version": timed(["--version"], args.runs),
            "sessionstore ls (one session)": timed(["--db", db, "ls"], args.runs),
        }
    print(f"machine: {machine()}")
    print(f"command: python -m bench.cli_start --runs {args.runs}")
    print("| start | median | fastest |\n|---|---|---|")
    for name, seconds in rows.items():
        print(f"| `{name}` | {statistics.median(seconds):.3f} s | {min(seconds):.3f} s |")


if __name__ == "__main__":
    main()
