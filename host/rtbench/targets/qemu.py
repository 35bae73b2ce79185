"""QEMU targets: a Linux kernel booted in QEMU, with rtbench as its user space.

`qemu:debian-rt` and `qemu:debian-generic` boot Debian's packaged kernels
(fetched once with `rtbench kernel fetch`, or on first use; the 6.12 ones
are `debian-rt-6.12`..., the arm64 ones `debian-rt-arm64`... on
`qemu-system-aarch64 -M virt`); `qemu:PATH` boots any x86_64 bzImage or
arm64 Image. Options (query string or targets file):

    smp=2            virtual CPUs
    memory=512       MiB of guest memory
    accel=auto       auto: KVM when a probe boot works, else TCG; or tcg, kvm
    isolcpus=1       kernel command-line options, added as given
    nohz_full=1
    rcu_nocbs=1
    preempt=full
    cmdline="..."    anything else for the kernel command line
    boot_timeout=300 seconds the guest may take to start the agent

Every run on a QEMU target is `emulated`: its timings compare only with
runs on the same emulator, accelerator and settings (metadata says which).
Nested KVM can hang rather than fail, so KVM is used only after a probe
boot finished within a timeout; the probe's answer is cached per host
kernel and QEMU version.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import platformdirs

from rtbench.machine.build import BuildError, ensure_agent, host_arch
from rtbench.targets import (
    Options,
    Reachability,
    TargetError,
    check_options,
    initramfs,
    kernels,
    opt_float,
    opt_int,
    opt_str,
    pvh,
)
from rtbench.transports.base import TransportError
from rtbench.transports.qemu import GUESTS, Launch, QemuTransport, die_with_parent

KERNEL_OPTIONS = ("isolcpus", "nohz_full", "rcu_nocbs", "preempt")
OPTIONS = ("smp", "memory", "accel", "cmdline", "boot_timeout", *KERNEL_OPTIONS)
QEMU = GUESTS["x86_64"].qemu
MACHINE = GUESTS["x86_64"].machine
BASE_CMDLINE = GUESTS["x86_64"].cmdline
KVM_PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class QemuSettings:
    smp: int = 2
    memory_mb: int = 512
    accel: str = "auto"
    cmdline: str = ""  # the extras after BASE_CMDLINE
    boot_timeout: float = 300.0

    @classmethod
    def from_options(cls, opts: Options) -> QemuSettings:
        check_options("qemu", opts, OPTIONS)
        accel = (opt_str(opts, "accel", "auto") or "auto").lower()
        if accel not in ("auto", "tcg", "kvm"):
            raise TargetError(f"accel={accel!r}: expected auto, tcg or kvm")
        extras = [f"{k}={opts[k]}" for k in KERNEL_OPTIONS if k in opts]
        if opts.get("cmdline"):
            extras.append(str(opts["cmdline"]))
        for word in " ".join(extras).split():
            if word == "--" or word.startswith(("console=", "rdinit=", "init=")):
                raise TargetError(f"cmdline: {word!r} is rtbench's to set")
        return cls(
            smp=opt_int(opts, "smp", 2),
            memory_mb=opt_int(opts, "memory", 512, lo=128),
            accel=accel,
            cmdline=" ".join(extras),
            boot_timeout=opt_float(opts, "boot_timeout", 300.0),
        )

    def kernel_cmdline(self, arch: str = "x86_64") -> str:
        return f"{GUESTS[arch].cmdline} {self.cmdline}".strip()


def qemu_version(qemu: str) -> str:
    """The emulator's version, asked once per binary: every board run's
    metadata names it, and a test run boots a board hundreds of times (a
    `--version` is a process start of a large binary each). Keyed by the
    file's identity too, so a QEMU upgraded in place is asked again."""
    try:
        st = os.stat(qemu)
    except OSError:
        return ""
    return _qemu_version(qemu, st.st_ino, st.st_mtime_ns, st.st_size)


@cache
def _qemu_version(qemu: str, *identity: int) -> str:
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return ""
    m = re.search(r"version\s+(\S+)", out.stdout)
    return m.group(1) if m else out.stdout.strip()


def find_qemu(arch: str = "x86_64") -> str:
    guest = GUESTS[arch]
    path = shutil.which(guest.qemu)
    if path is None:
        raise TransportError(
            f"{guest.qemu} not found: install QEMU (Debian/Ubuntu: apt-get install {guest.package})"
        )
    return path


def _probe_cache() -> Path:
    return platformdirs.user_cache_path("rtbench") / "qemu-accel.json"


def probe_kvm(qemu: str, kernel: kernels.Kernel, agent: Path) -> tuple[bool, str]:
    """Whether a KVM guest boots and powers off within the timeout here;
    cached per host kernel, QEMU version and guest kernel."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is missing or not accessible"
    key = f"{platform.release()} qemu {qemu_version(qemu)} {kernel.image}"
    path = _probe_cache()
    try:
        known: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return bool(known[key]["kvm"]), str(known[key]["detail"])
    ok, detail = _probe_boot(qemu, kernel, agent)
    known[key] = {"kvm": ok, "detail": detail}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, indent=1))
    os.replace(tmp, path)
    return ok, detail


def _probe_boot(qemu: str, kernel: kernels.Kernel, agent: Path) -> tuple[bool, str]:
    launch = Launch(qemu, kernel, "kvm", MACHINE, 1, 256, BASE_CMDLINE)
    with tempfile.TemporaryDirectory(prefix="rtbench-kvm-probe-") as tmp:
        base = initramfs.base_archive(agent)
        initrd = initramfs.run_archive(base, None, Path(tmp) / "probe.cpio")
        t0 = time.monotonic()
        try:
            # run() kills QEMU when the timeout passes.
            done = subprocess.run(
                launch.argv(initrd, Path(tmp) / "console.txt"),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=KVM_PROBE_TIMEOUT_S,
                preexec_fn=die_with_parent,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False, f"a KVM guest did not finish booting in {KVM_PROBE_TIMEOUT_S:.0f} s"
    if initramfs.MARKER.encode() + b" exit=0" in done.stdout:
        return True, f"a KVM guest booted in {time.monotonic() - t0:.1f} s"
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return False, "KVM failed: " + (err[0] if err else f"QEMU exited {done.returncode}")


class QemuTarget:
    """A kernel booted in QEMU (see the module's doc)."""

    kind = "qemu"
    guest_trace = True  # `--trace` is recorded in the guest (targets/guest_trace.py)
    # Always: even under KVM the guest's timings are a VM's, comparable only
    # with runs of the same setup.
    emulated = True
    is_local = False

    def __init__(self, kernel: str, settings: QemuSettings, name: str | None = None) -> None:
        self.kernel_ref = kernel  # debian-rt, debian-generic or a path
        self.settings = settings
        self.name = name or f"qemu:{kernel}"
        self._accel: tuple[str, str] | None = None

    def kernel(self, download: bool = True) -> kernels.Kernel:
        """The kernel image: a path as given, else the cached package, else
        fetched now (once) when `download`."""
        try:
            if self.kernel_ref not in kernels.KNOWN:
                return kernels.from_path(Path(self.kernel_ref).expanduser())
            have = kernels.cached(self.kernel_ref)
            if have is not None or not download:
                if have is None:
                    raise kernels.KernelError(
                        f"{self.kernel_ref} is not fetched yet: `rtbench kernel fetch "
                        f"{self.kernel_ref}` (or the first run fetches it)"
                    )
                return have
            return kernels.fetch(self.kernel_ref)
        except kernels.KernelError as e:
            raise TransportError(str(e)) from None

    def agent(self, arch: str = "x86_64") -> Path:
        try:
            cross = None if arch == host_arch() else arch
            return ensure_agent("release", arch=cross, static=True)
        except BuildError as e:
            raise TransportError(str(e)) from None

    def accel(self, kernel: kernels.Kernel, agent: Path) -> tuple[str, str]:
        """(tcg or kvm, why)."""
        if self._accel is None:
            wanted = self.settings.accel
            if wanted == "auto" and kernel.arch != host_arch():
                self._accel = ("tcg", f"an {kernel.arch} guest on an {host_arch()} host")
            elif wanted in ("tcg", "kvm"):
                self._accel = (wanted, "asked for")
            else:
                ok, why = probe_kvm(find_qemu(), kernel, agent)
                self._accel = ("kvm", why) if ok else ("tcg", why)
        return self._accel

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "kind": "qemu",
            "emulator": "qemu",
            "machine": MACHINE,
            "smp": self.settings.smp,
            "memory_mb": self.settings.memory_mb,
            "cmdline": self.settings.kernel_cmdline(),
        }
        try:
            k = self.kernel(download=False)
        except TransportError:
            k = None
        guest = GUESTS[k.arch if k is not None else "x86_64"]
        qemu = shutil.which(guest.qemu)
        if qemu:
            meta["qemu"] = qemu_version(qemu)
        if k is None:
            meta["kernel"] = self.kernel_ref
            return meta
        meta["machine"], meta["arch"] = guest.machine, k.arch
        meta["cmdline"] = self.settings.kernel_cmdline(k.arch)
        meta["kernel"] = k.name
        meta.update({f"kernel_{key}": v for key, v in kernels.as_dict(k).items() if key != "name"})
        if self._accel is None and self.settings.accel != "auto":
            self._accel = (self.settings.accel, "asked for")
        if self._accel is not None:
            meta["accel"], meta["accel_detail"] = self._accel
            if self._accel[0] == "tcg":
                meta["qemu_accel"] = guest.tcg_accel  # how the vCPUs are run
            # The PVH entry boots the same kernel without its decompressor,
            # which is what applies KASLR: said, as a run's conditions are.
            via_pvh = pvh.booted(k.image, k.arch, self._accel[0]) != k.image
            meta["boot"] = "pvh entry (no KASLR)" if via_pvh else "kernel image"
        return meta

    def transport(self, agent: Path | None = None) -> QemuTransport:
        """The guest's kernel is fetched and the agent built here (once);
        `agent` must be statically linked (the guest has no C library)."""
        kernel = self.kernel()
        if kernel.arch not in GUESTS:
            raise TransportError(f"{kernel.name}: no QEMU guest for {kernel.arch} kernels")
        qemu = find_qemu(kernel.arch)
        exe = agent or self.agent(kernel.arch)
        if not initramfs.is_static(exe):
            raise TransportError(
                f"{exe} is linked dynamically; a QEMU guest needs a static agent "
                "(leave --agent out and rtbench builds one)"
            )
        accel, _ = self.accel(kernel, exe)
        launch = Launch(
            qemu=qemu,
            kernel=kernel,
            accel=accel,
            machine=GUESTS[kernel.arch].machine,
            smp=self.settings.smp,
            memory_mb=self.settings.memory_mb,
            cmdline=self.settings.kernel_cmdline(kernel.arch),
        )
        return QemuTransport(self.name, launch, exe, self.settings.boot_timeout)

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        try:
            k = self.kernel(download=False)
            find_qemu(k.arch)
        except TransportError as e:
            return Reachability(False, str(e))
        return Reachability(True, f"{k.name} {k.release}".strip())


def make_target(name: str, opts: Options, label: str) -> Any:
    """`qemu:NAME` with its options (the entry point of targets.resolve):
    a Linux kernel, or an RTOS firmware on an emulated board."""
    from rtbench.targets import qemu_board

    boards = qemu_board.board_specs()
    if name in boards:
        return qemu_board.make_target(name, opts, label)
    if name not in kernels.KNOWN and "/" not in name and not Path(name).is_file():
        names = ", ".join("qemu:" + k for k in kernels.KNOWN)
        raise TargetError(
            f"qemu:{name}: unknown kernel or board; use {names}, "
            f"qemu:/path/to/bzImage or {', '.join('qemu:' + b for b in boards)}"
        )
    return QemuTarget(name, QemuSettings.from_options(opts), label)
