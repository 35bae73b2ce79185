"""Helpers several test files share (pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534


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
