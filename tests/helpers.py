"""Helpers several test files share (pytest puts tests/ on sys.path)."""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a preexec_fn (its last step): the child gets `sig` when the test
    process ends, however it ends (SIGKILL too), so no server outlives the
    tests. Last, because a change of user clears the setting."""
    parent = _PARENT
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent ended before prctl: nobody would signal
        os.kill(os.getpid(), sig)


_PARENT = os.getpid()


def drop_privileges() -> None:
    """preexec_fn: run the child as `nobody` with RLIMIT_RTPRIO 0, the way an
    unprivileged user runs rtbench (root keeps CAP_SYS_NICE otherwise)."""
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


@contextmanager
def public_copy(exe: Path) -> Iterator[Path]:
    """A copy of `exe` that `nobody` can execute, wherever the checkout lives
    (CI may clone it below a folder only root can enter)."""
    d = Path(tempfile.mkdtemp(prefix="rtbench-nobody-", dir="/tmp"))
    try:
        d.chmod(0o755)
        copy = d / exe.name
        shutil.copy2(exe, copy)
        copy.chmod(0o755)
        yield copy
    finally:
        shutil.rmtree(d, ignore_errors=True)


def rtbench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The `rtbench` command as a user runs it, in this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "rtbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now (the kernel's
    choice; the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
