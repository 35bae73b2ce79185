"""The serial target on a real emulated UART: QEMU's 16550 (the guest's
ttyS1) exposed on a pseudo-terminal, read through `serial://` as a board's
console is. The guest starts the agent by itself (as a firmware would), the
stream arrives intact through the emulated UART, and a guest killed mid-run
keeps the cases it finished."""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import pytest
import tools

from rtbench.run.session import StreamProgress, collect
from rtbench.stream import Record
from rtbench.targets import initramfs, resolve
from rtbench.targets.qemu import QemuTarget, find_qemu
from rtbench.targets.serial import SerialTarget
from rtbench.transports.qemu import Launch, die_with_parent

pytestmark = pytest.mark.tools(*tools.qemu_guest())

CASES = ["CAL-REF:repeats=10", "THR-SW:n=2:duration_ms=60000"]
_PTY = re.compile(rb"char device redirected to (/dev/pts/\d+) \(label (\w+)\)")


@pytest.fixture
def guest() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A debian-rt guest whose agent writes to its emulated UART ttyS1,
    which QEMU puts on a pty; yields QEMU and the pty's path."""
    kernel = tools.guest_kernel("debian-rt")
    target = resolve("qemu:debian-rt?accel=tcg")
    assert isinstance(target, QemuTarget)
    agent = target.agent()
    launch = Launch(
        find_qemu(), kernel, "tcg", "q35", 2, 512, target.settings.kernel_cmdline()
    )
    with tempfile.TemporaryDirectory(prefix="rtbench-serial-qemu-") as tmp:
        base = initramfs.base_archive(agent)
        initrd = initramfs.run_archive(base, ["--no-samples", *CASES], Path(tmp) / "initrd")
        argv = launch.argv(initrd, Path(tmp) / "console.txt", stream="pty")
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        try:
            assert proc.stdout is not None
            # QEMU names the pty before the guest runs: the host opens it
            # seconds before the agent writes its first byte.
            seen = []
            for _ in range(20):  # a warning or two may come first
                seen.append(proc.stdout.readline())
                if (m := _PTY.search(seen[-1])) is not None or not seen[-1]:
                    break
            assert m is not None, seen
            yield proc, m.group(1).decode()
        finally:
            proc.kill()
            proc.wait()
            with contextlib.suppress(OSError):
                cast(IO[bytes], proc.stdout).close()  # stdout=PIPE above


def test_stream_through_qemus_uart_and_a_killed_guest_keeps_its_cases(
    guest: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, pty = guest
    target = resolve(f"serial://{pty}?wait=300")
    assert isinstance(target, SerialTarget) and target.command is None

    def kill_after_first_case(rec: Record, progress: StreamProgress) -> None:
        if rec.kind == "end" and progress.cases_done == 1:
            proc.kill()

    run = collect(target.transport(), [], kill_after_first_case)
    # The stream came through the emulated UART intact: the guest's kernel,
    # the first case whole, no damaged record.
    assert run.hello["os"]["preempt"] == "PREEMPT_RT" and run.hello["os"]["machine"] == "x86_64"
    assert not [i for i in run.issues if i.kind in ("damaged", "gap", "order")], run.issues
    first = run.case("CAL-REF")
    assert first is not None and first.outcome == "passed"
    assert first.find("t_std") is not None
    # Killed inside the second case: the run is incomplete, the first kept.
    assert not run.complete
    second = run.case("THR-SW")
    assert second is None or second.outcome == "error"
    assert proc.wait() != 0
