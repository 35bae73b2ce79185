"""The command line's one error boundary (docs/outcomes.md, "Exit status").

Exit 1 means "the OS missed a check": nothing else may produce it, so a
crash in `rtbench check` never fails a CI gate as a finding. Every error
that reaches the boundary exits 2:

- a domain error (an exception class of rtbench's own, raised with a
  message for the user: a damaged file, a store that refused, a target out
  of reach) or an operating-system error (a file that cannot be read): its
  message;
- anything else is a defect of rtbench: "internal error", with the
  traceback saved to a file the message names (in the user's state folder),
  never printed at the user;
- Ctrl-C (KeyboardInterrupt) anywhere, start-up included, exits 130 with
  no traceback; SIGINT means Ctrl-C even when rtbench was started with it
  ignored (`interrupt_on_sigint`).

This module imports nothing heavy: the entry point (`rtbench.__main__`)
imports it before click and rich, so Ctrl-C during start-up is caught.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

INTERRUPTED = 130
ERROR = 2


def interrupt_on_sigint() -> None:
    """SIGINT raises KeyboardInterrupt, whatever rtbench inherited. A shell
    without job control starts a background command (`cmd &`, a test
    harness) with SIGINT ignored, and Python then leaves it ignored: `ingest`
    reading a pipe whose writer stays open never ended on Ctrl-C (`run`
    sets its own handlers and did)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def is_domain(exc: BaseException) -> bool:
    """rtbench's own exceptions (raised with a message for the user) and
    the operating system's (a file, a device, the network)."""
    if isinstance(exc, OSError):
        return True
    return any(c.__module__.split(".")[0] == "rtbench" for c in type(exc).__mro__)


def crash_folder() -> Path:
    """Where tracebacks of internal errors go: the user's state folder."""
    import platformdirs

    return platformdirs.user_state_path("rtbench") / "crashes"


def save_traceback(exc: BaseException) -> Path | None:
    """Writes `exc`'s traceback to a new file; None when nowhere is writable."""
    text = "".join(traceback.format_exception(exc))
    name = f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.txt"
    header = f"rtbench {' '.join(sys.argv[1:])}\n\n"
    for folder in (crash_folder(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / name
            # O_EXCL: never written through a file or link someone put there.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
            f.write(header + text)
        return path
    return None


def _say(message: str) -> None:
    # Plain text (no rich): the message may hold any character, and the
    # boundary must work when rich itself is what failed.
    try:
        sys.stderr.write(f"rtbench: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def describe(exc: BaseException) -> str:
    """A domain error's message, as the user reads it."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    return str(exc) or type(exc).__name__


def exit_for(exc: BaseException) -> int:
    """Says what `exc` means and returns the exit status (130 or 2)."""
    if isinstance(exc, KeyboardInterrupt):
        _say("interrupted")
        return INTERRUPTED
    if isinstance(exc, MemoryError) or is_domain(exc):
        _say(describe(exc))
        return ERROR
    saved = save_traceback(exc)
    where = f"the traceback is in {saved}" if saved else "the traceback could not be saved"
    _say(f"internal error ({type(exc).__name__}: {exc}); {where}. Please report it.")
    return ERROR
