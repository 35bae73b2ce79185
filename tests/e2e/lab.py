"""A real labgrid lab on this machine, for the tests: QEMU guests whose
serial port is a TCP server (as ser2net serves a board's UART), a
`labgrid-coordinator`, and a `labgrid-exporter` exporting each guest's port
as a `NetworkSerialPort` of its own place.

The guests boot Debian's kernel with a busybox initramfs that has a root
shell on its serial port and no agent: rtbench copies the agent there, as
it would onto a board. Everything here is started by the test and ended by
`Lab.close()`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import die_with_parent, free_port

from rtbench.targets import initramfs, kernels

# /init of a lab guest: a root shell on the serial console (its controlling
# terminal, so that Ctrl-C reaches the foreground job), started again when
# it exits, as a board's getty would.
SHELL_INIT = """#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mkdir -p /root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
while true; do
    setsid -c sh -l </dev/ttyS0 >/dev/ttyS0 2>&1
done
"""

PROMPT = r"[^\r\n]*# "


def shell_initramfs(dest: Path) -> Path:
    """busybox and a shell on ttyS0: no agent (rtbench copies it)."""
    busybox = initramfs.find_busybox()
    with tempfile.TemporaryDirectory(prefix="rtbench-lab-initramfs-") as tmp:
        root = Path(tmp) / "root"
        for d in ("bin", "dev", "proc", "sys", "tmp", "root"):
            (root / d).mkdir(parents=True)
        shutil.copyfile(busybox, root / "bin" / "busybox")
        (root / "init").write_text(SHELL_INIT)
        (root / "bin" / "busybox").chmod(0o755)
        (root / "init").chmod(0o755)
        initramfs._cpio(root, dest)
    return dest


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} ended with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:.0f} s")


@dataclass
class Lab:
    """The running lab: `coordinator` is HOST:PORT, `places` the place names."""

    workdir: Path
    coordinator: str = ""
    places: list[str] = field(default_factory=list)
    guests: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def client(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "labgrid.remote.client", "-x", self.coordinator, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "LG_COORDINATOR": self.coordinator},
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)}: {proc.stderr or proc.stdout}")
        return proc

    def acquired_by(self, place: str) -> str | None:
        """Who holds `place` (HOST/USER), None when it is free."""
        shown = self.client("-p", place, "show").stdout
        for line in shown.splitlines():
            key, _, value = line.strip().partition(": ")
            if key == "acquired":
                return None if value.strip() in ("", "None") else value.strip()
        return None

    def wait_released(self, place: str, timeout: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.acquired_by(place) is None:
                return True
            time.sleep(0.5)
        return False

    def close(self) -> None:
        for proc in [*self.procs, *self.guests.values()]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.procs, *self.guests.values()]:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


def start_lab(workdir: Path, places: list[str], kernel: kernels.Kernel) -> Lab:
    """Boots one guest per place and exports their consoles (see the module)."""
    lab = Lab(workdir)
    try:
        _start(lab, places, kernel)
    except BaseException:
        lab.close()
        raise
    return lab


def _start(lab: Lab, places: list[str], kernel: kernels.Kernel) -> None:
    initrd = shell_initramfs(lab.workdir / "lab-initrd.cpio")
    ports: dict[str, int] = {}
    for place in places:
        port = ports[place] = free_port()
        lab.guests[place] = subprocess.Popen(
            [
                "qemu-system-x86_64", "-M", "q35", "-accel", "tcg", "-cpu", "max",
                "-smp", "1", "-m", "256", "-nodefaults", "-display", "none",
                "-monitor", "none", "-no-reboot",
                "-kernel", str(kernel.image), "-initrd", str(initrd),
                # loglevel=1: a starved guest's RCU-stall warnings would
                # overwrite records on the shared console (a lost `bye`).
                "-append", "console=ttyS0 quiet loglevel=1 panic=-1 tsc=reliable",
                "-serial", f"tcp:127.0.0.1:{port},server=on,wait=off",
            ],
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
            stdout=subprocess.DEVNULL,
            stderr=(lab.workdir / f"qemu-{place}.log").open("wb"),
        )
    cport = free_port()
    lab.coordinator = f"127.0.0.1:{cport}"
    coord_dir = lab.workdir / "coordinator"
    coord_dir.mkdir()
    lab.procs.append(
        subprocess.Popen(
            [sys.executable, "-m", "labgrid.remote.coordinator", "-l", lab.coordinator],
            cwd=coord_dir,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
            stdout=(lab.workdir / "coordinator.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
    )
    _wait_port(cport, lab.procs[0], 60)
    config = lab.workdir / "exporter.yaml"
    config.write_text(
        "".join(
            f"{place}:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {port}\n"
            f"    speed: 115200\n    protocol: raw\n"
            for place, port in ports.items()
        )
    )
    lab.procs.append(
        subprocess.Popen(
            [
                sys.executable, "-m", "labgrid.remote.exporter", "-c", lab.coordinator,
                "-n", "lab-exporter", "--hostname", "127.0.0.1", str(config),
            ],
            cwd=lab.workdir,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
            stdout=(lab.workdir / "exporter.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
    )
    for place in places:
        lab.client("-p", place, "create")
        lab.client("-p", place, "add-match", f"lab-exporter/{place}/NetworkSerialPort")
    # The exporter registers its resources a moment after it starts.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = lab.client("resources", check=False).stdout
        if all(f"lab-exporter/{p}/NetworkSerialPort" in listed for p in places):
            break
        if lab.procs[1].poll() is not None:
            raise RuntimeError((lab.workdir / "exporter.log").read_text())
        time.sleep(0.5)
    else:
        raise RuntimeError("the exporter's resources did not appear")
    lab.places = list(places)
