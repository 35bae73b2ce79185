"""A child's silence is judged on everything it writes, the lines its
transport consumes too: a QEMU guest sends its kernel trace and timerlat
as marker lines after the agent's last record, for longer than the last
case's allowance on a slow TCG guest (the arm64 guest's run was cut there
under load)."""

from __future__ import annotations

import pytest

from rtbench.transports.base import TransportError
from rtbench.transports.process import ChildTransport


class _Markers(ChildTransport):
    """Consumes lines starting with `#`, as QemuTransport its markers."""

    name = "markers"

    def start(self, script: str) -> None:
        self._spawn(["sh", "-c", script], "sh")

    def _line(self, line: bytes) -> bytes | None:
        return None if line.startswith(b"#") else line

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self._reap(self.proc)


IDLE_S = 2.0


def _lines(script: str) -> list[bytes]:
    t = _Markers()
    t.start(script)
    t.idle_timeout = IDLE_S
    try:
        return list(t.lines())
    finally:
        t.stop()


def test_consumed_lines_keep_a_child_alive() -> None:
    # Three allowances of consumed lines, then a record: not a silence.
    n = int(3 * IDLE_S / 0.1)
    script = (
        f"echo first; i=0; while [ $i -lt {n} ]; do echo '# m'; sleep 0.1; i=$((i+1)); done; "
        "echo last"
    )
    assert _lines(script) == [b"first", b"last"]


def test_a_child_that_writes_nothing_is_silent() -> None:
    # The control: the same wait without a line is a silence.
    with pytest.raises(TransportError, match="wrote nothing"):
        _lines(f"echo first; sleep {3 * IDLE_S}; echo last")
