from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol


class TransportError(RuntimeError):
    pass


class Transport(Protocol):
    """A target that runs the agent and hands back its output line by line."""

    name: str
    # Seconds of silence after which `lines` gives up; the caller may change
    # it between lines (the agent announces each case's deadline).
    idle_timeout: float | None

    def start(self, args: list[str]) -> None:
        """Starts the agent with `args` (everything after the executable)."""

    def lines(self) -> Iterator[bytes]:
        """Yields output lines as they arrive (without the newline) until the
        agent ends; raises TransportError after `idle_timeout` s of silence."""
        ...

    def stop(self) -> int | None:
        """Ends the agent if it still runs (never leaves it running) and
        returns its exit status, when there is one."""
        ...

    def diagnostics(self) -> str:
        """What the agent said besides its stream (stderr), for errors."""
        ...
