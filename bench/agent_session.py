"""The synthetic coding-agent session the benchmarks play; it lives in `sessionstore.cli._scripted`
because `sessionstore demo` plays it too."""

from sessionstore.cli._scripted import DriveReport, Step, Turn, coding_session, drive

__all__ = ["DriveReport", "Step", "Turn", "coding_session", "drive"]
