"""The kernel's preemption model (PREEMPT_DYNAMIC), switched through
debugfs for a run and put back after it (`rtbench ab --a preempt=...`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class PreemptError(ValueError):
    """Why the preemption model cannot be read or switched here."""


PREEMPT_FILE = "sys/kernel/debug/sched/preempt"
_HELD = (signal.SIGINT, signal.SIGTERM)  # held while the original mode is put back


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _debugfs_mounted(where: str) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return False
    return any(
        len(f) >= 3 and f[1] == where and f[2] == "debugfs"
        for f in (line.split() for line in mounts.splitlines())
    )


class PreemptSwitch:
    """Reads and switches the PREEMPT_DYNAMIC mode through debugfs, mounting
    debugfs when it has to, and puts back the mode (and the mount) it found.

    `root` is for tests: under a root other than "/" nothing is mounted and
    the root and kernel checks are skipped (the file is a plain file)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.root = root
        self.path = root / PREEMPT_FILE
        self.mounted = False
        self.original: str | None = None
        self.modes: list[str] = []

    def _real(self) -> bool:
        return self.root == Path("/")

    def open(self) -> None:
        """Finds the current mode; PreemptError says why it cannot be switched."""
        if self._real():
            if not sys.platform.startswith("linux"):
                raise PreemptError("preempt: not Linux")
            if os.geteuid() != 0:
                raise PreemptError("preempt: needs root (debugfs and sched/preempt are root's)")
            debugfs = str(self.root / "sys/kernel/debug")
            if not _debugfs_mounted(debugfs) and not self.path.exists():
                self._mount(debugfs)
        if not self.path.exists():
            self.close()
            raise PreemptError(f"preempt: no {self.path}: {self._why_missing()}")
        try:
            text = self.path.read_text().strip()
        except OSError as e:
            self.close()
            raise PreemptError(
                f"preempt: the kernel refuses to read {self.path} ({e.strerror}); its "
                "preemption model cannot be switched at run time here"
            ) from None
        words = text.split()
        self.modes = [w.strip("()") for w in words]
        current = [w.strip("()") for w in words if w.startswith("(")]
        self.original = current[0] if current else (words[0] if len(words) == 1 else None)
        if self.original is None:
            self.close()
            raise PreemptError(f"preempt: cannot tell the current mode from {text!r}")

    def _why_missing(self) -> str:
        from rtbench.machine import probe

        if not self._real():
            return "no such file"
        pre = probe.probe_machine().get("preemption") or {}
        model = pre.get("model")
        if model != "PREEMPT_DYNAMIC":
            return (
                f"the kernel is {model or 'of an unknown model'}, not PREEMPT_DYNAMIC: its "
                "preemption model is fixed when it is built"
            )
        return "this PREEMPT_DYNAMIC kernel has no sched/preempt in debugfs"

    def _mount(self, where: str) -> None:
        try:
            with open("/proc/filesystems") as f:
                if not any(line.split()[-1:] == ["debugfs"] for line in f):
                    raise PreemptError("preempt: no debugfs in this kernel")
        except OSError:
            pass
        if _libc().mount(b"none", os.fsencode(where), b"debugfs", 0, None) != 0:
            e = ctypes.get_errno()
            raise PreemptError(f"preempt: cannot mount debugfs on {where}: {os.strerror(e)}")
        self.mounted = True

    def close(self) -> None:
        if self.mounted:
            _libc().umount2(os.fsencode(str(self.root / "sys/kernel/debug")), 0)
            self.mounted = False

    def check(self, mode: str) -> None:
        if self.modes and mode not in self.modes:
            raise PreemptError(f"preempt={mode}: this kernel offers {', '.join(self.modes)}")

    def write(self, mode: str) -> None:
        try:
            self.path.write_text(mode)
        except OSError as e:
            raise PreemptError(f"preempt: cannot switch to {mode}: {e.strerror}") from None

    @contextmanager
    def switched(self, mode: str | None) -> Iterator[None]:
        """The block runs in `mode` (None: as found); the mode found is back
        after it however it ends. A Ctrl-C during the restore waits for it."""
        if mode is None or mode == self.original:
            yield
            return
        self.write(mode)
        try:
            yield
        finally:
            held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _HELD}
            try:
                if self.original is not None:
                    self.write(self.original)
            finally:
                for sig, handler in held.items():
                    signal.signal(sig, handler)


