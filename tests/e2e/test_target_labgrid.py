"""labgrid places as targets, against a real labgrid coordinator and
exporter started here, exporting two places whose consoles are QEMU guests'
serial ports (tests/e2e/lab.py): rtbench acquires a place, copies the agent
over its console, runs cases there, stores them and releases the place; a
campaign runs both places at once into SQLite and PostgreSQL and reports;
killed mid-run (SIGINT, SIGKILL) it leaves the places released.

The first run on rtb-a copies the agent over the console; rtb-b boots with
the same agent already in rtbench's folder there, as a run before would have
left it, and is not copied again (its checksum matches). A copy over a TCG
guest's UART costs about 20 CPU seconds: the module pays it once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tools
from stores import StoreAt

from rtbench.experiments.campaign import LABEL_CAMPAIGN, LABEL_CELL
from rtbench.outcomes import EXIT
from rtbench.store import Store
from rtbench.targets import kernels
from rtbench.targets.ssh import agent_for

from .lab import Lab, start_lab

pytestmark = [pytest.mark.e2e, pytest.mark.tools(*tools.qemu_guest())]

CASES = ["-c", "CAL-REF", "--set", "CAL-REF.repeats=10", "-c", "SYS-CALL",
         "--set", "SYS-CALL.iterations=100"]  # fmt: skip


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    kernel = tools.guest_kernel("debian-rt")
    # The guests are x86_64 (q35): the agent a run would copy to rtb-b.
    agent = {"rtbench-agent-x86_64": agent_for("x86_64")}
    running = start_lab(
        tmp_path_factory.mktemp("lab"), ["rtb-a", "rtb-b"], kernel, {"rtb-b": agent}
    )
    try:
        yield running
    finally:
        running.close()


def spec(lab: Lab, place: str) -> str:
    # The places are QEMU guests: their runs are flagged emulated.
    return f"labgrid:{place}?coordinator={lab.coordinator}&emulated=yes"


def rtbench(db: Path | str, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", *args],
        cwd=cwd,
        env={**os.environ, "RTBENCH_DB": str(db)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_run_on_a_place_stores_and_releases(lab: Lab, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    proc = rtbench(db, "run", "--target", spec(lab, "rtb-a"), *CASES)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1), err
    with Store(db) as store:
        (summary,) = store.list_runs()
        run = store.load(summary.id)
    assert [c.case for c in run.cases] == ["CAL-REF", "SYS-CALL"] and run.complete
    target = run.machine["target"]
    assert target["kind"] == "labgrid" and target["place"] == "rtb-a"
    assert target["emulated"] is True and target["arch"] == "x86_64"
    assert target["agent_copied"] is True  # over the console: none was there
    # The guest's kernel, read by the agent there, not this machine's.
    assert run.hello["os"]["release"] == kernels.fetch("debian-rt").release
    assert lab.acquired_by("rtb-a") is None
    # `rtbench targets` reaches the coordinator and says the place is free;
    # a place the coordinator does not know is said to be unreachable.
    check = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "targets", spec(lab, "rtb-a"),
         spec(lab, "no-such-place")],
        env={**os.environ, "COLUMNS": "250"}, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert check.returncode == 2, check.stdout + check.stderr
    assert "exists and is free" in check.stdout and "no-such-place" in check.stdout


ENV = """targets:
  board:
    resources:
      RemotePlace:
        name: {place}
    drivers:
      ExternalPowerDriver:
        cmd_on: "true"
        cmd_off: "true"
        cmd_cycle: "sh -c 'echo cycled >> {log}'"
      SerialDriver: {{}}
      ShellDriver:
        prompt: '[^\\r\\n]*# '
        login_prompt: ' login: '
        username: root
      ShellStrategy: {{}}
options:
  coordinator_address: {coordinator}
"""


def test_an_environment_files_strategy_brings_the_shell(lab: Lab, tmp_path: Path) -> None:
    # labgrid's convention: the environment's ShellStrategy powers the board
    # (here a power driver that only notes the cycle) and logs in.
    log = tmp_path / "power.log"
    env = tmp_path / "board.yaml"
    env.write_text(ENV.format(place="rtb-b", log=log, coordinator=lab.coordinator))
    db = tmp_path / "runs.sqlite"
    proc = rtbench(db, "run", "--target", f"labgrid:rtb-b?env={env}&emulated=yes", *CASES)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1), err
    with Store(db) as store:
        (summary,) = store.list_runs()
        target = store.load(summary.id).machine["target"]
    assert target["strategy"] == "ShellStrategy" and target["power"] is True
    assert target["agent_copied"] is False  # the same agent was there
    assert target["coordinator"] == lab.coordinator  # from the environment's options
    assert log.read_text().split() == ["cycled"]
    assert lab.acquired_by("rtb-b") is None


def _wait_for(what: str, check: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"not {what} within {timeout:.0f} s")


def _guards(lab: Lab) -> list[int]:
    """rtbench's place guards (targets/labgrid_place.py) for this lab."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"rtbench-release" in argv and lab.coordinator.encode() in argv:
                found.append(int(entry.name))
    return found


def _campaign_file(lab: Lab, folder: Path, cases: list[str], sets: list[str]) -> Path:
    def strings(items: list[str]) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    targets = "".join(
        f'[[target]]\nname = "{place}"\nspec = "labgrid:{place}"\n'
        f'coordinator = "{lab.coordinator}"\nemulated = true\n\n'
        for place in lab.places
    )
    path = folder / "lab.toml"
    path.write_text(
        f'[campaign]\nname = "lab"\ncases = {strings(cases)}\nset = {strings(sets)}\n\n' + targets
    )
    return path


def _status(db: str, file: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", "status", str(file)],
        env={**os.environ, "RTBENCH_DB": db, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_campaign_over_two_places(lab: Lab, tmp_path: Path, store_at: StoreAt) -> None:
    file = _campaign_file(
        lab, tmp_path, ["CAL-REF", "SYS-CALL"], ["CAL-REF.repeats=10", "SYS-CALL.iterations=100"]
    )
    proc = rtbench(store_at.where, "campaign", str(file), cwd=tmp_path)
    _, err = proc.communicate(timeout=900)
    with store_at.open() as store:
        rows = store.list_runs({LABEL_CAMPAIGN: "lab"})
        runs = [store.load(r.id) for r in rows]
    issues = [(r.labels.get(LABEL_CELL), [c.reason for c in r.cases], r.issues) for r in runs]
    assert "2 places at once" in err
    assert sorted(r.labels[LABEL_CELL] for r in runs) == ["rtb-a/none/1", "rtb-b/none/1"]
    # What a cell measured depends on the guest meeting each case's hard
    # deadline, which a busy host may not give it (the agent's watchdog then
    # ends the case as an error and the run with a bye): asserted is the
    # structure, and that the campaign's exit status is its cells' worst
    # outcome (docs/outcomes.md), whatever the guest did.
    planned = ["CAL-REF", "SYS-CALL"]
    for run in runs:
        ran = [c.case for c in run.cases]
        assert run.complete and ran and ran == planned[: len(ran)], issues
        for c in run.cases:
            assert c.outcome != "error" or ("hard deadline" in c.reason and c is run.cases[-1]), (
                issues
            )
        assert len(ran) == len(planned) or run.cases[-1].outcome == "error", issues
        assert run.machine["target"]["place"] == run.labels["target"]
        assert run.machine["target"]["emulated"] is True
    worst = max(EXIT[r.outcome] for r in runs)
    assert proc.returncode == worst, f"{err}\n{issues}"
    report = (tmp_path / "lab-report.md").read_text()
    assert "target=rtb-a, load=none" in report and "target=rtb-b, load=none" in report
    # A cell whose run ended in an error (a case past its hard deadline on a
    # busy host, allowed above) is still to run: the status counts it apart.
    errors = sum(1 for r in runs if r.outcome == "error")
    status = _status(store_at.where, file)
    assert f"{2 - errors} of 2 cells stored" in status, status
    assert f"{errors} ended in an error" in status, status
    assert lab.acquired_by("rtb-a") is None and lab.acquired_by("rtb-b") is None
    assert not _guards(lab)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killed_campaign_leaves_the_places_released(
    lab: Lab, tmp_path: Path, sig: signal.Signals
) -> None:
    db = str(tmp_path / "runs.sqlite")
    # A case that outlasts the wait below: the campaign is killed inside it.
    # It sleeps between releases: a case that spins at real-time priority
    # on a one-CPU guest starves the console's interrupt thread, so the
    # Ctrl-C that stops it is not read until the case ends (docs/lab.md),
    # and the next test would find the console busy.
    file = _campaign_file(
        lab, tmp_path, ["JIT-PER"], ["JIT-PER.cycles=30000", "JIT-PER.load_threads=0"]
    )
    proc = rtbench(db, "campaign", str(file), cwd=tmp_path)
    try:

        def running() -> bool:
            if proc.poll() is not None:  # ended before it was killed: say how
                _, err = proc.communicate()
                raise AssertionError(f"the campaign ended ({proc.returncode}): {err}")
            return "2 running" in _status(db, file)

        _wait_for("both cells running", running, 600)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "run the same command again to resume" in err
        # Released by rtbench itself before it exited.
        assert lab.acquired_by("rtb-a") is None and lab.acquired_by("rtb-b") is None
    else:
        assert proc.returncode == -signal.SIGKILL
        # Released by the places' guards once rtbench was gone.
        assert lab.wait_released("rtb-a") and lab.wait_released("rtb-b")
    _wait_for("the guards gone", lambda: not _guards(lab), 120)
    # Nothing runs any more, and the interrupted cells are to be run again.
    status = _status(db, file)
    assert "0 running" in status and "0 of 2 cells stored" in status, status
