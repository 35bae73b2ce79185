"""Kernels to boot in QEMU: Debian's packaged kernels, fetched with apt.

`fetch("debian-rt")` resolves Debian's metapackage (`linux-image-rt-amd64`)
to the versioned package it depends on, downloads that one `.deb` with
`apt-get download` (no root needed: it lands in a temporary folder) and
keeps only `boot/vmlinuz-*` and `boot/config-*` in the user's cache, beside a
`kernel.json` that records the package, its version and the kernel release.
A second fetch of the same package version costs nothing.
"""

from __future__ import annotations

import json
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
    metapackage: str
    arch: str  # Debian's architecture name
    qemu_arch: str  # the qemu-system-* suffix


KNOWN: dict[str, KernelSpec] = {
    "debian-rt": KernelSpec("debian-rt", "linux-image-rt-amd64", "amd64", "x86_64"),
    "debian-generic": KernelSpec("debian-generic", "linux-image-amd64", "amd64", "x86_64"),
}

_NO_APT = (
    "`rtbench kernel fetch` needs apt-get and dpkg-deb (a Debian or Ubuntu host, or a "
    "container of one). Elsewhere, download {pkg} (any recent linux-image-*-{flavor}amd64 "
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


def cache_root() -> Path:
    env = os.environ.get("RTBENCH_KERNEL_DIR")
    return Path(env) if env else platformdirs.user_cache_path("rtbench") / "kernels"


def _tool(name: str, spec: KernelSpec) -> str:
    path = shutil.which(name)
    if path is None:
        flavor = "rt-" if "rt" in spec.metapackage else ""
        raise KernelError(_NO_APT.format(pkg=spec.metapackage, flavor=flavor))
    return path


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise KernelError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def resolve(spec: KernelSpec) -> tuple[str, str]:
    """(versioned package, its candidate version) behind the metapackage."""
    apt_cache = _tool("apt-cache", spec)
    try:
        deps = _run([apt_cache, "depends", "--no-recommends", "--no-suggests", spec.metapackage])
    except KernelError as e:
        raise KernelError(
            f"apt knows no package {spec.metapackage} (Debian's name for it): run "
            f"`apt-get update` on a Debian host, or boot any kernel image as qemu:PATH\n{e}"
        ) from None
    m = re.search(r"Depends:\s*(linux-image-\S+)", deps)
    if m is None:
        raise KernelError(f"{spec.metapackage} depends on no linux-image package:\n{deps}")
    package = m.group(1)
    policy = _run([apt_cache, "policy", package])
    cand = re.search(r"Candidate:\s*(\S+)", policy)
    if cand is None or cand.group(1) == "(none)":
        raise KernelError(f"apt has no candidate for {package}: run `apt-get update`")
    return package, cand.group(1)


def _entry_dir(spec: KernelSpec, package: str, version: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", f"{package}_{version}")
    return cache_root() / spec.name / safe


def _load(entry: Path) -> Kernel | None:
    meta = entry / "kernel.json"
    if not meta.is_file():
        return None
    doc = json.loads(meta.read_text())
    image = entry / "vmlinuz"
    if not image.is_file():
        return None
    config = entry / "config"
    return Kernel(
        name=doc["name"],
        image=image,
        release=doc["release"],
        package=doc["package"],
        version=doc["version"],
        arch=doc["arch"],
        config=config if config.is_file() else None,
    )


def _extract_boot(deb: Path, dest: Path, spec: KernelSpec) -> str:
    """Streams the package's file tree out of dpkg-deb and keeps the kernel
    image and its config; returns the kernel release from the image's name."""
    dpkg_deb = _tool("dpkg-deb", spec)
    proc = subprocess.Popen(
        [dpkg_deb, "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    release = ""
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                base = member.name.removeprefix("./")
                for prefix, out_name in (("boot/vmlinuz-", "vmlinuz"), ("boot/config-", "config")):
                    if base.startswith(prefix) and member.isfile():
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
    return release


def fetch(name: str) -> Kernel:
    """The kernel `name` (debian-rt, debian-generic), downloaded once per
    package version into the cache."""
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
        _run([apt_get, "download", "-q", f"{package}={version}"], cwd=work)
        debs = sorted(work.glob("*.deb"))
        if not debs:
            raise KernelError(f"apt-get download {package} left no .deb")
        staged = work / "entry"
        staged.mkdir()
        release = _extract_boot(debs[0], staged, spec)
        meta = {
            "name": spec.name,
            "package": package,
            "version": version,
            "release": release,
            "arch": spec.qemu_arch,
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


def from_path(path: Path) -> Kernel:
    """Any bzImage: its release is whatever the guest reports."""
    if not path.is_file():
        raise KernelError(f"no kernel image at {path}")
    return Kernel(name=str(path), image=path.resolve(), release="")


def as_dict(k: Kernel) -> dict[str, str]:
    d = asdict(k)
    return {key: str(v) for key, v in d.items() if v is not None}
