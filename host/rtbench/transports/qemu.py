"""Running the agent inside a QEMU guest: the Transport of QEMU targets.

One guest per run: QEMU boots the kernel with rtbench's initramfs, the
guest's `/init` starts the agent with this run's arguments, and the agent's
stream comes back on the guest's stream port (QEMU's stdout here: the
second serial port of an x86_64 guest, a virtio console of an arm64 one);
the kernel console goes to a file, apart. `/init` ends the stream port with
the agent's exit status and powers the guest off. On stop, Ctrl-C or any
error QEMU is killed: no guest outlives its run, and QEMU dies with the
host (PDEATHSIG) even if the host is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rtbench.machine import probe_remote
from rtbench.model import Run
from rtbench.targets import guest_trace, initramfs, pvh, timerlat
from rtbench.targets.kernels import Kernel
from rtbench.transports.base import TransportError
from rtbench.transports.process import ChildTransport

_MARK = initramfs.MARKER.encode()
_EXIT = re.compile(rb"exit=(\d+)")
# QEMU flushes and powers off within a second of the marker; under a busy
# host give it a while before killing it.
POWEROFF_WAIT_S = 20.0


@dataclass(frozen=True)
class GuestArch:
    """How a guest of one architecture is booted and where its ports are."""

    qemu: str  # the qemu-system-* executable's name
    package: str  # Debian's package that has it
    machine: str
    tcg_cpu: str
    console: str  # the kernel console's device (the first UART)
    stream: str  # the agent's stream port in the guest
    cmdline: str  # the base kernel command line
    tcg_accel: str = "tcg"  # QEMU's -accel under TCG


GUESTS: dict[str, GuestArch] = {
    # tsc=reliable: without it the guest finds the emulated TSC unstable and
    # falls back to a clocksource ~10x as slow to read; panic=-1 ends a guest
    # that panics at once (-no-reboot turns the reboot into QEMU's exit).
    "x86_64": GuestArch(
        "qemu-system-x86_64", "qemu-system-x86", "q35", "max", "ttyS0", "ttyS1",
        "console=ttyS0 quiet panic=-1 tsc=reliable",
        # thread=single: x86 Linux patches its own code live (static keys,
        # tracepoints) behind a breakpoint byte, and with one host thread
        # per vCPU QEMU 7.2 now and then lets a vCPU run the stale
        # breakpoint after the patch is done: "Oops: int3" at boot, about
        # one boot in twelve here. arm64 patches under stop_machine.
        "tcg,thread=single",
    ),
    # `virt` has one UART (PL011, ttyAMA0): the stream goes on a virtio
    # console. cortex-a57: TCG emulates it faster than `max` (no pointer
    # authentication or SVE to emulate).
    "aarch64": GuestArch(
        "qemu-system-aarch64", "qemu-system-arm", "virt", "cortex-a57", "ttyAMA0", "hvc0",
        "console=ttyAMA0 quiet panic=-1",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Launch:
    """Everything one QEMU invocation needs besides its initrd."""

    qemu: str  # the qemu-system-* executable
    kernel: Kernel
    accel: str  # tcg or kvm
    machine: str
    smp: int
    memory_mb: int
    cmdline: str  # the whole kernel command line

    @property
    def guest(self) -> GuestArch:
        return GUESTS[self.kernel.arch]

    def argv(self, initrd: Path, console: Path, stream: str = "stdio") -> list[str]:
        """QEMU's command line; `stream`: the chardev of the agent's stream
        port (stdio: QEMU's stdout; pty: a pseudo-terminal QEMU names)."""
        # kvm: the host's CPU as it is; tcg: what QEMU emulates.
        cpu = "host" if self.accel == "kvm" else self.guest.tcg_cpu
        if self.guest.stream.startswith("hvc"):
            # The console on the UART, the stream on a virtio console port.
            ports = [
                "-serial",
                f"file:{console}",
                "-device",
                "virtio-serial-device",
                "-chardev",
                f"{stream},id=stream",
                "-device",
                "virtconsole,chardev=stream",
            ]
        else:
            # ttyS0: the kernel console, kept apart; ttyS1: the agent's stream.
            ports = ["-serial", f"file:{console}", "-serial", stream]
        return [
            self.qemu,
            "-M", self.machine,
            "-accel", self.guest.tcg_accel if self.accel == "tcg" else self.accel,
            "-cpu", cpu,
            "-smp", str(self.smp),
            "-m", str(self.memory_mb),
            "-nodefaults", "-display", "none", "-monitor", "none", "-no-reboot",
            "-kernel", str(self.image()),
            "-initrd", str(initrd),
            *ports,
            "-append", self.cmdline,
        ]  # fmt: skip

    def image(self) -> Path:
        """The file QEMU boots: an x86_64 kernel under TCG through its PVH
        entry when it has one (targets/pvh.py: its decompressor took half
        the boot), else the image as it is."""
        return pvh.booted(self.kernel.image, self.kernel.arch, self.accel)


def die_with_parent() -> None:
    # PR_SET_PDEATHSIG (1): a host killed outright takes its guest with it.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


class QemuTransport(ChildTransport):
    """A Transport that boots a guest per run (see the module's doc)."""

    def __init__(self, name: str, launch: Launch, agent: Path, boot_timeout: float) -> None:
        super().__init__()
        self.name = name
        self.launch = launch
        self.agent = agent
        self.boot_timeout = boot_timeout
        self.console = ""  # the guest's kernel console, once stopped
        # Seconds after QEMU started: init (kernel booted), first record, exit.
        self.timings: dict[str, float] = {}
        self.guest_uptime_at_init: float | None = None
        self._t0 = 0.0
        self._exit_status: int | None = None
        self._booting = True  # no record yet when the last wait began
        self._workdir: Path | None = None
        self.run_dir = ""  # the guest's files (initrd, console) while it runs
        # The kernel's timerlat after the cases when the run has JIT-PER
        # (--timerlat; on unless turned off), and what the guest sent of it.
        self.timerlat = True
        self.tracer = timerlat.Result()
        self.probe_lines: list[str] = []  # /init's system report (probe_remote)
        # --trace / --break: the kernel trace recorded in the guest.
        self.trace: guest_trace.Request | None = None
        self.traced = guest_trace.Received()
        # A shell script the guest starts in the background just before the
        # agent: what else runs in the guest (tests start a SCHED_FIFO hog).
        self.beside: str | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, args: list[str]) -> None:
        # One guest per start: a transport may run the agent more than once.
        self.stop()
        self.proc = None
        self.timings, self.guest_uptime_at_init, self.console = {}, None, ""
        self._exit_status = None
        self._reset_streams()
        self.probe_lines = []
        self._workdir = Path(tempfile.mkdtemp(prefix="rtbench-qemu-"))
        self.run_dir = str(self._workdir)
        try:
            guest = self.launch.guest
            kernel = self.launch.kernel
            # The modules go in only where the stream port needs them.
            mods = kernel.modules if guest.stream.startswith("hvc") else ()
            base = initramfs.base_archive(self.agent, kernel.arch, guest.stream, mods)
            req = timerlat.request(args, self.launch.smp) if self.timerlat else None
            self.tracer = timerlat.Result(req)
            self.traced = guest_trace.Received(self.trace)
            if self.trace is not None and not guest.stream.startswith("hvc"):
                # An emulated 16550 at TCG's pace takes minutes for a trace
                # of megabytes, and the kernel may disable its IRQ on the way.
                self.traced.unsupported = (
                    f"the {kernel.arch} guest's stream is an emulated UART, too slow for "
                    "a trace; arm64 guests (virtio console) have it"
                )
            elif self.trace is not None:
                args = [f"--trace-marker={guest_trace.MARKER_PATH}", *args]
            initrd = initramfs.run_archive(
                base,
                args,
                self._workdir / "initrd.cpio",
                req,
                None if self.traced.unsupported else self.trace,
                self.beside,
            )
        except (initramfs.InitramfsError, OSError) as e:
            self._cleanup()
            raise TransportError(f"cannot build the guest's initramfs: {e}") from e
        console = self._workdir / "console.txt"
        self._t0 = time.monotonic()
        try:
            argv = self.launch.argv(initrd, console)
            # Into a file, never a pipe: a virtio console drops what a full
            # pipe refuses (QEMU cannot hold a console's writer back), and a
            # UART's writer would wait on the host: its load in the figures.
            self._spawn(argv, self.launch.qemu, preexec=die_with_parent, stdout_file=True)
        except TransportError:
            self._cleanup()
            raise

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0

    def _line(self, line: bytes) -> bytes | None:
        line = line.rstrip(b"\r")  # a serial port's line end
        if line.startswith(_MARK):
            self._marker(line[len(_MARK) :].strip())
            return None
        self.timings.setdefault("first_record", self._elapsed())
        return line

    def _marker(self, body: bytes) -> None:
        if body.startswith(b"trace "):
            self.traced.feed(body[len(b"trace ") :])
        elif body.startswith(b"timerlat"):
            self.tracer.feed(body[len(b"timerlat") :])
        elif body == b"probe" or body.startswith(b"probe "):
            self.probe_lines.append(body[len(b"probe ") :].decode(errors="replace"))
        elif body.startswith(b"init"):
            self.timings["init"] = self._elapsed()
            m = re.search(rb"uptime=([0-9.]+)", body)
            if m:
                self.guest_uptime_at_init = float(m.group(1))
        elif m := _EXIT.match(body):
            self.timings["exit"] = self._elapsed()
            self._exit_status = int(m.group(1))

    def _timeout(self) -> float | None:
        # Until the agent speaks, the guest is booting: that takes its own time.
        self._booting = "first_record" not in self.timings
        if self._booting:
            return max(self.idle_timeout or 0.0, self.boot_timeout)
        return self.idle_timeout

    def _silence(self, timeout: float) -> str:
        what = "the guest did not start the agent" if self._booting else "the agent wrote nothing"
        return f"{what} for {timeout:.0f} s; stopped QEMU"

    def stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None and self._exit_status is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=POWEROFF_WAIT_S)
        if proc.poll() is None:
            proc.kill()
        self._reap(proc)
        self._cleanup()
        if self._exit_status is not None:
            return self._exit_status
        # QEMU exits 0 when the guest powers off or reboots, whatever the
        # agent did: without the marker the agent's status is unknown.
        return proc.returncode if proc.returncode != 0 else 255

    def _cleanup(self) -> None:
        if self._workdir is None:
            return
        console = self._workdir / "console.txt"
        if console.is_file():
            self.console = console.read_text("utf-8", "replace")
        shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None

    def finish_run(self, run: Run) -> None:
        """Adds what the guest measured besides the stream (the kernel's
        timerlat) to `run`."""
        # TCG: the guest's speed follows the host's load (KVM too is a VM).
        timerlat.attach(run, self.tracer, emulated=True)
        guest_trace.attach(run, self.traced)
        if self.probe_lines:  # the guest's system report, not this host's
            kernel = self.launch.kernel
            run.machine = probe_remote.probe_text(
                "\n".join(self.probe_lines), "guest", kernel.config, kernel.release
            )

    def diagnostics(self) -> str:
        """QEMU's own errors, then what the agent wrote to the console
        (its stderr), else the console's last lines (a boot that failed)."""
        parts = [line for line in list(self._stderr)[-10:] if line.strip()]
        console = self.console.splitlines()
        started = [i for i, line in enumerate(console) if "starting the agent" in line]
        tail = console[started[-1] + 1 :] if started else console[-15:]
        parts += [line for line in tail if line.strip()][-20:]
        code = self.proc.returncode if self.proc is not None else None
        if self._exit_status is None and code == 0:
            parts.insert(0, "the guest ended without reporting the agent's exit status")
        elif self._exit_status is None and code is not None and code < 0:
            parts.insert(0, f"QEMU was ended by {signal.Signals(-code).name}")
        return "\n".join(parts)
