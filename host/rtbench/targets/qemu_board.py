"""QEMU board targets: an RTOS firmware booted on an emulated board, its
stream read from the board's emulated UART.

    qemu:<port>-<board>          an RTOS port on a board it lists in its
                                 manifest (agent/ports/<port>/port.toml;
                                 rtbench.ports), e.g. qemu:freertos-mps2-an385:
                                 FreeRTOS on ARM's MPS2 AN385 (Cortex-M3)

The firmware is built (`rtbench build --port freertos --board mps2-an385`,
cached) and booted once per run; the run's arguments reach it through
semihosting (its SYS_GET_CMDLINE), its exit status comes back as QEMU's exit
code (semihosting exit), and QEMU is always stopped: at the agent's exit,
after the boot or idle timeout, on Ctrl-C and on any error.

Options (query string or targets file):

    time=icount     icount: virtual time, one instruction = 2^shift ns
                    (deterministic: the same firmware gives the same
                    figures); host: emulated time follows the host's clock
    shift=5         the -icount shift
    flavor=release  test: the firmware with the fault-injection hooks
    max_samples=2000 samples the firmware buffers per series (its RAM)
    boot_timeout=60 seconds until the firmware's first record

Every run is `emulated`. Under -icount a figure is instruction-count time:
repeatable and comparable between RTOSes on the same emulated board, not a
hardware latency.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtbench import ports
from rtbench.catalogue import firmware_list, snapshot_name
from rtbench.machine.build import (
    BuildError,
    Flavor,
    agent_digest,
    agent_source,
    ensure_firmware,
    kernel_identity,
)
from rtbench.targets import (
    Options,
    Reachability,
    TargetError,
    check_options,
    opt_float,
    opt_int,
    opt_str,
)
from rtbench.targets.qemu import qemu_version
from rtbench.transports.base import TransportError
from rtbench.transports.board import BoardTransport

OPTIONS = ("time", "shift", "flavor", "max_samples", "boot_timeout")


@dataclass(frozen=True)
class BoardSpec:
    """An emulated board with an RTOS port's firmware (from their manifests)."""

    name: str  # as qemu:NAME spells it: <port>-<board>
    port: ports.Port
    board: ports.Board


def board_specs() -> dict[str, BoardSpec]:
    """qemu:NAME for every board of every RTOS port; {} without agent sources."""
    try:
        src = agent_source()
    except BuildError:
        return {}
    try:
        found = ports.board_targets(src)
    except ports.ManifestError as e:
        raise TargetError(str(e)) from None
    return {name: BoardSpec(name, p, b) for name, (p, b) in found.items()}


@dataclass(frozen=True)
class BoardSettings:
    time: str = "icount"  # icount or host
    shift: int = 5
    flavor: str = "release"
    max_samples: int = 2000
    boot_timeout: float = 60.0

    @classmethod
    def from_options(cls, opts: Options) -> BoardSettings:
        check_options("qemu board", opts, OPTIONS)
        clock = (opt_str(opts, "time", "icount") or "icount").lower()
        if clock not in ("icount", "host"):
            raise TargetError(f"time={clock!r}: expected icount or host")
        flavor = (opt_str(opts, "flavor", "release") or "release").lower()
        if flavor not in ("release", "test"):
            raise TargetError(f"flavor={flavor!r}: expected release or test")
        shift = opt_int(opts, "shift", 5, lo=0)
        if shift > 10:
            raise TargetError(f"shift={shift}: expected 0..10 (2^shift ns per instruction)")
        return cls(
            time=clock,
            shift=shift,
            flavor=flavor,
            max_samples=opt_int(opts, "max_samples", 2000),
            boot_timeout=opt_float(opts, "boot_timeout", 60.0),
        )

    def clock_args(self) -> list[str]:
        # sleep=off: virtual time does not jump over idle periods to catch
        # up with the host; it advances with instructions only.
        return ["-icount", f"shift={self.shift},sleep=off"] if self.time == "icount" else []


class BoardTarget:
    """An RTOS firmware on an emulated board (see the module's doc)."""

    kind = "qemu"
    emulated = True
    is_local = False

    def __init__(self, spec: BoardSpec, settings: BoardSettings, name: str | None = None) -> None:
        self.spec = spec
        self.settings = settings
        self.name = name or f"qemu:{spec.name}"
        self._firmware: Path | None = None  # the image transport() boots

    @property
    def port(self) -> str:
        """The agent's port: its case table is `catalogue.port_cases(port)`."""
        return self.spec.port.name

    @property
    def most_samples(self) -> int:
        """Samples per series the firmware's RAM holds: the cap on every
        request (`AgentRequest.within`, applied by `rtbench.run.measure.plan_for`)."""
        return self.settings.max_samples

    def firmware(self) -> Path:
        try:
            flavor: Flavor = "test" if self.settings.flavor == "test" else "release"
            return ensure_firmware(self.spec.port.name, self.spec.board.name, flavor)
        except BuildError as e:
            raise TransportError(str(e)) from None

    def find_qemu(self) -> str:
        b = self.spec.board
        path = shutil.which(b.qemu)
        if path is None:
            raise TransportError(
                f"{b.qemu} not found: install QEMU "
                f"(Debian/Ubuntu: apt-get install {b.qemu_package})"
            )
        return path

    def metadata(self) -> dict[str, Any]:
        s = self.settings
        p, b = self.spec.port, self.spec.board
        meta: dict[str, Any] = {
            "kind": "qemu",
            "emulator": "qemu",
            "accel": "tcg",
            "machine": b.qemu_machine,
            "board": b.name,
            "cpu": b.qemu_cpu,
            "os": p.os,
            "os_version": p.version,
            "port": p.name,
            "time": s.time,
            "firmware": s.flavor,
        }
        # What the firmware is: its kernel by content, the image by its hash.
        with contextlib.suppress(BuildError):
            meta.update(kernel_identity(p.name))
        if self._firmware is not None and self._firmware.is_file():
            meta["firmware_sha256"] = agent_digest(self._firmware)
        if p.cannot:
            meta["port_cannot"] = dict(p.cannot)
        if s.time == "icount":
            meta["icount_shift"] = s.shift
            meta["time_detail"] = (
                f"instruction-count time (-icount shift={s.shift}: one instruction = "
                f"{2**s.shift} ns)"
            )
        else:
            meta["time_detail"] = "host time (emulated timings follow the host's load)"
        if p.tick_rate_hz:
            meta["tick_rate_hz"] = p.tick_rate_hz
        qemu = shutil.which(b.qemu)
        if qemu:
            meta["qemu"] = qemu_version(qemu)
        return meta

    def transport(self, agent: Path | None = None) -> BoardTransport:
        """`agent`: a firmware ELF to boot instead of the one rtbench builds."""
        qemu = self.find_qemu()
        firmware = agent or self.firmware()
        self._firmware = firmware
        return BoardTransport(self.name, self.spec, self.settings, firmware, qemu)

    def case_table(self, timeout: float = 300.0) -> str:
        """The firmware's `--list` (one JSON line per case), booted once:
        what `make catalogue` ships for this port (catalogue.py)."""
        argv = self.transport().argv(["--list"])
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise TransportError(f"{self.name}: --list wrote no end in {timeout:.0f} s") from None
        table = firmware_list(proc.stdout)
        if proc.returncode != 0 or not table:
            raise TransportError(f"{self.name}: --list failed: {proc.stdout[-500:]}{proc.stderr}")
        return table

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        b = self.spec.board
        if shutil.which(b.qemu) is None:
            return Reachability(False, f"{b.qemu} not found")
        return Reachability(True, f"{b.qemu} -machine {b.qemu_machine}")


def write_case_tables(data: Path) -> list[Path]:
    """`make catalogue`: each RTOS port's case table, from its first
    board's firmware booted once, as `data/<port>-cases.jsonl`."""
    written = []
    seen: set[str] = set()
    for spec in board_specs().values():
        if spec.port.name in seen:
            continue
        seen.add(spec.port.name)
        table = BoardTarget(spec, BoardSettings.from_options({})).case_table()
        path = data / snapshot_name(spec.port.name)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(table)
        tmp.replace(path)
        written.append(path)
    return written


def make_target(name: str, opts: Options, label: str) -> BoardTarget:
    return BoardTarget(board_specs()[name], BoardSettings.from_options(opts), label)
