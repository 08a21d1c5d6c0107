"""The synthetic coding-agent session the benchmarks play; it lives in `store._scripted`
because `sessionstore demo` plays it too."""

from store._scripted import DriveReport, Step, Turn, coding_session, drive

__all__ = ["DriveReport", "Step", "Turn", "coding_session", "drive"]
