"""One request to the agent: what to measure and how, and the agent's
command line for it, rendered here and nowhere else.

`run`, `ab` and `campaign` fill an `AgentRequest` from their options (and
`rtbench.run.soak` from --cpus/--duration/--break); a board target caps its
samples (`within`); `rtbench.run.measure` adds the run's identity and the trace
marker. An option left None is not sent: the agent applies its own default
(`rtbench-agent --help`), so no default of the agent is copied on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rtbench.run.suites import Planned


@dataclass
class AgentRequest:
    plan: list[Planned] = field(default_factory=list)  # the cases and their settings
    priority: int | None = None  # base real-time priority of the case threads
    cpu: int | None = None  # the measurement CPU
    cpus: str | None = None  # per-CPU cases: their CPUs (all|LIST)
    samples: bool = True  # raw samples, or histograms and summaries only
    max_samples: int | None = None  # samples buffered per series on the target
    load: str | None = None  # background load SPEC (docs/loads.md)
    load_cpus: str | None = None
    load_threads: int | None = None
    pin: bool = True  # case threads pinned to the measurement CPU
    cstates: str | None = None  # hold|leave
    break_ns: int | None = None  # per-CPU cases: stop at the first latency above it
    progress_ms: int | None = None  # per-CPU cases: live figures this often
    trace_marker: str | None = None  # tracefs trace_marker the agent marks cases in
    run_id: str | None = None  # the run's identity, echoed in the hello
    # Arguments given as text (a saved command line, a test's case specs):
    # sent after the request's own, as they are.
    extra: list[str] = field(default_factory=list)

    def argv(self) -> list[str]:
        """The agent's arguments for this request."""
        options: list[tuple[str, object]] = [
            ("trace-marker", self.trace_marker),
            ("run-id", self.run_id),
            ("priority", self.priority),
            ("cpu", self.cpu),
            ("cpus", self.cpus),
            ("max-samples", self.max_samples),
            ("load", self.load),
            ("load-cpus", self.load_cpus),
            ("load-threads", self.load_threads),
            ("cstates", self.cstates),
            ("break", self.break_ns),
            ("progress", self.progress_ms),
        ]
        args = [f"--{name}={value}" for name, value in options if value is not None]
        if not self.samples:
            args.append("--no-samples")
        if not self.pin:
            args.append("--no-pin")
        return [*args, *(p.agent_arg() for p in self.plan), *self.extra]

    def within(self, most_samples: int | None) -> AgentRequest:
        """The request with at most `most_samples` buffered per series (a
        board's RAM holds no more; the agent's hello says what it used)."""
        if most_samples is None:
            return self
        wanted = self.max_samples if self.max_samples is not None else most_samples
        return replace(self, max_samples=min(wanted, most_samples))

    @property
    def case_ids(self) -> list[str]:
        return [p.case for p in self.plan]
