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

from rtbench.targets import initramfs, kernels, pvh

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
if [ -d /preinstalled ]; then
    mkdir -p /tmp/rtbench && cp -p /preinstalled/* /tmp/rtbench/
fi
while true; do
    setsid -c sh -l </dev/ttyS0 >/dev/ttyS0 2>&1
done
"""

PROMPT = r"[^\r\n]*# "


def shell_initramfs(dest: Path, preinstalled: dict[str, Path] | None = None) -> Path:
    """busybox and a shell on ttyS0: no agent (rtbench copies it), or the
    files `preinstalled` (a name in rtbench's folder on the place, /tmp/rtbench,
    and the file to put there) where a run before left them."""
    busybox = initramfs.find_busybox()
    with tempfile.TemporaryDirectory(prefix="rtbench-lab-initramfs-") as tmp:
        root = Path(tmp) / "root"
        for d in ("bin", "dev", "proc", "sys", "tmp", "root"):
            (root / d).mkdir(parents=True)
        if preinstalled:
            (root / "preinstalled").mkdir()
            for name, src in preinstalled.items():
                shutil.copy2(src, root / "preinstalled" / name)
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


# Starting QEMU under TCG on a loaded host takes seconds, in which another
# process on the machine may bind the port that was free when chosen: that
# QEMU then ends ("Address already in use") and its place's console refuses
# every connection. So a guest counts as started only once QEMU itself
# listens on its port; a port taken meanwhile is chosen again.
PORT_TRIES = 5
LISTEN_TIMEOUT_S = 120.0


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1:PORT (from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        # local address 0100007F:PORT in hex; state 0A is LISTEN.
        if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":
            found.add(fields[9])
    return found


def _listens(pid: int, port: int) -> bool:
    """Whether process PID itself (not another one) listens on PORT."""
    inodes = _listening_inodes(port)
    if not inodes:
        return False
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = {os.readlink(fd) for fd in fds.iterdir()}
    except OSError:
        return False
    return any(f"socket:[{inode}]" in links for inode in inodes)


def _start_guest(lab: Lab, place: str, kernel: kernels.Kernel, initrd: Path) -> int:
    """Starts PLACE's guest; returns the port its console listens on."""
    log = lab.workdir / f"qemu-{place}.log"
    # What the guest writes on its console, read or not: a guest that
    # panicked (QEMU then exits, -no-reboot) says why there.
    console = lab.workdir / f"console-{place}.log"
    for _ in range(PORT_TRIES):
        port = free_port()
        proc = lab.guests[place] = subprocess.Popen(
            [
                "qemu-system-x86_64", "-M", "q35", "-accel", "tcg", "-cpu", "max",
                "-smp", "1", "-m", "256", "-nodefaults", "-display", "none",
                "-monitor", "none", "-no-reboot",
                # Its PVH entry, as a QEMU target boots it (targets/pvh.py).
                "-kernel", str(pvh.elf_image(kernel.image) or kernel.image),
                "-initrd", str(initrd),
                # loglevel=1: a starved guest's RCU-stall warnings would
                # overwrite records on the shared console (a lost `bye`).
                "-append", "console=ttyS0 quiet loglevel=1 panic=-1 tsc=reliable",
                "-chardev", f"socket,id=console,host=127.0.0.1,port={port},server=on,"
                f"wait=off,logfile={console}",
                "-serial", "chardev:console",
            ],
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
        )  # fmt: skip
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while proc.poll() is None and not _listens(proc.pid, port):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the QEMU of place {place} does not listen on port {port} after "
                    f"{LISTEN_TIMEOUT_S:.0f} s (see {log})"
                )
            time.sleep(0.2)
        if proc.poll() is None:
            return port
        said = log.read_text(errors="replace")
        if "in use" not in said:  # not a port taken meanwhile
            raise RuntimeError(f"the QEMU of place {place} ended ({proc.returncode}): {said}")
    raise RuntimeError(f"the QEMU of place {place}: no free port in {PORT_TRIES} tries ({log})")


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


def start_lab(
    workdir: Path,
    places: list[str],
    kernel: kernels.Kernel,
    preinstalled: dict[str, dict[str, Path]] | None = None,
) -> Lab:
    """Boots one guest per place and exports their consoles (see the module);
    `preinstalled` gives a place files already in rtbench's folder there
    (shell_initramfs)."""
    lab = Lab(workdir)
    try:
        _start(lab, places, kernel, preinstalled or {})
    except BaseException:
        lab.close()
        raise
    return lab


def _start(
    lab: Lab, places: list[str], kernel: kernels.Kernel, preinstalled: dict[str, dict[str, Path]]
) -> None:
    initrds = {
        place: shell_initramfs(lab.workdir / f"lab-initrd-{place}.cpio", preinstalled.get(place))
        for place in places
    }
    ports = {place: _start_guest(lab, place, kernel, initrds[place]) for place in places}
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
