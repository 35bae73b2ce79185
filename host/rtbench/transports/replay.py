from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


class ReplayTransport:
    """Replays a recorded stream: a board's captured serial console, or a
    test fixture. It runs nothing."""

    name = "replay"
    idle_timeout: float | None = None

    def __init__(self, path: Path) -> None:
        self.path = path

    def start(self, args: list[str]) -> None:
        del args

    def lines(self) -> Iterator[bytes]:
        with self.path.open("rb") as f:
            for raw in f:
                yield raw.rstrip(b"\n")

    def stop(self) -> int | None:
        return None

    def diagnostics(self) -> str:
        return ""
