"""A kernel trace sent by a QEMU guest as base64 marker lines comes back as
the capture it was: same events, same order, same time stamps."""

from __future__ import annotations

import base64
from pathlib import Path

from rtbench.model import Run
from rtbench.targets import guest_trace
from rtbench.targets.initramfs import MARKER, init_script
from rtbench.trace.tracefs import Capture

SAMPLE = Path(__file__).parent / "data" / "trace-sample"


def _lines(name: str, data: bytes) -> list[bytes]:
    """What the guest's `tsend` writes: the name, then base64 in 76 columns."""
    text = base64.encodebytes(data).decode().splitlines()
    return [f"file {name}".encode(), *(f"b {line}".encode() for line in text)]


def test_a_guest_trace_round_trips_to_the_same_capture(tmp_path: Path) -> None:
    original = Capture.load(SAMPLE)
    got = guest_trace.Received(guest_trace.request(flight=False))
    events = ",".join(original.events)
    lines = [f"begin clock={original.clock} events=,{events}".encode(), b"overrun cpu1 3"]
    for cpu in original.cpus:
        lines += _lines(f"cpu{cpu}.raw", (SAMPLE / f"cpu{cpu}.raw").read_bytes())
    for path in sorted((SAMPLE / "formats").iterdir()):
        lines += _lines(f"formats/{path.name}", path.read_bytes())
    for name in ("header_page", "header_event"):
        lines += _lines(name, (SAMPLE / name).read_bytes())
    for line in [*lines, b"end"]:
        got.feed(line)
    assert got.ended and got.clock == original.clock and got.events == original.events
    got.save(tmp_path)
    back = Capture.load(tmp_path)
    assert back.cpus == original.cpus and back.page_size == original.page_size
    assert back.overrun == {1: 3}
    assert back.events_in_order() == original.events_in_order()


def test_nothing_sent_or_not_supported_is_said(tmp_path: Path) -> None:
    run = Run()
    guest_trace.attach(run, guest_trace.Received(guest_trace.request(flight=True)))
    assert "ended before sending it" in run.warnings[0].detail
    slow = guest_trace.Received(guest_trace.request(flight=False), unsupported="too slow")
    guest_trace.attach(run, slow)
    assert run.warnings[1].detail == "no kernel trace: too slow"
    guest_trace.attach(run, guest_trace.Received())  # not asked: nothing said
    assert len(run.warnings) == 2


def test_the_guest_sets_up_before_the_agent_and_sends_after() -> None:
    init = init_script("hvc0")
    assert init.index("echo 1 >$T/tracing_on") < init.index("/rtbench-agent")
    assert init.index("/rtbench-agent") < init.index(f"{MARKER} trace begin")
    assert init.index(f"{MARKER} trace end") < init.index("exit=$status")
    # It blocks once empty: the readers stop when their output stops
    # growing, never after a fixed time (which cut a loaded guest's trace).
    assert "cat $d/trace_pipe_raw >" in init and "kill $tpids" in init
    assert "timeout" not in guest_trace.DUMP_SCRIPT
