"""Kernels to boot in QEMU: Debian's packaged kernels, fetched with apt.

`fetch("debian-rt")` resolves Debian's metapackage (`linux-image-rt-amd64`)
to the versioned package it depends on (a kernel series without a
metapackage, 6.12 in Debian 12, is the newest `linux-image-6.12.N+deb12-*`
package apt offers), downloads that one `.deb` with
`apt-get download` (no root needed: it lands in a temporary folder) and
keeps only `boot/vmlinuz-*` and `boot/config-*` in the user's cache, beside a
`kernel.json` that records the package, its version and the kernel release.
A second fetch of the same package version costs nothing.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs


class KernelError(RuntimeError):
    pass


@dataclass(frozen=True)
class KernelSpec:
    name: str
    metapackage: str  # a metapackage, or a regex of versioned packages (`series`)
    arch: str  # Debian's architecture name
    qemu_arch: str  # the qemu-system-* suffix
    series: bool = False  # no metapackage: the newest package matching `metapackage`

    @property
    def qualifier(self) -> str:
        # A foreign architecture's packages are named NAME:ARCH to apt.
        return "" if self.arch == _HOST_ARCH else f":{self.arch}"


_HOST_ARCH = "amd64"
_QEMU_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}


def _specs() -> dict[str, KernelSpec]:
    known: dict[str, KernelSpec] = {}
    for arch in ("amd64", "arm64"):
        suffix = "" if arch == _HOST_ARCH else f"-{arch}"
        for flavor, tag in (("rt", "rt-"), ("generic", "")):
            name = f"debian-{flavor}{suffix}"
            known[name] = KernelSpec(name, f"linux-image-{tag}{arch}", arch, _QEMU_ARCH[arch])
            name = f"debian-{flavor}-6.12{suffix}"
            pattern = rf"linux-image-6\.12\.\d+\+deb\d+-{tag}{arch}-unsigned"
            known[name] = KernelSpec(name, pattern, arch, _QEMU_ARCH[arch], series=True)
    return known


# debian-rt, debian-generic (Debian 12's 6.1), debian-rt-6.12, debian-generic-6.12
# and each with -arm64.
KNOWN: dict[str, KernelSpec] = _specs()

_NO_APT = (
    "`rtbench kernel fetch` needs apt-get and dpkg-deb (a Debian or Ubuntu host, or a "
    "container of one). Elsewhere, download {pkg} (any recent linux-image-*-{flavor}{arch} "
    "from Debian's archive), extract it with `ar x` and `tar -xf data.tar.xz ./boot`, and "
    "boot the boot/vmlinuz-* file as the target `qemu:PATH`."
)


@dataclass(frozen=True)
class Kernel:
    """A bootable kernel image and what is known about it."""

    name: str
    image: Path
    release: str  # `uname -r` of the kernel, when known ("" for a bare image)
    package: str = ""
    version: str = ""
    arch: str = "x86_64"
    config: Path | None = None
    preempt: str = ""  # from the config: PREEMPT_RT, full, voluntary, none ("" unknown)
    hz: int = 0  # CONFIG_HZ (0 unknown)
    timerlat: bool = False  # CONFIG_TIMERLAT_TRACER: the kernel's own latency tracer
    # The guest's modules (GUEST_MODULES and their dependencies) in load order.
    modules: tuple[Path, ...] = ()


def cache_root() -> Path:
    env = os.environ.get("RTBENCH_KERNEL_DIR")
    return Path(env) if env else platformdirs.user_cache_path("rtbench") / "kernels"


def _tool(name: str, spec: KernelSpec) -> str:
    path = shutil.which(name)
    if path is None:
        flavor = "rt-" if "-rt-" in spec.metapackage else ""
        raise KernelError(_NO_APT.format(pkg=spec.metapackage, flavor=flavor, arch=spec.arch))
    return path


def _apt_cache_options() -> list[str]:
    """Where apt keeps no binary cache of its lists (container images set
    Dir::Cache::pkgcache to ""), every apt-cache call parses all the lists
    again: 2 s of CPU each, 30 s on a loaded machine, several per fetch.
    apt then keeps one in rtbench's cache instead, checked against the
    lists by apt itself and rebuilt when they change."""
    try:
        proc = subprocess.run(
            ["apt-config", "shell", "P", "Dir::Cache::pkgcache"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    except OSError:
        return []
    if proc.returncode != 0 or proc.stdout.strip() not in ("", "P=''"):
        return []
    own = cache_root() / "apt"
    try:
        own.mkdir(parents=True, exist_ok=True)
    except OSError:
        return []
    return ["-o", f"Dir::Cache::pkgcache={own / 'pkgcache.bin'}", "-o", "Dir::Cache::srcpkgcache="]


def _apt(tool: str, *args: str) -> list[str]:
    return [tool, *_apt_cache_options(), *args]


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise KernelError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _unknown(spec: KernelSpec) -> str:
    foreign = (
        f"`dpkg --add-architecture {spec.arch} && apt-get update` (as root: apt knows "
        f"{spec.arch} packages only then)"
        if spec.qualifier
        else "`apt-get update` on a Debian host"
    )
    return f"apt knows no package {spec.metapackage} (Debian's name for it): run {foreign}"


def _candidate(apt_cache: str, package: str) -> str | None:
    policy = _run(_apt(apt_cache, "policy", package))
    cand = re.search(r"Candidate:\s*(\S+)", policy)
    return None if cand is None or cand.group(1) == "(none)" else cand.group(1)


def _newest_of_series(apt_cache: str, spec: KernelSpec) -> tuple[str, str]:
    prefix = spec.metapackage.split("\\")[0]  # the literal start, for pkgnames
    names = _run(_apt(apt_cache, "pkgnames", prefix)).split()
    match = [n for n in names if re.fullmatch(spec.metapackage, n)]

    def key(n: str) -> list[int]:
        return [int(x) for x in re.findall(r"\d+", n)]

    # pkgnames also lists packages apt has only heard of: the newest with a
    # candidate is the one apt offers.
    for name in sorted(match, key=key, reverse=True):
        package = name + spec.qualifier
        version = _candidate(apt_cache, package)
        if version is not None:
            return package, version
    raise KernelError(_unknown(spec))


def resolve(spec: KernelSpec) -> tuple[str, str]:
    """(versioned package, its candidate version) behind the metapackage."""
    apt_cache = _tool("apt-cache", spec)
    if spec.series:
        return _newest_of_series(apt_cache, spec)
    meta = spec.metapackage + spec.qualifier
    try:
        deps = _run(_apt(apt_cache, "depends", "--no-recommends", "--no-suggests", meta))
    except KernelError as e:
        raise KernelError(f"{_unknown(spec)}, or boot any kernel image as qemu:PATH\n{e}") from None
    m = re.search(r"Depends:\s*(linux-image-\S+)", deps)
    if m is None:
        raise KernelError(f"{meta} depends on no linux-image package:\n{deps}")
    package = m.group(1)
    if spec.qualifier and not package.endswith(spec.qualifier):
        package += spec.qualifier
    version = _candidate(apt_cache, package)
    if version is None:
        raise KernelError(f"apt has no candidate for {package}: run `apt-get update`")
    return package, version


def read_config(config: Path | None) -> tuple[str, int, bool]:
    """(preemption model, HZ, has the timerlat tracer) from a kernel's config."""
    if config is None or not config.is_file():
        return "", 0, False
    opts = dict(
        line.split("=", 1)
        for line in config.read_text(errors="replace").splitlines()
        if line.startswith("CONFIG_") and "=" in line
    )
    preempt = next(
        (
            model
            for opt, model in (
                ("CONFIG_PREEMPT_RT", "PREEMPT_RT"),
                ("CONFIG_PREEMPT", "full"),
                ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                ("CONFIG_PREEMPT_NONE", "none"),
            )
            if opts.get(opt) == "y"
        ),
        "",
    )
    if preempt not in ("", "PREEMPT_RT") and opts.get("CONFIG_PREEMPT_DYNAMIC") == "y":
        preempt += " (dynamic)"  # the boot option preempt= may change it
    hz = opts.get("CONFIG_HZ", "0")
    return preempt, int(hz) if hz.isdigit() else 0, opts.get("CONFIG_TIMERLAT_TRACER") == "y"


def _entry_dir(spec: KernelSpec, package: str, version: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", f"{package}_{version}")
    return cache_root() / spec.name / safe


def _load(entry: Path) -> Kernel | None:
    meta = entry / "kernel.json"
    if not meta.is_file():
        return None
    doc = json.loads(meta.read_text())
    image = entry / "vmlinuz"
    if not image.is_file() or ("modules" not in doc and doc["arch"] != "x86_64"):
        return None  # an entry from before modules were kept: fetched again
    config = entry / "config"
    preempt, hz, timerlat = read_config(config)
    return Kernel(
        name=doc["name"],
        image=image,
        release=doc["release"],
        package=doc["package"],
        version=doc["version"],
        arch=doc["arch"],
        config=config if config.is_file() else None,
        preempt=preempt,
        hz=hz,
        timerlat=timerlat,
        modules=tuple(entry / "modules" / f"{m}.ko" for m in doc.get("modules", [])),
    )


# The modules a guest needs for its stream port where the kernel has them
# as modules (Debian's arm64 kernels: the virtio console on `virt`), with
# what they depend on; x86_64 guests use a UART built into every kernel.
GUEST_MODULES = ("virtio_mmio", "virtio_console")
_MODULE_DIRS = ("kernel/drivers/virtio/", "kernel/drivers/char/virtio_console.ko")


def _module_bytes(name: str, data: bytes) -> tuple[str, bytes] | None:
    """(name without .ko, the plain module) of a packaged module file."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(".ko.xz"):
        return base.removesuffix(".ko.xz"), lzma.decompress(data)
    if base.endswith(".ko"):
        return base.removesuffix(".ko"), data
    return None  # another compression: this kernel's modules are not kept


def module_order(mods: dict[str, bytes], wanted: tuple[str, ...]) -> list[str]:
    """`wanted` and what they depend on (the modinfo `depends=` of each
    file), dependencies first; modules not in `mods` are built in."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in mods:
            return
        m = re.search(rb"depends=([^\0]*)\0", mods[name])
        for dep in (m.group(1).decode().split(",") if m else []):
            if dep:
                visit(dep.replace("-", "_"))
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def _extract_boot(deb: Path, dest: Path, spec: KernelSpec) -> tuple[str, list[str]]:
    """Streams the package's file tree out of dpkg-deb and keeps the kernel
    image, its config and the guest's modules (`GUEST_MODULES`); returns the
    kernel release from the image's name and the modules in load order."""
    dpkg_deb = _tool("dpkg-deb", spec)
    proc = subprocess.Popen(
        [dpkg_deb, "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    release = ""
    mods: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                base = member.name.removeprefix("./")
                if not member.isfile():
                    continue
                if base.startswith("lib/modules/") and any(d in base for d in _MODULE_DIRS):
                    src = tar.extractfile(member)
                    assert src is not None
                    mod = _module_bytes(base, src.read())
                    if mod is not None:
                        mods[mod[0]] = mod[1]
                    continue
                for prefix, out_name in (("boot/vmlinuz-", "vmlinuz"), ("boot/config-", "config")):
                    if base.startswith(prefix):
                        src = tar.extractfile(member)
                        assert src is not None
                        with (dest / out_name).open("wb") as f:
                            shutil.copyfileobj(src, f)
                        if out_name == "vmlinuz":
                            release = base.removeprefix(prefix)
    finally:
        _, err = proc.communicate()
    if proc.returncode != 0:
        raise KernelError(f"dpkg-deb could not read {deb.name}: {err.decode(errors='replace')}")
    if not release:
        raise KernelError(f"{deb.name} holds no boot/vmlinuz-*")
    order = module_order(mods, GUEST_MODULES)
    if order:
        (dest / "modules").mkdir()
        for name in order:
            (dest / "modules" / f"{name}.ko").write_bytes(mods[name])
    return release, order


def fetch(name: str) -> Kernel:
    """The kernel `name` (a key of KNOWN), downloaded once per package
    version into the cache."""
    spec = KNOWN.get(name)
    if spec is None:
        raise KernelError(f"unknown kernel {name!r}; known: {', '.join(KNOWN)}")
    package, version = resolve(spec)
    entry = _entry_dir(spec, package, version)
    cached = _load(entry)
    if cached is not None:
        return cached
    apt_get = _tool("apt-get", spec)
    entry.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=entry.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        _run(_apt(apt_get, "download", "-q", f"{package}={version}"), cwd=work)
        debs = sorted(work.glob("*.deb"))
        if not debs:
            raise KernelError(f"apt-get download {package} left no .deb")
        staged = work / "entry"
        staged.mkdir()
        release, modules = _extract_boot(debs[0], staged, spec)
        meta = {
            "name": spec.name,
            "package": package,
            "version": version,
            "release": release,
            "arch": spec.qemu_arch,
            "modules": modules,
        }
        (staged / "kernel.json").write_text(json.dumps(meta, indent=1) + "\n")
        # Whole or not at all: a fetch cut short leaves no half entry behind.
        if entry.exists():
            shutil.rmtree(entry)
        staged.rename(entry)
    kernel = _load(entry)
    assert kernel is not None
    return kernel


def cached(name: str) -> Kernel | None:
    """The newest kernel `name` already in the cache, without asking apt."""
    spec = KNOWN.get(name)
    if spec is None:
        return None
    entries = sorted((cache_root() / spec.name).glob("*/kernel.json"), key=os.path.getmtime)
    for meta in reversed(entries):
        k = _load(meta.parent)
        if k is not None:
            return k
    return None


def image_arch(path: Path) -> str:
    """x86_64 or aarch64 from a kernel image's header: an arm64 Image has
    "ARM\\x64" at 56; a gzip-packed one (Debian's vmlinuz) is arm64 too, as
    an x86 bzImage is never gzip at its start."""
    with path.open("rb") as f:
        head = f.read(64)
    if head[56:60] == b"ARM\x64" or head[:2] == b"\x1f\x8b" or head[4:8] == b"zimg":
        return "aarch64"
    return "x86_64"


def from_path(path: Path) -> Kernel:
    """Any bzImage or arm64 Image: its release is whatever the guest reports."""
    if not path.is_file():
        raise KernelError(f"no kernel image at {path}")
    return Kernel(name=str(path), image=path.resolve(), release="", arch=image_arch(path))


def as_dict(k: Kernel) -> dict[str, str]:
    d = asdict(k)
    d.pop("modules")
    return {key: str(v) for key, v in d.items() if v is not None}
