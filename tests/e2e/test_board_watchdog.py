"""The watchdog on a board: a runaway case (the test firmware's THR-SW
workers ignore the stop, `--inject ignore_stop=1`) past its hard deadline
ends the run with the watchdog's own records, as on POSIX
(tests/agent/test_known_answers.py). The watchdog writes them on its small
board stack: newlib's printf in the record writer once ran off that stack
and QEMU ended in a HardFault lockup, the case's end and the bye lost.
uC/OS-II cannot run THR-SW (one task per priority), so it has no runaway to
stop here."""

from __future__ import annotations

import pytest
from boards import measure_board

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


@pytest.mark.parametrize("kernel", ["freertos", "ucos3"])
def test_a_runaway_case_is_ended_by_the_watchdogs_records(kernel: str) -> None:
    run, transport = measure_board(
        f"qemu:{kernel}-mps2-an385?flavor=test",
        # 100 ms of slack past the case's own deadline: the watchdog is armed
        # at once; the workers run until it fires.
        ["--inject=ignore_stop=1", "--deadline-slack=100", "THR-SW:n=2:duration_ms=100"],
    )
    assert not run.issues, run.issues  # every line whole, the bye there
    (case,) = run.cases
    assert (case.case, case.outcome) == ("THR-SW", "error")
    assert case.reason == "hard deadline passed: a thread of the case did not stop"
    assert [w.code for w in run.warnings if w.code == "deadline"] or [
        w.code for w in case.warnings if w.code == "deadline"
    ]
    assert not [n for n in transport.notes if "fault" in n], transport.notes
