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


def rtbench_here(*args: str) -> subprocess.CompletedProcess[str]:
    """The `rtbench` command run in this process: its click entry point with
    the same arguments, environment, exit status and separate stdout and
    stderr, without an interpreter's start-up and rtbench's imports (~0.6
    CPU s a call). For tests of what a command does with a store or a file;
    the entry point itself and commands that measure, handle signals or
    must be killed are run as a process (`rtbench`, tests/e2e/test_cli.py)."""
    from click.testing import CliRunner

    from rtbench.cli import main

    result = CliRunner().invoke(main, list(args), prog_name="rtbench", catch_exceptions=False)
    return subprocess.CompletedProcess(
        ["rtbench", *args], result.exit_code, result.stdout, result.stderr
    )


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now (the kernel's
    choice; the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# A child's ru_maxrss starts from the high-water mark of the process that
# spawned it (Linux carries the spawning mm's peak across exec): spawned
# straight from pytest, a child would report the test process's own peak,
# and a bound on it could neither hold nor fail for the child's reasons. A
# small launcher interpreter spawns the command and reports its peak.
_LAUNCH = (
    "import os, sys\n"
    "r, w = os.pipe()\n"
    "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,"
    " file_actions=[(os.POSIX_SPAWN_DUP2, w, 2), (os.POSIX_SPAWN_CLOSE, r)])\n"
    "os.close(w)\n"
    "err = os.read(r, 1 << 20)\n"
    "while chunk := os.read(r, 1 << 16):\n"
    "    err = (err + chunk)[-(1 << 20):]\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stderr.write(err.decode(errors='replace'))\n"
    "print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))\n"
)


def peak_mib(args: list[str], env: dict[str, str] | None = None) -> tuple[int, float, str]:
    """Exit status, peak RSS in MiB (its own) and stderr of one command."""
    p = subprocess.run(
        [sys.executable, "-c", _LAUNCH, *args],
        env=env, capture_output=True, text=True, check=True, timeout=1200,
    )  # fmt: skip
    maxrss, code = (int(w) for w in p.stdout.split()[-2:])
    return code, maxrss / 1024, p.stderr  # ru_maxrss is in KiB on Linux


def cal_timer_stream(agent: Path, path: Path, samples: int) -> Path:
    """A real agent stream of about `samples` raw samples (CAL-TIMER: two
    series of half each; without a cycle counter clock_read alone has its
    half), for the bounded-memory tests."""
    with path.open("wb") as f:
        subprocess.run(
            [str(agent), "--max-samples", str(samples),
             f"CAL-TIMER:reads={samples // 2 + 1}:rounds=10"],
            stdout=f, stderr=subprocess.DEVNULL, check=False, timeout=600,
        )  # fmt: skip
    return path
