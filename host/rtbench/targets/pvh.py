"""An x86_64 guest under TCG boots its kernel's ELF image through the PVH
entry rather than the bzImage: the same kernel, without its decompressor.

A bzImage carries the kernel compressed (xz, zstd, gzip...) and decompresses it
itself, after SeaBIOS has loaded it: under TCG that emulated decompression
took about half of debian-rt's boot (docs/targets-qemu.md's figures). QEMU
loads an ELF kernel that has a PVH entry note (Xen's PHYS32_ENTRY, in every
kernel built with CONFIG_PVH, Debian's among them) straight into the guest's
memory and enters it in 32-bit mode, past the decompressor. Extracted here
once per image (decompressed on the host, where it takes a second) into the
cache; an image that is not a bzImage, is packed another way or has no PVH
note is booted as it is.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import struct
import tempfile
import zlib
from pathlib import Path

import platformdirs
import zstandard

_XZ, _GZIP, _ZSTD = b"\xfd7zXZ\x00", b"\x1f\x8b\x08", b"\x28\xb5\x2f\xfd"
_EM_X86_64 = 62
_PT_NOTE = 4
_XEN_ELFNOTE_PHYS32_ENTRY = 18


def booted(image: Path, arch: str, accel: str) -> Path:
    """The file QEMU boots for `image`: under TCG, an x86_64 kernel's ELF
    through its PVH entry when it has one (its decompressor took half the
    boot; KVM decompresses at the host's speed), else the image as it is."""
    if accel == "tcg" and arch == "x86_64":
        return elf_image(image) or image
    return image


def cache_dir() -> Path:
    return platformdirs.user_cache_path("rtbench") / "vmlinux"


def elf_image(image: Path) -> Path | None:
    """`image`'s kernel as an ELF file with a PVH entry, extracted once
    into the cache; None when `image` cannot be booted that way."""
    try:
        data = image.read_bytes()
    except OSError:
        return None
    out = cache_dir() / f"{hashlib.sha256(data).hexdigest()[:16]}.elf"
    if out.is_file():
        return out
    elf = _payload(data)
    if elf is None or not has_pvh_entry(elf):
        return None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a concurrent run sees the whole file or none.
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".vmlinux-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(elf)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return None  # a cache it cannot write (read-only, full): the bzImage boots
    return out


def _payload(data: bytes) -> bytes | None:
    """The decompressed kernel of a bzImage (boot protocol 2.08 or later:
    payload_offset and payload_length in its setup header), or None."""
    if len(data) < 0x250 or data[0x202:0x206] != b"HdrS":
        return None
    (version,) = struct.unpack_from("<H", data, 0x206)
    if version < 0x208:
        return None
    setup_sects = data[0x1F1] or 4
    offset, length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + offset
    packed = data[start : start + length]
    unpack: lzma.LZMADecompressor | zlib._Decompress | zstandard.ZstdDecompressionObj
    if packed.startswith(_XZ):
        unpack = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    elif packed.startswith(_GZIP):
        unpack = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif packed.startswith(_ZSTD):  # Debian's 6.12 kernels
        unpack = zstandard.ZstdDecompressor(max_window_size=1 << 31).decompressobj()
    else:
        return None  # lz4, lzo, bzip2, lzma: booted as a bzImage
    try:
        out = unpack.decompress(packed)
    except (lzma.LZMAError, zlib.error, zstandard.ZstdError):
        return None
    # A stream cut short decompresses to a kernel cut short: only a whole one.
    return out if unpack.eof else None


def has_pvh_entry(elf: bytes) -> bool:
    """True for a little-endian ELF64 x86_64 file with a PVH entry note."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return False
    (machine,) = struct.unpack_from("<H", elf, 18)
    (phoff,) = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    if machine != _EM_X86_64:
        return False
    for i in range(phnum):
        at = phoff + i * phentsize
        if at + 56 > len(elf):
            return False
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, at)
        if p_type != _PT_NOTE:
            continue
        pos, end = p_offset, min(p_offset + p_filesz, len(elf))
        while pos + 12 <= end:
            namesz, descsz, kind = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12 : pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and kind == _XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False
