"""Bounds on what comes from outside: an agent, a console or a file may
write anything, forever; the host's memory and the run's length stay
bounded (issue 26; docs/outcomes.md, "Limits").

- A line longer than MAX_LINE bytes is cut into pieces of MAX_LINE bytes,
  each counted as damage (the agent's longest record is its body cap,
  RTB_STREAM_BODY_CAP: 512 KiB on POSIX, plus the record's head).
- A live stream must say `hello` within HELLO_LINES lines and HELLO_S
  seconds (a board's boot log comes first; a garbage printer never says it).
- After the hello, a live run is stopped once the lines that are not records
  (text, damage) pass NOISE_LINES or NOISE_BYTES; a file (`ingest`) is read
  to its end, its text counted.
- Of that text, the first LOG_KEPT lines (each cut to LOG_LINE characters)
  are kept for the message and the stored log; the rest is only counted.
- stderr keeps its last STDERR_LINES lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

MAX_LINE = 1024 * 1024
HELLO_LINES = 100_000
HELLO_S = 300.0
NOISE_LINES = 100_000
NOISE_BYTES = 64 * 1024 * 1024
LOG_KEPT = 1000
LOG_LINE = 4096
STDERR_LINES = 200


def bounded_lines(f: IO[bytes], cut: list[int]) -> Iterator[bytes]:
    """The lines of `f` without their newline; a line longer than MAX_LINE
    comes in pieces of MAX_LINE bytes, each counted in cut[0]."""
    while True:
        line = f.readline(MAX_LINE)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        else:
            if len(line) == MAX_LINE:
                cut[0] += 1
            yield line
