"""End-to-end: the serial target on real pseudo-terminals.

The host opens the pty's slave through pyserial, as it opens /dev/ttyUSB0.
On the master side either the test plays a board's console (a recorded
stream with console noise interleaved, written in uneven chunks, followed by
noise that never ends), or a real `sh` reads the master as its console and
runs the agent when the host types the command.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from rtbench.model import Run
from rtbench.run.session import collect
from rtbench.stream import parse_file, parse_lines
from rtbench.targets import resolve
from rtbench.targets.serial import SerialTarget
from rtbench.transports import TransportError
from rtbench.transports.serial import SerialTransport

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NOISE = [
    b"[   12.345678] usb 1-1: new high-speed USB device number 2 using ehci-pci",
    b"root@board:~# ",
    b"\x1b[0;32mOK\x1b[0m watchdog armed",
    b"\xff\xfe binary junk from a baud mismatch \x00",
]


class Pty:
    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.path = os.ttyname(self.slave)

    def close(self) -> None:
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


@pytest.fixture
def pty() -> Iterator[Pty]:
    p = Pty()
    try:
        yield p
    finally:
        p.close()


def _records(lines: list[bytes]) -> list[tuple[int, str, object]]:
    return [(r.seq, r.kind, r.body) for r in parse_lines(lines).records]


def _console(stream: Path, seed: int, damage_line: int | None = None) -> bytes:
    """The stream as a board's console shows it: a stale tail of an earlier
    run, boot noise, noise between records and in front of some, CRLF line
    ends, and optionally one record overwritten in its middle."""
    rng = random.Random(seed)
    lines = stream.read_bytes().splitlines()
    out = [b"garbage without a newline yet", *lines[-2:], *NOISE]  # an earlier run's end
    for i, line in enumerate(lines):
        if rng.random() < 0.4:
            out.append(rng.choice(NOISE))
        if i == damage_line:
            line = line[: len(line) // 2] + b"[  99.1] kernel says hi" + line[len(line) // 2 :]
        elif rng.random() < 0.3:
            line = b"[  42.000001] " + line  # a console timestamp before the record
        out.append(line)
    return b"\r\n".join(out) + b"\r\n"


def _play(fd: int, data: bytes, stop: threading.Event, seed: int) -> None:
    """Writes `data` in uneven chunks, then console noise until told to stop:
    a console never closes."""
    rng = random.Random(seed)
    i = 0
    try:
        while i < len(data):
            n = rng.randint(1, 700)
            os.write(fd, data[i : i + n])
            i += n
        while not stop.wait(0.05):
            os.write(fd, rng.choice(NOISE) + b"\r\n")
    except OSError:
        pass  # the test closed the pty


def _serial_run(pty: Pty, data: bytes, seed: int, **opts: object) -> tuple[Run, bytes]:
    target = resolve(f"serial://{pty.path}?baud=115200", opts)
    assert isinstance(target, SerialTarget)
    transport = target.transport()
    # Listening before the board talks: a pty's slave drops what arrived
    # before it was opened and set raw.
    transport.connect()
    stop = threading.Event()
    board = threading.Thread(target=_play, args=(pty.master, data, stop, seed), daemon=True)
    board.start()
    sink = io.BytesIO()
    try:
        run = collect(transport, [], raw_sink=sink)
    finally:
        stop.set()
    return run, sink.getvalue()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_stream_with_console_noise_arrives_intact(pty: Pty, seed: int) -> None:
    clean = CORPUS / "good_small.rtb"
    run, raw = _serial_run(pty, _console(clean, seed), seed)
    expected = parse_file(clean)
    assert run.complete, run.issues
    assert not run.issues
    # Every record, and nothing of the earlier run's tail.
    assert _records(raw.splitlines()) == [(r.seq, r.kind, r.body) for r in expected.records]
    assert any("usb 1-1" in line for line in run.log)


def test_the_recorded_noisy_console_arrives_intact(pty: Pty) -> None:
    stream = CORPUS / "good_noise.rtb"
    data = stream.read_bytes() + b"\n"
    run, raw = _serial_run(pty, data, 7)
    assert run.complete and not run.issues
    assert _records(raw.splitlines()) == _records(stream.read_bytes().splitlines())


def test_after_a_record_overwritten_by_noise_it_resynchronises(pty: Pty) -> None:
    clean = CORPUS / "good_small.rtb"
    run, raw = _serial_run(pty, _console(clean, 5, damage_line=11), 5)
    kinds = [i.kind for i in run.issues]
    assert "damaged" in kinds and "gap" in kinds, run.issues
    got = _records(raw.splitlines())
    want = [(r.seq, r.kind, r.body) for r in parse_file(clean).records if r.seq != 11]
    assert got == want  # every record but the overwritten one, the bye included


def test_without_a_hello_it_gives_up_after_the_wait(pty: Pty) -> None:
    run, _ = _serial_run(pty, b"U-Boot 2024.01\r\nno agent here\r\n", 0, wait=1)
    assert not run.hello
    assert any("no `hello`" in i.detail for i in run.issues)


def test_a_missing_device_is_a_clear_error(tmp_path: Path) -> None:
    target = resolve(f"serial://{tmp_path}/ttyNONE")
    reach = target.check()
    assert not reach.ok and "ttyNONE" in reach.detail
    with pytest.raises(TransportError, match="cannot open"):
        target.transport().start([])


@pytest.fixture
def shell_on_console(pty: Pty) -> Iterator[tuple[Pty, subprocess.Popen[bytes]]]:
    """A real shell whose console is the pty: it reads what the host types
    and writes to the host, like a board's serial getty."""
    # +i +m: the master is a terminal too, and an interactive shell's job
    # control would stop its process group; its own session keeps it apart.
    sh = subprocess.Popen(
        ["sh", "+i", "+m"],
        stdin=pty.master,
        stdout=pty.master,
        stderr=pty.master,
        start_new_session=True,
    )
    try:
        yield pty, sh
    finally:
        sh.kill()
        sh.wait()


@pytest.mark.parametrize("samples", [False, True])
def test_the_host_types_the_command_and_the_shell_runs_the_agent(
    shell_on_console: tuple[Pty, subprocess.Popen[bytes]], agent: Path, samples: bool
) -> None:
    pty, _ = shell_on_console
    target = resolve(
        f"serial://{pty.path}", {"cmd": str(agent), "samples": samples, "baud": 921600}
    )
    transport = target.transport()
    run = collect(transport, ["CAL-REF:repeats=20", "THR-SW:n=2:duration_ms=50"])
    assert run.complete, (run.issues, transport.diagnostics())
    assert [c.case for c in run.cases] == ["CAL-REF", "THR-SW"]
    # Over a console the agent keeps summaries and histograms only, unless asked.
    assert run.hello["params"]["samples"] is samples
    # The shell's exit marker carried the agent's status back.
    assert transport.stop() in (0, 1) and cast(SerialTransport, transport).status in (0, 1)


def test_a_command_the_shell_cannot_run_is_reported(
    shell_on_console: tuple[Pty, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    pty, _ = shell_on_console
    transport = resolve(f"serial://{pty.path}", {"cmd": str(tmp_path / "no-agent")}).transport()
    run = collect(transport, ["CAL-REF"])
    assert cast(SerialTransport, transport).status == 127
    assert any("status 127" in i.detail and "no-agent" in i.detail for i in run.issues), run.issues
