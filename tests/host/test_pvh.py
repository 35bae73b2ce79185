"""An x86_64 kernel's ELF image extracted from its bzImage for the PVH entry
(rtbench.targets.pvh), on bzImages built here: each packing the kernels
use, the note that makes it bootable, and what is booted as it is."""

from __future__ import annotations

import gzip
import lzma
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from rtbench.targets import pvh
from rtbench.targets.kernels import Kernel
from rtbench.transports.qemu import Launch


def elf(note_kind: int = 18, machine: int = 62) -> bytes:
    """An ELF64 header, one PT_NOTE program header and a Xen note of `note_kind`."""
    name, desc = b"Xen\0", struct.pack("<I", 0x1000000)
    note = struct.pack("<III", len(name), len(desc), note_kind) + name + desc
    phoff, notes_at = 64, 64 + 56
    header = (
        b"\x7fELF\x02\x01\x01" + bytes(9)
        + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, phoff, 0, 0, 64, 56, 1, 64, 0, 0)
    )  # fmt: skip
    phdr = struct.pack("<IIQQQQQQ", 4, 4, notes_at, 0, 0, len(note), len(note), 4)
    return header + phdr + note + b"kernel text" * 100


def bzimage(payload: bytes, version: int = 0x20F, setup_sects: int = 3) -> bytes:
    """A bzImage's setup sectors (the header fields pvh reads) and `payload`."""
    setup = bytearray((setup_sects + 1) * 512)
    setup[0x1F1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    offset = 0x40  # the decompressor's code comes first
    struct.pack_into("<II", setup, 0x248, offset, len(payload))
    return bytes(setup) + bytes(offset) + payload + b"\x00\x10\x00\x00"  # a size after it


PACKINGS: dict[str, Callable[[bytes], bytes]] = {
    "xz": lambda b: lzma.compress(b, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32),
    "gzip": gzip.compress,
    "zstd": lambda b: zstandard.ZstdCompressor(level=3).compress(b),
}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(pvh, "cache_dir", lambda: tmp_path / "cache")
    return tmp_path / "cache"


@pytest.mark.parametrize("packing", sorted(PACKINGS))
def test_each_packing_gives_the_kernels_elf_once(packing: str, tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(bzimage(PACKINGS[packing](elf())))
    out = pvh.elf_image(image)
    assert out is not None and out.read_bytes() == elf()
    out.write_bytes(b"cached")  # the second call reads the cache, not the image
    assert pvh.elf_image(image) == out and out.read_bytes() == b"cached"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(bzimage(PACKINGS["xz"](elf(note_kind=17))), id="no PVH note"),
        pytest.param(bzimage(PACKINGS["xz"](elf(machine=183))), id="an arm64 ELF"),
        pytest.param(bzimage(PACKINGS["xz"](elf()), version=0x207), id="boot protocol 2.07"),
        pytest.param(bzimage(b"\x02\x21\x4c\x18" + bytes(64)), id="lz4"),
        pytest.param(bzimage(PACKINGS["xz"](elf()))[:-40], id="cut short"),
        pytest.param(b"ARM\x64" * 200, id="not a bzImage"),
    ],
)
def test_what_cannot_boot_through_pvh_is_booted_as_it_is(data: bytes, tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(data)
    assert pvh.elf_image(image) is None
    assert not pvh.cache_dir().exists() or not list(pvh.cache_dir().iterdir())


def test_a_cache_it_cannot_write_boots_the_bzimage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(bzimage(PACKINGS["xz"](elf())))
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(pvh, "cache_dir", lambda: tmp_path / "a-file" / "vmlinux")
    assert pvh.elf_image(image) is None


def test_only_an_x86_64_guest_under_tcg_boots_the_elf(tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(bzimage(PACKINGS["xz"](elf())))

    def booted(accel: str, arch: str) -> str:
        kernel = Kernel(name="k", image=image, release="", arch=arch)
        argv = Launch("qemu", kernel, accel, "q35", 1, 256, "").argv(tmp_path / "i", tmp_path / "c")
        return argv[argv.index("-kernel") + 1]

    assert booted("tcg", "x86_64") == str(pvh.elf_image(image))
    assert booted("kvm", "x86_64") == str(image)  # KVM decompresses at the host's speed
    assert booted("tcg", "aarch64") == str(image)


def test_a_runs_metadata_says_how_its_guest_booted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PVH entry boots the kernel without its decompressor, hence
    without KASLR: a run says so, as it says its other conditions."""
    from rtbench.targets import qemu

    image = tmp_path / "vmlinuz"
    kernel = Kernel(name="k", image=image, release="", arch="x86_64")
    target = qemu.QemuTarget(str(image), qemu.QemuSettings(accel="tcg"))  # no boot
    monkeypatch.setattr(target, "kernel", lambda download=True: kernel)
    image.write_bytes(bzimage(PACKINGS["xz"](elf())))
    assert target.metadata()["boot"] == "pvh entry (no KASLR)"
    image.write_bytes(bzimage(PACKINGS["xz"](elf(note_kind=17))))
    pvh.cache_dir().mkdir(parents=True, exist_ok=True)
    for f in pvh.cache_dir().iterdir():
        f.unlink()
    assert target.metadata()["boot"] == "kernel image"
