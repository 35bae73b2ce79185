"""The suite's CPU listing (tests/cpu_listing.py) charges a module's or the
session's fixture with the children its setup and teardown reap, not the
first and the last test of the module: a guest booted for a module and
killed at its end made its module's last test look like the heaviest of
the suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]

# Each child burns BURN_S of its own CPU (its process_time, which is what
# its parent's os.times() gets when it reaps it), whatever the load.
BURN_S = 0.3

CONFTEST = f"""
import subprocess, sys
import pytest
sys.path.insert(0, {str(TESTS)!r})
import cpu_listing

BURN = "import time\\nwhile time.process_time() < {BURN_S}: pass\\nsys.stdin.read()"
BURN = "import sys\\n" + BURN

def pytest_configure(config):
    cpu_listing.register(config)

def burn():
    return subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE)

@pytest.fixture(scope="session")
def build():
    child = burn()
    child.communicate(b"")  # reaped in the setup
    return "firmware"

@pytest.fixture(scope="module")
def guest(build):
    child = burn()
    child.communicate(b"")  # reaped in the setup
    guest = burn()  # burns while the tests run, reaped in the teardown
    yield guest
    guest.communicate(b"")
"""

TESTS_MODULE = """
def test_first(guest):
    pass

def test_last(guest):
    pass

def test_alone():
    pass
"""

LINE = re.compile(r"^\s*([\d.]+) CPU s\s+[\d.]+ s wall  (.+)$")


@pytest.mark.parametrize("xdist", [[], ["-n", "1"]], ids=["plain", "xdist"])
def test_fixture_children_are_listed_as_the_fixture(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_guest=TESTS_MODULE)
    result = pytester.runpytest_inprocess(
        "-p", "no:labgrid", "-p", "no:cacheprovider", "--durations=20", *xdist
    )
    result.assert_outcomes(passed=3)
    cpu = {m.group(2): float(m.group(1)) for line in result.outlines if (m := LINE.match(line))}
    assert any("most CPU" in line for line in result.outlines), result.outlines
    guest = cpu["fixture guest (module) test_guest.py"]
    build = cpu["fixture build (session) session"]
    # Two children of the guest fixture, one of the build fixture; the
    # guest's line does not also hold the build it asked for.
    assert 2 * BURN_S - 0.05 <= guest < 3 * BURN_S - 0.05, cpu
    assert BURN_S - 0.05 <= build < 2 * BURN_S - 0.05, cpu
    # The tests did nothing themselves: the first is not charged with the
    # setup, the last not with the guest reaped in its teardown.
    for name in ("test_first", "test_last", "test_alone"):
        assert cpu[f"test_guest.py::{name}"] < BURN_S / 2, cpu


def test_durations_0_lists_every_test_and_fixture(pytester: pytest.Pytester) -> None:
    # The per-file CPU of a whole run (issue 18's profile) needs every line;
    # --durations=0 listed none.
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_guest=TESTS_MODULE)
    result = pytester.runpytest_inprocess(
        "-p", "no:labgrid", "-p", "no:cacheprovider", "--durations=0"
    )
    result.assert_outcomes(passed=3)
    names = {m.group(2) for line in result.outlines if (m := LINE.match(line))}
    assert {f"test_guest.py::{t}" for t in ("test_first", "test_last", "test_alone")} <= names
    assert {"fixture guest (module) test_guest.py", "fixture build (session) session"} <= names
