"""QEMU's version is asked once per binary, and again when the binary
changes in place (an upgrade): every board run's metadata names it."""

from __future__ import annotations

from pathlib import Path

from rtbench.targets.qemu import qemu_version


def _fake(path: Path, version: str) -> None:
    path.write_text(f"#!/bin/sh\necho 'QEMU emulator version {version} (test)'\n")
    path.chmod(0o755)


def test_a_binary_changed_in_place_is_asked_again(tmp_path: Path) -> None:
    qemu = tmp_path / "qemu-system-arm"
    _fake(qemu, "7.2.0")
    assert qemu_version(str(qemu)) == "7.2.0"
    assert qemu_version(str(qemu)) == "7.2.0"  # the cached answer
    _fake(qemu, "10.10.1")  # another size: another file to ask
    assert qemu_version(str(qemu)) == "10.10.1"
    assert qemu_version(str(tmp_path / "missing")) == ""
