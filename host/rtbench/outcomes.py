"""Outcomes as exit statuses: the one rule (docs/outcomes.md, "Exit
status"), which every command follows."""

from __future__ import annotations

from collections.abc import Iterable

# skipped: nothing judged (docs/outcomes.md); nothing failed either.
EXIT = {"passed": 0, "failed": 1, "error": 2, "skipped": 0}


def exit_code(outcome: str) -> int:
    """The exit status of an outcome; one rtbench does not know is an error."""
    return EXIT.get(outcome, 2)


def outcome_of_exit(code: int) -> str:
    """The outcome an exit status stands for (a campaign lane's): 0 passed,
    1 failed, anything else an error."""
    return {0: "passed", 1: "failed"}.get(code, "error")


def worst_code(codes: Iterable[int]) -> int:
    """The exit status of several runs: an error over a failed check over a pass."""
    return max(codes, default=0)
