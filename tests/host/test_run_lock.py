"""The suite's run lock (tests/exclusive.py): an exclusive test runs while
no other test holds the lock, a bystander's test runs beside it holding
nothing, and an exclusive lock kept for the next exclusive test is let go
before a test of another kind."""

from __future__ import annotations

import threading
from pathlib import Path

from exclusive import RunLock


def _in_thread(lock: RunLock, exclusive: bool) -> tuple[threading.Thread, threading.Event]:
    entered = threading.Event()

    def take() -> None:
        with lock.held(exclusive):
            entered.set()

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, entered


def test_exclusive_waits_for_shared_and_a_bystander_waits_for_nothing(tmp_path: Path) -> None:
    a, b = RunLock(tmp_path), RunLock(tmp_path)
    with a.held(exclusive=True):
        thread, entered = _in_thread(b, exclusive=False)
        # A shared holder waits while the exclusive test runs...
        assert not entered.wait(0.3)
        # ...a bystander does not (a lock would hang this thread here).
        def run_beside() -> None:
            with b.beside():
                pass

        beside = threading.Thread(target=run_beside, daemon=True)
        beside.start()
        beside.join(60)
        assert not beside.is_alive()
    thread.join(60)
    assert entered.is_set()


def test_a_kept_exclusive_lock_is_let_go_for_a_bystander(tmp_path: Path) -> None:
    a, b = RunLock(tmp_path), RunLock(tmp_path)
    with a.held(exclusive=True, keep=True):
        pass
    thread, entered = _in_thread(b, exclusive=False)
    assert not entered.wait(0.3)  # kept for a's next exclusive test
    with a.beside():
        thread.join(60)
        assert entered.is_set()
