"""Kernel names, configs and guest modules, without downloading a kernel."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rtbench.targets import kernels
from rtbench.transports.qemu import GUESTS, Launch


def _config(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "config"
    path.write_text("\n".join(("# a comment", *lines, "# CONFIG_TIMERLAT_TRACER is not set")))
    return path


def test_every_name_has_a_guest_and_a_debian_package() -> None:
    names = set(kernels.KNOWN)
    for base in ("debian-rt", "debian-generic", "debian-rt-6.12", "debian-generic-6.12"):
        assert {base, f"{base}-arm64"} <= names
    for spec in kernels.KNOWN.values():
        assert spec.qemu_arch in GUESTS
        assert spec.arch in spec.metapackage
        assert ("-rt-" in spec.metapackage) == spec.name.startswith("debian-rt")
        assert spec.qualifier == ("" if spec.arch == "amd64" else ":arm64")
    # A series is matched as a whole name: the cloud and 16k variants are not it.
    rt612 = kernels.KNOWN["debian-rt-6.12-arm64"]
    assert re.fullmatch(rt612.metapackage, "linux-image-6.12.117+deb12-rt-arm64-unsigned")
    assert not re.fullmatch(rt612.metapackage, "linux-image-6.12.117+deb12-arm64-16k-unsigned")
    assert not re.fullmatch(rt612.metapackage, "linux-image-6.12.117+deb12-rt-arm64-dbg")


@pytest.mark.parametrize(
    ("arch", "accel", "argument"),
    [
        # x86 guests patch their code live: one TCG thread runs every vCPU
        # (the int3 oops of a multi-threaded TCG, GUESTS' comment).
        ("x86_64", "tcg", "tcg,thread=single"),
        ("x86_64", "kvm", "kvm"),
        ("aarch64", "tcg", "tcg"),
    ],
)
def test_qemus_accelerator_per_guest(arch: str, accel: str, argument: str) -> None:
    kernel = kernels.Kernel("k", Path("/k"), "", arch=arch)
    launch = Launch("qemu", kernel, accel, GUESTS[arch].machine, 2, 256, "")
    argv = launch.argv(Path("/initrd"), Path("/console"))
    assert argv[argv.index("-accel") + 1] == argument


@pytest.mark.parametrize(
    ("lines", "preempt"),
    [
        (["CONFIG_PREEMPT_RT=y", "CONFIG_PREEMPT=y", "CONFIG_PREEMPT_DYNAMIC=y"], "PREEMPT_RT"),
        (["CONFIG_PREEMPT_VOLUNTARY=y", "CONFIG_PREEMPT_DYNAMIC=y"], "voluntary (dynamic)"),
        (["CONFIG_PREEMPT=y"], "full"),
        (["CONFIG_PREEMPT_NONE=y"], "none"),
        ([], ""),
    ],
)
def test_config_gives_preemption_model(tmp_path: Path, lines: list[str], preempt: str) -> None:
    assert kernels.read_config(_config(tmp_path, *lines, "CONFIG_HZ=250"))[:2] == (preempt, 250)


def test_config_gives_timerlat_and_missing_config_is_unknown(tmp_path: Path) -> None:
    assert kernels.read_config(_config(tmp_path, "CONFIG_TIMERLAT_TRACER=y"))[2] is True
    assert kernels.read_config(_config(tmp_path))[2] is False  # "is not set"
    assert kernels.read_config(None) == ("", 0, False)
    assert kernels.read_config(tmp_path / "absent") == ("", 0, False)


def _module(depends: str) -> bytes:
    return b"\x7fELF..." + b"license=GPL\0depends=" + depends.encode() + b"\0vermagic=6.1\0"


def test_modules_load_after_what_they_depend_on() -> None:
    mods = {
        "virtio_console": _module("virtio_ring,virtio"),
        "virtio_mmio": _module("virtio,virtio_ring"),
        "virtio_ring": _module(""),
        "virtio": _module("virtio_ring"),
        "virtio_balloon": _module("virtio"),  # not needed: left out
    }
    order = kernels.module_order(mods, kernels.GUEST_MODULES)
    assert sorted(order) == ["virtio", "virtio_console", "virtio_mmio", "virtio_ring"]
    for name in order:
        deps = mods[name].decode(errors="replace").split("depends=")[1].split("\0")[0]
        for dep in filter(None, deps.split(",")):
            assert order.index(dep) < order.index(name)
    # Built into the kernel (no file): nothing to load.
    assert kernels.module_order({}, kernels.GUEST_MODULES) == []


def test_image_arch_from_the_header(tmp_path: Path) -> None:
    arm = tmp_path / "Image"
    arm.write_bytes(bytes(56) + b"ARM\x64" + bytes(8))
    gz = tmp_path / "vmlinuz"
    gz.write_bytes(b"\x1f\x8b" + bytes(100))
    bz = tmp_path / "bzImage"
    bz.write_bytes(bytes(0x202) + b"HdrS" + bytes(100))
    assert kernels.from_path(arm).arch == "aarch64"
    assert kernels.from_path(gz).arch == "aarch64"
    assert kernels.from_path(bz).arch == "x86_64"


def test_apt_keeps_its_cache_in_ours_where_it_keeps_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A container's apt (Dir::Cache::pkgcache "") parses all its lists on
    # every call; rtbench then names a cache file of its own, which apt
    # writes on the first call. Where apt keeps its own, nothing is added.
    if shutil.which("apt-config") is None or shutil.which("apt-cache") is None:
        pytest.skip("no apt on this machine")
    monkeypatch.setenv("RTBENCH_KERNEL_DIR", str(tmp_path))
    own = subprocess.run(
        ["apt-config", "shell", "P", "Dir::Cache::pkgcache"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    options = kernels._apt_cache_options()
    if own not in ("", "P=''"):
        assert options == []
        return
    cache = tmp_path / "apt" / "pkgcache.bin"
    assert f"Dir::Cache::pkgcache={cache}" in options
    subprocess.run(kernels._apt("apt-cache", "policy", "dpkg"), capture_output=True, check=True)
    assert cache.stat().st_size > 0
