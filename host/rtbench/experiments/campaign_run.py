"""Running a campaign's cells: one after another on this machine's targets,
and at once across a lab's places.

A labgrid place is a board of its own (labgrid gives it to one user at a
time), so each place gets a lane: an rtbench process of its own
(`rtbench campaign FILE --lane PLACE`) that runs that place's cells in
campaign order, one agent at a time, while the other places run theirs.
Processes, not threads: labgrid keeps process-wide state (its step stack,
its resource managers) that only one thread may use. Every other target
(local, ssh, serial, qemu) runs its cells here, one after another: two of
them may share a machine, and measuring both at once would measure each
other.

Every cell goes through the one measuring path (`rtbench.run.measure`) and is
stored through the store's API as soon as it ends, each lane with its own
connection. A signal (Ctrl-C, SIGTERM, SIGHUP) reaches the lanes too
(forwarded, and a lane ends with rtbench even if rtbench is killed): each
stores what it measured and releases its place, and running the same
command again resumes.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rtbench.experiments.campaign import Campaign, Cell
from rtbench.outcomes import outcome_of_exit
from rtbench.run.measure import StopSignals, plan_for
from rtbench.run.measure_store import measure_and_store
from rtbench.run.request import AgentRequest
from rtbench.run.suites import Planned
from rtbench.store.location import StoreLocation
from rtbench.targets import Target, TargetError, close
from rtbench.transports import TransportError

Say = Callable[[str], None]
# How long a stopped lane may take to store its run and release its place
# before it is killed (its place's guard then releases the place).
LANE_STOP_WAIT_S = 120.0


def parallel(target: Target) -> bool:
    """Whether the target's cells run in a lane of their own."""
    return target.kind == "labgrid"


def agent_request(c: Campaign, cell: Cell, plan: list[Planned]) -> AgentRequest:
    """The agent's request of one cell: the campaign's cases under its load."""
    return AgentRequest(
        plan, load=None if cell.load == "none" else cell.load, samples=not c.no_samples
    )


def _end_with_parent() -> None:
    # PR_SET_PDEATHSIG (1): a killed campaign stops its lanes like a Ctrl-C
    # (SIGTERM: the lane stores what it measured and releases its place).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


@dataclass
class CellRunner:
    campaign: Campaign
    targets: dict[str, Target]
    plans: dict[str, list[Planned]]  # per target (its name): its agent's cases
    labels: dict[str, str]
    store: StoreLocation | Path
    say: Say
    show: Say  # progress lines
    # The command line of the lane of a target (its name): rtbench itself.
    lane_argv: Callable[[str], list[str]] | None = None
    outcomes: list[str] = field(default_factory=list)

    def cell(self, cell: Cell, stop: StopSignals) -> None:
        """Measures and stores one cell; its outcome goes to `outcomes`."""
        target = self.targets[cell.target.name]
        self.show(f"{cell.key}: {cell.target.spec}, load {cell.load} …")
        try:
            # First: a target knows some of its metadata (e.g. the
            # accelerator QEMU will use) only once its transport exists.
            transport = target.transport()
        except (TransportError, TargetError, OSError) as e:
            self.say(f"{cell.key}: cannot reach {cell.target.spec}: {e}")
            self.outcomes.append("error")
            return
        how = plan_for(
            target,
            agent_request(self.campaign, cell, self.plans[cell.target.name]),
            labels={**self.labels, **cell.labels(self.campaign.name)},
            source="campaign",
            store_path=self.store,
        )
        taken = measure_and_store(transport, how, stop, None, self.say)
        self.outcomes.append(taken.outcome)
        if taken.problem is not None:
            self.say(f"{cell.key}: {taken.problem}")
            return
        assert taken.measured is not None and taken.saved is not None
        run = taken.measured.run
        self.show(f"{cell.key}: run {taken.saved.run_id}: {run.outcome}, {len(run.cases)} cases")

    def run(self, todo: list[Cell], stop: StopSignals) -> None:
        """Runs `todo`: the places' lanes at once, the rest here in order."""
        lanes: dict[str, int] = {}
        here: list[Cell] = []
        for cell in todo:
            if self.lane_argv is not None and parallel(self.targets[cell.target.name]):
                lanes[cell.target.name] = lanes.get(cell.target.name, 0) + 1
            else:
                here.append(cell)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        if lanes:
            assert self.lane_argv is not None
            self.show(f"{len(lanes)} places at once: {', '.join(lanes)}")
            for name in lanes:
                procs[name] = subprocess.Popen(
                    self.lane_argv(name), stdin=subprocess.DEVNULL, preexec_fn=_end_with_parent
                )
        try:
            for cell in here:
                self.cell(cell, stop)
                if stop.received is not None:
                    break
            if stop.received is None:
                with stop.armed():
                    while any(p.poll() is None for p in procs.values()):
                        time.sleep(0.2)
        except KeyboardInterrupt:
            pass  # the signal is noted in `stop`
        finally:
            self._end_lanes(procs, stop)
            for name in dict.fromkeys(c.target.name for c in here):
                try:
                    close(self.targets[name])
                except TargetError as e:
                    self.say(str(e))

    def _end_lanes(self, procs: dict[str, subprocess.Popen[bytes]], stop: StopSignals) -> None:
        if stop.received is not None:
            for p in procs.values():
                if p.poll() is None:
                    p.send_signal(stop.received)
        for name, p in procs.items():
            try:
                code = p.wait(timeout=LANE_STOP_WAIT_S if stop.received else None)
            except subprocess.TimeoutExpired:
                self.say(f"{name}: its lane did not stop in {LANE_STOP_WAIT_S:.0f} s; killed it")
                p.kill()
                code = p.wait()
            if stop.received is None:
                self.outcomes.append(outcome_of_exit(code))


def lane_cells(todo: list[Cell], target: str) -> list[Cell]:
    """A lane's cells: its target's, in campaign order."""
    return [c for c in todo if c.target.name == target]
