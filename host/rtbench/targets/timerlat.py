"""The kernel's second opinion: its own timerlat tracer, run in a QEMU guest
right after the cases, for the CPUs and period of the run's JIT-PER.

JIT-PER measures, from user space, how late a SCHED_FIFO task wakes after
its release time. The kernel's timerlat tracer measures the same thing from
inside: how late the timer's interrupt ran (`irq`) and how late its
SCHED_FIFO kernel thread ran (`thread`). A user-space wake-up cannot beat
the kernel's own thread, so JIT-PER's best latency below the kernel's best
thread latency (beyond the clock's resolution) says JIT-PER's figure is not
what its name says. The two run one after the other (timerlat's threads
would preempt JIT-PER's), so on an emulator, whose speed follows the host's
load, a JIT-PER below the kernel is not comparable and the check is
skipped. The interrupt latency is also the hardware-interrupt latency the
user-space IRQ stand-ins cannot give.

The guest's `/init` runs the tracer through tracefs after the agent (the
two never share the CPUs: timerlat's threads would preempt JIT-PER's) and
sends its samples on the stream port as marker lines
(`rtbench-guest: timerlat CPU CONTEXT NS NS ...`); they become series of
the JIT-PER case (kind latency, attribute source `kernel timerlat`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from rtbench import catalogue
from rtbench.model import Check, Run, Series, Warning

SOURCE = "kernel timerlat"
# Seconds the tracer runs at most: the guest stays within the last case's
# idle allowance (its deadline margin), and TCG is slow.
MAX_SECONDS = 20.0
SERIES = {"irq": "kernel_irq_latency", "thread": "kernel_thread_latency"}

# The part of `/init` that runs the tracer; MARKER and PORT are filled in.
GUEST_SCRIPT = r"""
if [ -f /rtbench/timerlat ]; then
    read period cpus secs </rtbench/timerlat
    T=/sys/kernel/tracing
    if grep -qw timerlat $T/available_tracers 2>/dev/null; then
        echo "MARKER timerlat start period=$period cpus=$cpus seconds=$secs" >/dev/PORT
        echo 0 >$T/tracing_on
        echo $cpus >$T/osnoise/cpus
        echo $period >$T/osnoise/timerlat_period_us
        echo 4096 >$T/buffer_size_kb
        echo timerlat >$T/current_tracer
        echo 1 >$T/tracing_on
        sleep $secs
        echo 0 >$T/tracing_on
        awk -v m="MARKER timerlat" '/timer_latency/ {
            cpu = ""; ctx = ""; v = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^\[[0-9]+\]$/) cpu = substr($i, 2, length($i) - 2) + 0
                if ($i == "context") ctx = $(i + 1)
                if ($i == "timer_latency") { v = $(i + 1); if ($(i + 2) == "us") v = v * 1000 }
            }
            if (cpu == "" || ctx == "" || v == "") next
            k = cpu " " ctx; buf[k] = buf[k] " " v; n[k]++
            if (n[k] >= 64) { print m, k buf[k]; buf[k] = ""; n[k] = 0 }
        }
        END { for (k in buf) if (n[k]) print m, k buf[k] }' $T/trace >/dev/PORT
        echo nop >$T/current_tracer
        echo "MARKER timerlat end" >/dev/PORT
    else
        echo "MARKER timerlat none $(cat $T/available_tracers 2>/dev/null)" >/dev/PORT
    fi
fi
"""


@dataclass(frozen=True)
class Request:
    period_us: int
    cpus: str  # a CPU list as tracefs takes it: 1 or 0-1
    seconds: float

    def line(self) -> str:
        return f"{self.period_us} {self.cpus} {self.seconds:g}\n"


def _param(spec: str, name: str, default: int) -> int:
    m = re.search(rf":{name}=(\d+)", spec)
    return int(m.group(1)) if m else default


def _jit_per_default(name: str) -> int:
    """JIT-PER's default `name` as the guest's (POSIX) agent declares it in
    its case table, not a copy of agent/cases/jit_per.c."""
    params = catalogue.posix_cases()["JIT-PER"].params
    return int(next(p["default"][0] for p in params if p["name"] == name))


def request(args: list[str], smp: int) -> Request | None:
    """The tracer's settings from the agent's arguments: JIT-PER's period
    and duration (at most MAX_SECONDS) on its CPUs; None without JIT-PER."""
    spec = next((a for a in args if a == "JIT-PER" or a.startswith("JIT-PER:")), None)
    if spec is None:
        return None
    period = _param(spec, "period_us", _jit_per_default("period_us"))
    seconds = _param(spec, "cycles", _jit_per_default("cycles")) * period / 1e6
    cap_ms = _param(spec, "duration_ms", 0)
    if cap_ms:
        seconds = min(seconds, cap_ms / 1000)
    cpus = str(smp - 1)  # the agent's default measurement CPU: the last one
    for a in args:
        if a.startswith("--cpu="):
            cpus = a.split("=", 1)[1]
        elif a.startswith("--cpus="):
            value = a.split("=", 1)[1]
            cpus = f"0-{smp - 1}" if value == "all" else value
    return Request(period, cpus, max(0.1, min(seconds, MAX_SECONDS)))


@dataclass
class Result:
    """What the guest sent: samples per (CPU, context), or why there are none."""

    request: Request | None = None
    samples: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    started: bool = False
    ended: bool = False
    missing: str = ""  # the kernel has no timerlat: its tracers

    def feed(self, body: bytes) -> None:
        """One marker line's body after `timerlat`."""
        words = body.decode("ascii", "replace").split()
        if not words:
            return
        if words[0] == "start":
            self.started = True
        elif words[0] == "end":
            self.ended = True
        elif words[0] == "none":
            self.missing = " ".join(words[1:]) or "(no tracefs)"
        elif len(words) >= 3 and words[0].isdigit():
            values = [int(float(w)) for w in words[2:] if re.fullmatch(r"[0-9.]+", w)]
            self.samples.setdefault((int(words[0]), words[1]), []).extend(values)


def _series(cpu: int, context: str, values: list[int], multi: bool) -> Series:
    arr = np.asarray(values, dtype=np.int64)
    return Series(
        case="JIT-PER",
        name=SERIES.get(context, f"kernel_{context}_latency"),
        point={"cpu": cpu} if multi else {},
        unit="ns",
        samples=arr,
        n=len(arr),
        min=int(arr.min()),
        max=int(arr.max()),
        sum=int(arr.sum()),
        kind="latency",
        attrs={"source": SOURCE},
    )


def attach(run: Run, result: Result, emulated: bool) -> None:
    """Adds the kernel's series and the cross-check to the run's JIT-PER
    case, or says why there are none. `emulated`: the guest's speed follows
    the host's load (TCG), so two windows a few seconds apart differ by more
    than the check can tell apart."""
    case = run.case("JIT-PER")
    if result.request is None or case is None:
        return
    if result.missing:
        run.warnings.append(
            Warning(
                "timerlat",
                "--timerlat: this guest kernel has no timerlat tracer (its tracers: "
                f"{result.missing}); JIT-PER has no kernel figure beside it",
            )
        )
        return
    if not result.samples:
        why = "the guest ended before it" if not result.ended else "it recorded no sample"
        run.warnings.append(Warning("timerlat", f"--timerlat: no kernel timerlat samples ({why})"))
        return
    cpus = sorted({cpu for cpu, _ in result.samples})
    multi = len(cpus) > 1
    added = [
        _series(cpu, ctx, values, multi)
        for (cpu, ctx), values in sorted(result.samples.items())
        if values
    ]
    case.series.extend(added)
    case.checks.append(_cross_check(run, case.series, added, emulated))


def _cross_check(run: Run, series: list[Series], added: list[Series], emulated: bool) -> Check:
    res = int(run.hello.get("clock", {}).get("resolution_ns", 1) or 1)
    ours = [s for s in series if s.name == "latency" and s.min is not None]
    kernel = [s for s in added if s.name == SERIES["thread"] and s.min is not None]
    name = "above_kernel_timerlat"
    if not ours or not kernel:
        return Check("JIT-PER", name, "skip", "no JIT-PER latency or no kernel thread latency")
    own = min(int(s.min) for s in ours if s.min is not None)
    best = min(int(s.min) for s in kernel if s.min is not None)
    detail = (
        f"JIT-PER's best latency {own / 1e3:.1f} us, the kernel's timerlat thread's "
        f"{best / 1e3:.1f} us (clock resolution {res} ns)"
    )
    if own + res < best and emulated:
        # Measured one after the other: on an emulator the second window may
        # simply have had less of the host's CPU. Not a finding either way.
        return Check(
            "JIT-PER",
            name,
            "skip",
            detail + ": lower than the kernel's, but the two ran one after the other on an "
            "emulator whose speed follows the host's load; not comparable to that precision",
        )
    if own + res < best:
        return Check(
            "JIT-PER",
            name,
            "fail",
            detail + ": a user-space wake-up cannot be earlier than the kernel's own thread",
        )
    return Check("JIT-PER", name, "pass", detail)
