from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rtbench.stream.limits import bounded_lines


class ReplayTransport:
    """Replays a recorded stream: a board's captured serial console, or a
    test fixture. It runs nothing."""

    name = "replay"
    idle_timeout: float | None = None
    live = False  # a file: read to its end, whatever text it holds

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cut_lines = [0]

    def start(self, args: list[str]) -> None:
        del args

    def lines(self) -> Iterator[bytes]:
        # A large buffer: with the default 8 KiB a samples line (kilobytes)
        # takes several reads (twice the CPU time to split the lines).
        with self.path.open("rb", buffering=1 << 20) as f:
            yield from bounded_lines(f, self.cut_lines)

    def stop(self) -> int | None:
        return None

    def diagnostics(self) -> str:
        return ""
