"""The verdict in two parts at the command line: a run whose behaviour
checks hold but whose releases come late (JIT-PER's self-test blocker,
3 ms on a 1 ms period) exits 1 and says "Behaviour: passed, Timing:
failed"; a --break threshold crossed exits 1 as a failed timing check.
No absolute time is asserted: the blocker's hold is three periods long."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import rtbench

JIT = ["-c", "JIT-PER", "--set", "JIT-PER.period_us=1000", "--set", "JIT-PER.cycles=300",
       "--set", "JIT-PER.load_threads=0"]  # fmt: skip


@pytest.mark.realtime  # the blocker must preempt the periodic task
def test_late_releases_fail_timing_not_behaviour(db: Path, agent: Path) -> None:
    r = rtbench("run", *JIT, "--set", "JIT-PER.blocker_us=3000",
                "--set", "JIT-PER.blocker_count=3")  # fmt: skip
    text = " ".join(r.stdout.split())
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Cases: JIT-PER passed" in text  # every check of the case held
    assert "Result: failed Behaviour: passed Timing: failed (JIT-PER:" in text, text
    assert "came after the next planned release" in text
    shown = rtbench("show", "1", "--format", "json")
    info = json.loads(shown.stdout)["run"]
    assert (info["outcome"], info["behaviour"], info["timing"]) == ("failed", "passed", "failed")
    # The tolerance is the run's: a thousand misses allowed, timing passes.
    r = rtbench("run", *JIT, "--set", "JIT-PER.blocker_us=3000",
                "--set", "JIT-PER.blocker_count=3", "--allow-misses", "1000")  # fmt: skip
    assert r.returncode == 0 and "Timing: passed" in r.stdout, r.stdout + r.stderr


def test_a_break_crossed_exits_1_as_failed_timing(db: Path, agent: Path) -> None:
    # 1 µs: every release crosses it.
    r = rtbench("run", *JIT, "--cpus", "all", "--break", "1")
    text = " ".join(r.stdout.split())
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Behaviour: passed Timing: failed (JIT-PER break failed" in text, text
