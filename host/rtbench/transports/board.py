"""A firmware booted in QEMU per run, its UART on QEMU's stdout
(`rtbench.targets.qemu_board` makes it for an RTOS board target); the
agent's arguments reach it through semihosting."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rtbench.transports.base import TransportError
from rtbench.transports.process import ChildTransport
from rtbench.transports.qemu import die_with_parent

if TYPE_CHECKING:
    from rtbench.targets.qemu_board import BoardSettings, BoardSpec

# Plain lines the firmware writes besides its records (stack use, faults).
FIRMWARE_PREFIX = b"rtbench-firmware: "
RECORD = b"@rtb "
EXIT_WAIT_S = 10.0


def semihosting_args(args: list[str]) -> str:
    """QEMU's -semihosting-config value carrying `args` (program name first);
    QEMU's option syntax doubles a comma inside a value."""
    for a in args:
        if not a or any(c.isspace() for c in a):
            raise TransportError(f"argument {a!r}: a firmware's arguments cannot hold spaces")
    words = ["rtbench-agent", *args]
    return "enable=on,target=native," + ",".join(f"arg={w.replace(',', ',,')}" for w in words)


class BoardTransport(ChildTransport):
    """Boots the firmware in QEMU per run; the UART is QEMU's stdout."""

    def __init__(
        self, name: str, spec: BoardSpec, settings: BoardSettings, firmware: Path, qemu: str
    ) -> None:
        super().__init__()
        self.name = name
        self.spec = spec
        self.settings = settings
        self.firmware = firmware
        self.qemu = qemu
        self.notes: list[str] = []  # the firmware's plain lines (stack use, faults)
        self.timings: dict[str, float] = {}  # seconds after QEMU started
        self._bye = False  # the plan's last record came: the firmware is ending
        self._t0 = 0.0

    def argv(self, args: list[str]) -> list[str]:
        return [
            self.qemu,
            "-machine", self.spec.board.qemu_machine,
            "-cpu", self.spec.board.qemu_cpu,
            "-nographic", "-monitor", "none", "-serial", "stdio",
            "-semihosting-config", semihosting_args(args),
            *self.settings.clock_args(),
            "-kernel", str(self.firmware),
        ]  # fmt: skip

    def start(self, args: list[str]) -> None:
        self.stop()
        self.proc = None
        self.notes, self.timings, self._bye = [], {}, False
        self._reset_streams()
        self._t0 = time.monotonic()
        # Into a file, not a pipe: the UART never waits for the host, so
        # -icount figures do not depend on how fast the host reads.
        self._spawn(self.argv(args), self.qemu, preexec=die_with_parent, stdout_file=True)

    def _line(self, line: bytes) -> bytes | None:
        line = line.rstrip(b"\r")
        at = line.find(FIRMWARE_PREFIX)
        if at >= 0:
            self.notes.append(line[at + len(FIRMWARE_PREFIX) :].decode("utf-8", "replace"))
            return None
        if RECORD not in line:
            # The console's other text: the agent's stderr (a refusal).
            if line.strip():
                self.notes.append(line.decode("utf-8", "replace"))
            return None
        self.timings.setdefault("first_record", time.monotonic() - self._t0)
        if line[line.find(RECORD) :].split(b" ", 4)[3:4] == [b"bye"]:
            self._bye = True
        return line

    def _timeout(self) -> float | None:
        if "first_record" not in self.timings:
            return max(self.idle_timeout or 0.0, self.settings.boot_timeout)
        return self.idle_timeout

    def _silence(self, timeout: float) -> str:
        what = "the firmware did not start" if "first_record" not in self.timings else (
            "the firmware wrote nothing"
        )
        return f"{what} for {timeout:.0f} s; stopped QEMU"

    def stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            # The firmware ends QEMU itself (semihosting exit) right after
            # its last record and notes; one that does not is stopped. A
            # plan stopped before its `bye` (Ctrl-C, silence, a test that
            # has what it wanted) would not end soon: it is stopped at once,
            # not left measuring for EXIT_WAIT_S (a CPU of emulation each).
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=EXIT_WAIT_S if self._bye else 0.1)
        if proc.poll() is None:
            proc.kill()
        status = self._reap(proc)
        self.timings.setdefault("exit", time.monotonic() - self._t0)
        return status if status >= 0 else 255

    def stack_use(self) -> dict[str, tuple[int, int]]:
        """{task: (stack size, bytes used)} from the firmware's notes."""
        use: dict[str, tuple[int, int]] = {}
        for note in self.notes:
            m = re.match(r"stack (\S+) size=(\d+) used=(\d+)", note)
            if m:
                use[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        return use

    def diagnostics(self) -> str:
        parts = [line for line in list(self._stderr)[-10:] if line.strip()]
        parts += [n for n in self.notes if not n.startswith(("stack ", "ram "))]
        return "\n".join(parts)


