"""A kernel trace sent by a QEMU guest as base64 marker lines comes back as
the capture it was: same events, same order, same time stamps."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from rtbench.model import Run
from rtbench.targets import guest_trace
from rtbench.targets.initramfs import MARKER, init_script
from rtbench.trace.ringbuf import LOST, parse_page
from rtbench.trace.tracefs import Capture

SAMPLE = Path(__file__).parent / "data" / "trace-sample"


def _lines(name: str, data: bytes) -> list[bytes]:
    """What the guest's `tsend` writes: the name, then base64 in 76 columns,
    each line numbered at both ends."""
    text = base64.encodebytes(data).decode().splitlines()
    numbered = (f"b {n} {line} {n}".encode() for n, line in enumerate(text, 1))
    return [f"file {name}".encode(), *numbered]


def _received(damage: Callable[[list[bytes]], list[bytes]] = lambda x: x) -> guest_trace.Received:
    """The sample as a guest sends it; `damage`: what the port did to cpu0's lines."""
    original = Capture.load(SAMPLE)
    got = guest_trace.Received(guest_trace.request(flight=False))
    events = ",".join(original.events)
    lines = [f"begin clock={original.clock} events=,{events}".encode(), b"overrun cpu1 3"]
    for cpu in original.cpus:
        sent = _lines(f"cpu{cpu}.raw", (SAMPLE / f"cpu{cpu}.raw").read_bytes())
        lines += damage(sent) if cpu == 0 else sent
    for path in sorted((SAMPLE / "formats").iterdir()):
        lines += _lines(f"formats/{path.name}", path.read_bytes())
    for name in ("header_page", "header_event"):
        lines += _lines(name, (SAMPLE / name).read_bytes())
    for line in [*lines, b"end"]:
        got.feed(line)
    return got


def test_a_guest_trace_round_trips_to_the_same_capture(tmp_path: Path) -> None:
    original = Capture.load(SAMPLE)
    got = _received()
    assert got.ended and got.clock == original.clock and got.events == original.events
    got.save(tmp_path)
    back = Capture.load(tmp_path)
    assert back.cpus == original.cpus and back.page_size == original.page_size
    assert back.overrun == {1: 3}
    assert back.events_in_order() == original.events_in_order()


# Lines of cpu0.raw (1-based, as numbered): 72 lines are 4104 bytes, so
# line 100 is in page 1 and lines 300-301 in page 4.
def _dropped(lines: list[bytes]) -> list[bytes]:
    return [x for x in lines if not x.startswith(b"b 100 ")]


def _cut_and_run_together(lines: list[bytes]) -> list[bytes]:
    # The port lost the end of line 300 and the start of 301: one line.
    at = next(i for i, x in enumerate(lines) if x.startswith(b"b 300 "))
    merged = lines[at][:40] + lines[at + 1][30:]
    return [*lines[:at], merged, *lines[at + 2 :]]


@pytest.mark.parametrize(
    ("damage", "pages"),
    [(_dropped, {1: (99 * 57) % 4096}), (_cut_and_run_together, {4: 299 * 57 - 4 * 4096})],
)
def test_lines_lost_on_the_way_cut_their_pages_and_nothing_else(
    tmp_path: Path, damage: Callable[[list[bytes]], list[bytes]], pages: dict[int, int]
) -> None:
    original = Capture.load(SAMPLE)
    whole = _received()
    whole.save(tmp_path / "whole")
    intact = Capture.load(tmp_path / "whole")
    assert intact.lost == {} and intact.events_in_order() == original.events_in_order()
    assert intact.damage == []  # negative control: nothing lost, nothing flagged

    got = _received(damage)
    got.save(tmp_path / "damaged")
    back = Capture.load(tmp_path / "damaged")
    assert (tmp_path / "damaged" / "cpu0.raw").stat().st_size == (
        SAMPLE / "cpu0.raw"
    ).stat().st_size
    events = back.events_in_order()
    assert {(d.cpu, d.page): d.offset for d in back.damage} == {(0, p): o for p, o in pages.items()}
    assert all(d.why == "bytes lost on the way from the target" for d in back.damage)
    warning = back.damage_warning()
    assert warning is not None and f"cpu0 page offset {next(iter(pages.values()))}" in warning
    # Every other page decodes as sent; from the cut page only what came
    # before the lost bytes, and no event made of zeros or stray bytes.
    kept = [e for e in events if e.name != LOST]
    before = original.events_in_order()
    assert all(e in before for e in kept)
    spec = original.spec()
    raw = (SAMPLE / "cpu0.raw").read_bytes()
    in_cut = sum(len(list(parse_page(raw[p * 4096 : (p + 1) * 4096], 0, spec))) for p in pages)
    assert len(before) - in_cut <= len(kept) < len(before)
    assert sum(e.name == LOST for e in events) == len(pages)


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
