"""The guest's whole user space: busybox, the static agent (with RSP-IO's
stimulator rtb-stim beside it when it was built) and an `/init`.

The base archive (busybox, agent, init) is built once per agent binary and
cached; each run appends a tiny second archive holding the agent's
arguments, one per line (the kernel unpacks concatenated archives in
order). Arguments in a file, not on the kernel command line, have no length
limit and no quoting rules.

The guest keeps the kernel console on its first UART and gives the agent
another port for its stream (x86_64: ttyS1; aarch64, whose `virt` machine
has one UART: the virtio console hvc0). QEMU exits 0 on poweroff whatever
happened inside, so `/init` ends the stream port with a marker line
carrying the agent's exit status.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import platformdirs

from rtbench.machine import probe_remote
from rtbench.machine.build import STIM_NAME
from rtbench.targets import guest_trace, timerlat

# Lines on the stream port that come from /init, not from the agent.
MARKER = "rtbench-guest:"

INIT = f"""#!/bin/busybox sh
# rtbench guest init: mount, run the agent on ttyS1, report its status, power off.
# (ttyS1: the stream port, replaced per architecture by init_script.)
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# The stream port's drivers where the kernel has them as modules (in order).
for m in $(cat /rtbench/modules 2>/dev/null); do insmod /lib/modules/$m.ko; done
n=0
while [ ! -e /dev/ttyS1 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
stty -F /dev/ttyS1 raw -echo 115200
read up _ </proc/uptime
echo "{MARKER} init uptime=$up" >/dev/ttyS1
{{SYSPROBE}}if [ -f /rtbench/probe ]; then
    status=0
else
    set --
    if [ -f /rtbench/args ]; then
        while IFS= read -r a; do set -- "$@" "$a"; done </rtbench/args
    fi
    echo "{MARKER} starting the agent"
    # A script of the run's started beside the agent (tests: a hog in the guest).
    [ -f /rtbench/beside ] && sh /rtbench/beside </dev/null >/dev/console 2>&1 &
{{TRACE_SETUP}}    /rtbench-agent "$@" >/dev/ttyS1 2>/dev/console
    status=$?
fi
{{TRACE_DUMP}}{{TIMERLAT}}echo "{MARKER} exit=$status" >/dev/ttyS1
sync
poweroff -f || reboot -f
"""


STREAM_PORT = "ttyS1"


class InitramfsError(RuntimeError):
    pass


def init_script(stream: str = STREAM_PORT) -> str:
    """`/init` with the agent's stream on /dev/`stream` (and the kernel's
    timerlat after the agent when the run asks: rtbench.targets.timerlat)."""

    def part(script: str) -> str:
        return script.replace("MARKER", MARKER).replace("/dev/PORT", "/dev/ttyS1").lstrip("\n")

    # The guest's system report (rtbench.machine.probe_remote), a line per marker.
    sysprobe = (
        f"( {probe_remote.SCRIPT} ) 2>/dev/null |\n"
        f'  while IFS= read -r l; do echo "{MARKER} probe $l"; done >/dev/ttyS1\n'
    )
    return (
        INIT.replace("{SYSPROBE}", sysprobe)
        .replace("{TIMERLAT}", part(timerlat.GUEST_SCRIPT))
        .replace("{TRACE_SETUP}", part(guest_trace.SETUP_SCRIPT))
        .replace("{TRACE_DUMP}", part(guest_trace.DUMP_SCRIPT))
        .replace(STREAM_PORT, stream)
    )


def is_static(path: Path) -> bool:
    """True for an ELF file without a program interpreter (PT_INTERP): it
    runs in a guest that has no C library."""
    with path.open("rb") as f:
        ident = f.read(64)
        if len(ident) < 64 or ident[:4] != b"\x7fELF":
            return False
        is64, little = ident[4] == 2, ident[5] == 1
        end = "<" if little else ">"
        if is64:
            (phoff,) = struct.unpack_from(end + "Q", ident, 32)
            phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
        else:
            (phoff,) = struct.unpack_from(end + "I", ident, 28)
            phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            (p_type,) = struct.unpack(end + "I", f.read(4))
            if p_type == 3:  # PT_INTERP
                return False
    return True


def find_busybox(arch: str | None = None) -> Path:
    """A static busybox for `arch` (None or this machine's: the installed
    one; another: Debian's busybox-static for it, fetched once)."""
    if arch is not None and arch != platform.machine():
        return _foreign_busybox(arch)
    for cand in (shutil.which("busybox"), "/bin/busybox", "/usr/bin/busybox"):
        if cand and Path(cand).is_file() and is_static(Path(cand)):
            return Path(cand)
    raise InitramfsError(
        "no statically linked busybox found: install busybox-static (Debian/Ubuntu: "
        "apt-get install busybox-static)"
    )


_DEBIAN_ARCH = {"aarch64": "arm64", "x86_64": "amd64", "armv7l": "armhf"}


def _foreign_busybox(arch: str) -> Path:
    """Debian's busybox-static for `arch`, extracted with dpkg-deb into the
    cache: a guest of another architecture needs its own."""
    deb_arch = _DEBIAN_ARCH.get(arch, arch)
    out = platformdirs.user_cache_path("rtbench") / "busybox" / f"busybox-{arch}"
    if out.is_file():
        return out
    apt_get, dpkg_deb = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if apt_get is None or dpkg_deb is None:
        raise InitramfsError(
            f"a {arch} guest needs a static {arch} busybox: on a Debian host rtbench fetches "
            f"busybox-static:{deb_arch} with apt-get; here apt-get or dpkg-deb is missing"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".fetch-") as tmp:
        for step in ("download", "extract"):
            cmd = (
                [apt_get, "download", "-q", f"busybox-static:{deb_arch}"]
                if step == "download"
                else [dpkg_deb, "-x", *(str(p) for p in Path(tmp).glob("*.deb")), "tree"]
            )
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise InitramfsError(
                    f"{' '.join(cmd)} failed: {proc.stderr.strip()[-400:]}\n(apt knows "
                    f"{deb_arch} packages after `dpkg --add-architecture {deb_arch} && "
                    "apt-get update`, as root)"
                )
        exe = Path(tmp) / "tree" / "bin" / "busybox"
        if not exe.is_file() or not is_static(exe):
            raise InitramfsError(f"busybox-static:{deb_arch} holds no static bin/busybox")
        os.replace(exe, out)
    return out


def _cpio(root: Path, out: Path) -> None:
    """A newc archive of `root`, owned by root, with `cpio` (GNU or busybox)."""
    tool = shutil.which("cpio")
    if tool is None:
        raise InitramfsError("'cpio' not found: install cpio (Debian/Ubuntu: apt-get install cpio)")
    names = sorted(os.path.relpath(p, root) for p in root.rglob("*"))
    with out.open("wb") as f:
        proc = subprocess.run(
            [tool, "-o", "-H", "newc", "-R", "0:0", "--quiet"],
            input="\n".join(names).encode() + b"\n",
            stdout=f,
            stderr=subprocess.PIPE,
            cwd=root,
            check=False,
        )
    if proc.returncode != 0:
        raise InitramfsError(f"cpio failed: {proc.stderr.decode(errors='replace').strip()}")


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little") + p)
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return platformdirs.user_cache_path("rtbench") / "initramfs"


def base_archive(
    agent: Path,
    arch: str | None = None,
    stream: str = STREAM_PORT,
    modules: tuple[Path, ...] = (),
) -> Path:
    """The cached archive of busybox, `agent`, `/init` and `modules` (the
    kernel modules the stream port needs, loaded in this order) for a guest
    of `arch` with its stream on /dev/`stream`."""
    if not is_static(agent):
        raise InitramfsError(
            f"{agent} is linked dynamically: a QEMU guest has no C library; build the "
            "agent statically (`rtbench build --static`) or leave --agent out"
        )
    busybox = find_busybox(arch)
    init = init_script(stream)
    # RSP-IO's stimulator, built beside the agent: the agent looks for it
    # beside itself (docs/rsp-io.md); without it RSP-IO is skipped.
    stim = agent.parent / STIM_NAME
    stim_bytes = stim.read_bytes() if stim.is_file() and is_static(stim) else b""
    mods = [(m.stem, m.read_bytes()) for m in modules]
    key = _digest(
        agent.read_bytes(),
        busybox.read_bytes(),
        init.encode(),
        stim_bytes,
        *(name.encode() + data for name, data in mods),
    )
    out = cache_dir() / f"base-{key}.cpio"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rtbench-initramfs-") as tmp:
        root = Path(tmp) / "root"
        for d in ("bin", "dev", "proc", "sys", "tmp", "rtbench"):
            (root / d).mkdir(parents=True)
        shutil.copyfile(busybox, root / "bin" / "busybox")
        shutil.copyfile(agent, root / "rtbench-agent")
        (root / "init").write_text(init)
        exes = ["bin/busybox", "rtbench-agent", "init"]
        if stim_bytes:
            (root / STIM_NAME).write_bytes(stim_bytes)
            exes.append(STIM_NAME)
        if mods:
            (root / "lib" / "modules").mkdir(parents=True)
            for name, data in mods:
                (root / "lib" / "modules" / f"{name}.ko").write_bytes(data)
            (root / "rtbench" / "modules").write_text("".join(f"{n}\n" for n, _ in mods))
        for exe in exes:
            (root / exe).chmod(0o755)
        staged = Path(tmp) / "base.cpio"
        _cpio(root, staged)
        # Atomic: a concurrent run sees the whole archive or none.
        fd, tmp_out = tempfile.mkstemp(dir=out.parent, prefix=".base-")
        os.close(fd)
        shutil.copyfile(staged, tmp_out)
        os.replace(tmp_out, out)
    return out


def run_archive(
    base: Path,
    args: list[str] | None,
    dest: Path,
    tracer: timerlat.Request | None = None,
    trace: guest_trace.Request | None = None,
    beside: str | None = None,
) -> Path:
    """`dest`: the base archive followed by this run's arguments (`None`:
    the accelerator probe, which only boots and powers off), the
    kernel timerlat's settings when `tracer`, and `beside`: a shell script
    the guest starts in the background just before the agent."""
    for a in args or []:
        if "\n" in a or "\0" in a:
            raise InitramfsError(f"an agent argument holds a newline: {a!r}")
    with tempfile.TemporaryDirectory(prefix="rtbench-args-") as tmp:
        root = Path(tmp) / "root"
        (root / "rtbench").mkdir(parents=True)
        if args is None:
            (root / "rtbench" / "probe").write_text("")
        else:
            (root / "rtbench" / "args").write_text("".join(f"{a}\n" for a in args))
            if tracer is not None:
                (root / "rtbench" / "timerlat").write_text(tracer.line())
            if trace is not None:
                (root / "rtbench" / "trace").write_text(trace.line())
            if beside is not None:
                (root / "rtbench" / "beside").write_text(beside)
        extra = Path(tmp) / "extra.cpio"
        _cpio(root, extra)
        with dest.open("wb") as f:
            with base.open("rb") as b:
                shutil.copyfileobj(b, f)
            f.write(extra.read_bytes())
    return dest
