"""A child's silence is judged on everything it writes, the lines its
transport consumes too: a QEMU guest sends its kernel trace and timerlat
as marker lines after the agent's last record, for longer than the last
case's allowance on a slow TCG guest (the arm64 guest's run was cut there
under load)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rtbench.run.session import Interrupted, StreamProgress, collect
from rtbench.stream import Record
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
CORPUS = Path(__file__).parents[1] / "corpus"


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


class _Agent(ChildTransport):
    """A child that writes a stream at once, then waits to be stopped: an
    agent far ahead of a loaded host."""

    name = "ahead"

    def __init__(self, stream: Path) -> None:
        super().__init__()
        self.stream = stream

    def start(self, args: list[str]) -> None:
        self._spawn(["sh", "-c", f"cat '{self.stream}'; exec sleep 60"], "sh")

    def stop(self) -> int | None:
        assert self.proc is not None
        self.proc.kill()
        return self._reap(self.proc)


def test_records_written_before_a_ctrl_c_are_kept(tmp_path: Path) -> None:
    # Two whole cases, no bye: the agent was stopped before it said goodbye.
    lines = (CORPUS / "good_small.rtb").read_bytes().splitlines(keepends=True)
    stream = tmp_path / "ahead.rtb"
    stream.write_bytes(b"".join(lines[:21]))  # one write: all in the pipe at once
    seen: list[str] = []

    def ctrl_c_at_hello(rec: Record, _: StreamProgress) -> None:
        seen.append(rec.kind)
        raise KeyboardInterrupt  # the user's Ctrl-C while the host was behind

    with pytest.raises(Interrupted) as stopped:
        collect(_Agent(stream), [], on_record=ctrl_c_at_hello)
    run = stopped.value.run
    assert seen == ["hello"]
    # Read after the stop, not lost with it; the control: the hello alone
    # came through the live path.
    assert [(c.case, c.outcome) for c in run.cases] == [
        ("CAL-TIMER", "passed"),
        ("THR-SW", "passed"),
    ]
    assert any("interrupted" in i.detail for i in run.issues)


class _Held(_Markers):
    """A reader that waits on `gate` before handing over each line: the
    previous child's reader still draining on a loaded host."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def _line(self, line: bytes) -> bytes | None:
        self.gate.wait(timeout=30)
        return line


def test_a_previous_childs_late_reader_feeds_only_its_own_run() -> None:
    """Started again while the first child's reader still holds its lines:
    the second run reads its own lines only, never the first one's (their
    stale `end` ended a QEMU guest's next run early under stress-ng)."""
    t = _Held()
    t.start("echo old1; echo old2; echo old3")
    time.sleep(0.5)  # the first reader holds `old1` at the gate
    t._reset_streams()  # as QemuTransport.start does before the next child
    t.start("echo new1; echo new2")
    t.idle_timeout = 10
    t.gate.set()
    try:
        got = list(t.lines())
    finally:
        t.stop()
    assert got == [b"new1", b"new2"], got
