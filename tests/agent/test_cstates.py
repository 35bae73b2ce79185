"""C-states held off during a run, as cyclictest does: the POSIX agent
writes 0 to /dev/cpu_dma_latency and keeps it open while it runs; the
kernel drops the request when the agent ends. The hello record says
whether it was held and how."""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

DEVICE = Path("/dev/cpu_dma_latency")


def _cstates(stdout: bytes) -> dict[str, object]:
    text = stdout.decode()
    start = text.index('"cstates":') + len('"cstates":')
    return dict(json.loads(text[start : text.index("}", start) + 1]))


def _run(agent: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    proc = subprocess.run(
        [str(agent), *args, "CLK-RES"],
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_held_in_a_file_then_left_alone(agent: Path, tmp_path: Path) -> None:
    qos = tmp_path / "cpu_dma_latency"
    qos.write_bytes(struct.pack("i", 2_000_000_000))
    cs = _cstates(_run(agent, env={"RTB_CPU_DMA_LATENCY": str(qos)}))
    assert cs["held"] is True and str(qos) in str(cs["detail"])
    assert struct.unpack("i", qos.read_bytes()[:4]) == (0,)
    qos.write_bytes(struct.pack("i", 7))
    cs = _cstates(_run(agent, "--cstates", "leave", env={"RTB_CPU_DMA_LATENCY": str(qos)}))
    assert cs == {"held": False, "detail": "left alone (--cstates leave)"}
    assert struct.unpack("i", qos.read_bytes()) == (7,)


def test_not_held_says_why(agent: Path, tmp_path: Path) -> None:
    cs = _cstates(_run(agent, env={"RTB_CPU_DMA_LATENCY": str(tmp_path / "missing")}))
    assert cs["held"] is False and "No such file" in str(cs["detail"])
    bad = subprocess.run(
        [str(agent), "--cstates", "off", "CLK-RES"], capture_output=True, timeout=60, check=False
    )
    assert bad.returncode == 2 and b"hold or leave" in bad.stderr


def _device_value() -> int:
    return int(struct.unpack("i", DEVICE.read_bytes()[:4])[0])


def _holders() -> set[int]:
    """The processes holding the device open (each one a request)."""
    pids: set[int] = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        with contextlib.suppress(OSError):
            if os.readlink(fd) == str(DEVICE):
                pids.add(int(fd.parts[2]))
    return pids


@pytest.mark.root("writes /dev/cpu_dma_latency")
@pytest.mark.exclusive  # the machine's C-state request: a sibling's agent would hold it too
@pytest.mark.skipif(not DEVICE.exists(), reason="this kernel has no /dev/cpu_dma_latency")
def test_real_device_held_during_the_run_and_restored(agent: Path) -> None:
    before = _device_value()
    proc = subprocess.Popen(
        [str(agent), "JIT-PER:cycles=20000:period_us=1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the case began: the hold is in place
            if b" begin {" in line:
                break
        during, holders = _device_value(), _holders()
    finally:
        proc.kill()
        proc.wait()
    assert during == 0 and proc.pid in holders
    # Killed, not ended: the kernel still drops the request with the file.
    # Another process of this machine's may hold its own meanwhile (an agent
    # run outside this suite): then the value is its, and the agent is gone.
    after, holders = _device_value(), _holders()
    assert after == before or (holders and proc.pid not in holders), (after, holders)
