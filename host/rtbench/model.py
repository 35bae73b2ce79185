"""The host's data model: run -> case -> series (+ checks, warnings).

Plain typed dataclasses. Constructors never probe the machine or read files;
probing is `rtbench.machine.probe`, parsing is `rtbench.stream`, storage is
`rtbench.store`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rtbench.kinds import KindTraits, fallback_kind, traits

# docs/outcomes.md: `skip`/`skipped` cannot apply on this machine (the
# detail or reason says why); they neither pass nor fail a run.
Verdict = Literal["pass", "fail", "error", "skip"]
CaseOutcome = Literal["passed", "failed", "error", "unsupported", "skipped"]
# A run is `skipped` when nothing in it was judged (every case skipped or
# unsupported): it is no evidence about the OS, so never `passed`.
RunOutcome = Literal["passed", "failed", "error", "skipped"]
# What the agent's `bye` says (it does not judge "nothing applied").
ByeResult = Literal["passed", "failed", "error"]

# Worst first: a run's result is the worst of its cases'.
_OUTCOME_RANK = {"error": 0, "failed": 1, "passed": 2, "unsupported": 3, "skipped": 3}

Point = dict[str, int | str]
Int64Array = npt.NDArray[np.int64]


# Samples a chunk holds when a whole array is read chunk by chunk (the
# store's chunk, 1 MiB of int64): a consumer's temporaries are one chunk's.
CHUNK = 1 << 17


class ChunkedSamples(ABC):
    """A series' raw samples as int64 chunks in order, whether they are in
    memory or read from the store a chunk at a time: what a consumer that
    must not hold a long series whole (show, analyze, report of a 1e8-sample
    run) reads. A whole array is one too (`ArraySamples`, `as_chunked`)."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def chunks(self) -> Iterator[Int64Array]:
        """The samples in order, as 1-D int64 arrays (read-only to callers;
        each may be a view that the next step reuses, so copy to keep one)."""

    def read(self, start: int, stop: int) -> Int64Array:
        """Samples [start, stop) (clipped to the series) as a fresh array."""
        n = len(self)
        start, stop = max(0, min(start, n)), max(0, min(stop, n))
        out = np.empty(max(0, stop - start), dtype=np.int64)
        at = 0
        for c in self.chunks():
            lo, hi = max(start - at, 0), min(stop - at, c.size)
            if lo < hi:
                out[at + lo - start : at + hi - start] = c[lo:hi]
            at += c.size
            if at >= stop:
                break
        return out

    def array(self) -> Int64Array:
        """Every sample in one array (a copy unless it already is one): only
        for a consumer that truly needs them whole, and only when short."""
        return self.read(0, len(self))


class ArraySamples(ChunkedSamples):
    """An in-memory array as ChunkedSamples: its chunks are views."""

    def __init__(self, values: Int64Array) -> None:
        self.values = values

    def __len__(self) -> int:
        return int(self.values.size)

    def chunks(self) -> Iterator[Int64Array]:
        for start in range(0, self.values.size, CHUNK):
            yield self.values[start : start + CHUNK]

    def read(self, start: int, stop: int) -> Int64Array:
        return self.values[max(0, start) : max(0, stop)].copy()

    def array(self) -> Int64Array:
        return self.values


def as_chunked(samples: Int64Array | ChunkedSamples) -> ChunkedSamples:
    if isinstance(samples, ChunkedSamples):
        return samples
    return ArraySamples(np.asarray(samples))


def point_key(point: Point) -> str:
    """A canonical text form of a sweep point, e.g. 'n=128' ('' for none)."""
    return ",".join(f"{k}={point[k]}" for k in sorted(point))


@dataclass
class Histogram:
    """A target-side histogram, exactly as the `hist` record carried it."""

    layout: dict[str, Any]
    counts: list[tuple[int, int]]  # sparse (bucket index, count), ascending
    n: int
    min: int | None  # None only when n == 0
    max: int | None
    sum: int
    underflow: int = 0
    overflow: int = 0

    def as_record(self) -> dict[str, Any]:
        """The body of the `hist` record this histogram came from (pairs as
        lists), as the stream schema checks it and the store and exports
        keep it. Pairs are copied as they are, malformed ones included, so
        that a check can say what is wrong with them."""
        return {
            "layout": self.layout,
            "counts": [list(p) if isinstance(p, tuple) else p for p in self.counts],
            "n": self.n,
            "min": self.min,
            "max": self.max,
            "sum": self.sum,
            "underflow": self.underflow,
            "overflow": self.overflow,
        }

    def bucket_bounds(self, index: int) -> tuple[int, int]:
        """[lo, hi) of bucket `index` in the series' unit."""
        kind = self.layout.get("kind")
        if kind == "log2":
            s = int(self.layout["sub_bits"])
            if index < (2 << s):
                return index, index + 1
            shift = index // (1 << s) - 1
            mant = index - shift * (1 << s)
            return mant << shift, (mant + 1) << shift
        if kind == "linear":
            lo, width = int(self.layout["lo"]), int(self.layout["width"])
            return lo + index * width, lo + (index + 1) * width
        raise ValueError(f"unknown histogram layout {kind!r}")


@dataclass
class Series:
    """One result series of a case, at one sweep point."""

    case: str
    name: str
    point: Point = field(default_factory=dict)
    unit: str = "ns"
    # Raw samples when the run kept them, whole (`chunked` reads them a
    # chunk at a time; see the property below the class).
    samples: Int64Array | None = field(default=None, repr=False)
    holes: int = 0  # samples missing from `samples` (lost chunks)
    hist: Histogram | None = None
    # Exact figures from the target's `summary` record.
    n: int = 0
    min: int | None = None
    max: int | None = None
    sum: int = 0
    dropped: int = 0  # samples the target could not buffer (still in n/min/max)
    # What the values are (rtbench.kinds): '' takes the documented fallback
    # for records written before the agent declared kinds.
    kind: str = ""
    # Measured properties of the series that do not identify it (CLK-DUR's
    # recurring period): shown, never part of the key.
    attrs: Point = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.kind:
            self.kind = fallback_kind(self.case, self.name, self.unit)

    @property
    def traits(self) -> KindTraits:
        return traits(self.kind)

    @property
    def chunked(self) -> ChunkedSamples | None:
        """The raw samples without reading them whole: the one way a
        consumer of a series that may be long reads them."""
        data: ChunkedSamples | None = self.__dict__.get("_samples")
        return data

    @chunked.setter
    def chunked(self, data: ChunkedSamples | Int64Array | None) -> None:
        self.__dict__["_samples"] = None if data is None else as_chunked(data)

    @property
    def n_kept(self) -> int:
        """How many raw samples the series holds (0 when none were kept)."""
        data = self.chunked
        return 0 if data is None else len(data)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.case, self.name, point_key(self.point))

    @property
    def label(self) -> str:
        pk = point_key(self.point)
        return f"{self.name}[{pk}]" if pk else self.name

    @property
    def mean(self) -> float | None:
        return self.sum / self.n if self.n else None


def _whole_samples(self: Series) -> Int64Array | None:
    # Reading `samples` makes them one array and keeps it: for consumers
    # that need them whole; a long stored series is read by `chunked`.
    data = self.chunked
    if data is None or isinstance(data, ArraySamples):
        return None if data is None else data.values
    whole = data.array()
    self.chunked = whole
    return whole


def _set_samples(self: Series, value: Int64Array | ChunkedSamples | None) -> None:
    self.chunked = value


# `samples` stays the dataclass' init argument and attribute (the parser,
# exports and tests set and read arrays), kept as ChunkedSamples underneath.
setattr(Series, "samples", property(_whole_samples, _set_samples))  # noqa: B010


@dataclass
class Check:
    case: str
    name: str
    verdict: Verdict
    detail: str = ""


@dataclass
class Warning:
    code: str
    detail: str = ""
    case: str | None = None


@dataclass
class CaseResult:
    case: str
    title: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    outcome: CaseOutcome = "error"
    duration_ns: int = 0
    reason: str = ""
    series: list[Series] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)

    def find(self, name: str, point: Point | None = None) -> Series | None:
        for s in self.series:
            if s.name == name and (point is None or s.point == point):
                return s
        return None


@dataclass
class StreamIssue:
    """Something wrong with the stream itself (not with the OS measured)."""

    kind: Literal["damaged", "gap", "duplicate", "truncated", "order", "version"]
    detail: str
    line: int | None = None  # 1-based line number in the stream, when known

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.kind}: {self.detail}"


@dataclass
class Run:
    """One run of the agent on one target, as parsed and as stored."""

    hello: dict[str, Any] = field(default_factory=dict)
    cases: list[CaseResult] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)  # run-wide
    issues: list[StreamIssue] = field(default_factory=list)
    bye: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)  # console noise lines
    # Filled by the host, not the stream:
    id: int | None = None
    started_at: str = ""  # ISO 8601 UTC
    target: str = "local"
    labels: dict[str, str] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)  # rtbench.machine.probe output
    source: str = ""  # how the stream arrived: "run", "ingest FILE"
    # The run's identity (rtbench.identity): made when it starts, carried by
    # its hello, journal, store row and exports; "" until one is known.
    uuid: str = ""

    @property
    def complete(self) -> bool:
        # A refused record (CRC-valid, contents the schema refuses) is lost
        # as surely as a missing one: damage, like a gap (docs/outcomes.md).
        lost = ("gap", "truncated", "damaged")
        return self.bye is not None and not any(i.kind in lost for i in self.issues)

    @property
    def emulated(self) -> str | None:
        """What emulated the target (e.g. "qemu tcg"), None on real hardware:
        an emulator's timings compare only with the same emulator's."""
        target = self.machine.get("target") if isinstance(self.machine, dict) else None
        if not isinstance(target, dict) or not target.get("emulated"):
            return None
        how = " ".join(str(target[k]) for k in ("emulator", "accel") if target.get(k))
        return how or "an emulator"

    @property
    def emulated_time(self) -> str:
        """What an emulated run's figures mean, from the clock the emulator
        kept ("" when the target did not say)."""
        target = self.machine.get("target") if isinstance(self.machine, dict) else None
        if not isinstance(target, dict) or not target.get("emulated"):
            return ""
        detail = str(target.get("time_detail") or "")
        if target.get("time") == "icount":
            return (
                f"Its figures are {detail or 'instruction-count time (-icount)'}: repeatable, "
                "and comparable between RTOSes on the same emulated board, but not a hardware "
                "latency."
            )
        if target.get("time") == "host":
            return (
                "Its figures are emulated time following the host's clock: they vary with the "
                "host's load, and are not a hardware latency."
            )
        return ""

    @property
    def realtime(self) -> bool:
        rt = self.hello.get("realtime", {})
        return bool(rt.get("ok", False)) if isinstance(rt, dict) else False

    @property
    def outcome(self) -> RunOutcome:
        worst: RunOutcome = "passed"
        for c in self.cases:
            if c.outcome == "error":
                return "error"
            if c.outcome == "failed":
                worst = "failed"
        if not self.complete:
            return "error"
        if all(c.outcome in ("unsupported", "skipped") for c in self.cases):
            return "skipped"
        if worst == "passed":
            # A deadline missed is a failed timing check (rtbench.verdict):
            # never "passed" with late releases or lost events.
            from rtbench.verdict import deadline_misses

            if deadline_misses(self):
                return "failed"
        return worst

    def case(self, case_id: str) -> CaseResult | None:
        for c in self.cases:
            if c.case == case_id:
                return c
        return None

    def all_warnings(self) -> list[Warning]:
        return self.warnings + [w for c in self.cases for w in c.warnings]

    @property
    def system(self) -> System:
        """What system this run measured: the agent's `hello` (the target's
        own view) first; the host probe only fills what the hello lacks, and
        only when the probe describes that same system (a local run)."""
        return system_of(self.hello, self.machine)

    @property
    def t_std_ns(self) -> float | None:
        """T_std of CAL-REF, the hardware calibration unit, when the run has it."""
        cal = self.case("CAL-REF")
        s = cal.find("t_std") if cal else None
        return s.mean if s is not None else None


@dataclass(frozen=True)
class System:
    """The system under test, one answer for the store and every renderer.
    Strings are '' and counts None where nobody knows."""

    sysname: str = ""
    release: str = ""
    version: str = ""
    arch: str = ""
    cpu_model: str = ""
    cpu_count: int | None = None
    preempt: str = ""  # PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT, '' (none/voluntary/unknown)
    preempt_mode: str = ""  # the dynamic mode in effect: none, voluntary, full, lazy
    clocksource: str = ""
    cmdline: str = ""
    source: Literal["agent", "host probe", ""] = ""  # where `release` came from


def _text(d: object, key: str) -> str:
    value = d.get(key) if isinstance(d, dict) else None
    return value if isinstance(value, str) else ""


def _dict(d: dict[str, Any], key: str) -> dict[str, Any]:
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def system_of(hello: dict[str, Any], machine: dict[str, Any]) -> System:
    os_, cpu = _dict(hello, "os"), _dict(hello, "cpu")
    release = _text(os_, "release")
    host_release = _text(machine, "kernel_release")
    # The host probe speaks for the target only when both are the same
    # system: a host driving a UART or a QEMU guest is another kernel.
    host = machine if host_release and (not release or release == host_release) else {}
    pre, clock = _dict(host, "preemption"), _dict(host, "clocksource")
    count = cpu.get("count") if isinstance(cpu.get("count"), int) else host.get("cpu_count")
    return System(
        sysname=_text(os_, "sysname") or ("Linux" if host else ""),
        release=release or _text(host, "kernel_release"),
        version=_text(os_, "version") or _text(host, "kernel_version"),
        arch=_text(os_, "machine"),
        cpu_model=_text(cpu, "model") or _text(host, "cpu_model"),
        cpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        preempt=_text(os_, "preempt") or _text(pre, "model"),
        preempt_mode=_text(os_, "preempt_mode") or _text(pre, "mode"),
        clocksource=_text(os_, "clocksource") or _text(clock, "current"),
        cmdline=_text(os_, "cmdline") or _text(host, "cmdline"),
        source="agent" if release else "host probe" if host else "",
    )


def worst_outcome(outcomes: list[str]) -> str:
    return min(outcomes, key=lambda o: _OUTCOME_RANK.get(o, 0)) if outcomes else "passed"


def to_json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
