"""JIT-AB: the same experiment under two configurations, A and B.

A configuration is a list of settings, each KEY=VALUE:

    load=SPEC          background load (agent --load; docs/loads.md)
    load_cpus=LIST     its CPUs;  load_threads=N  its threads per kind
    pin=on|off         case threads pinned to the measurement CPU (agent --no-pin)
    trace=off|on       kernel-trace recording (`rtbench run --trace`)
    preempt=MODE       PREEMPT_DYNAMIC mode (none, voluntary, full, lazy),
                       switched through debugfs for the run and restored after
    priority=P, cpu=N  the agent's --priority / --cpu
    set:CASE.PARAM=V   a case parameter for this side only (like --set)

The runs interleave (A, B, A, B, ...) so that drifting machine noise hits
both alike. Each run is stored with labels ab=A|B, ab_id, ab_round and
ab_config. The rounds of each side are pooled per series for the figures
A and B and their ratio; the test is over runs (rtbench.analysis.compare:
Welch's t-test on the per-run indicator, each round one observation), and
each row says whether B/A exceeds the spread between the rounds of a side.
With one round per side nothing is significant.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rtbench.analysis.compare import compare_runs
from rtbench.analysis.stats import has_all_samples
from rtbench.model import CaseResult, Histogram, Run, Series, worst_outcome
from rtbench.run.request import AgentRequest
from rtbench.run.suites import Planned

KEYS = ("load", "load_cpus", "load_threads", "pin", "trace", "preempt", "priority", "cpu")
PREEMPT_MODES = ("none", "voluntary", "full", "lazy")
DEFAULT_INDICATORS = ("p50", "p99", "max")
_ONOFF = ("on", "off")


class ConfigError(ValueError):
    pass


@dataclass
class Config:
    name: str
    settings: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)  # CASE.PARAM=VALUE

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.settings.items()]
        parts += [f"set:{o}" for o in self.overrides]
        return " ".join(parts) or "defaults"

    @property
    def trace(self) -> bool:
        return self.settings.get("trace") == "on"

    @property
    def preempt(self) -> str | None:
        return self.settings.get("preempt")

    def request(
        self, plan: list[Planned], cpu: int | None, priority: int | None
    ) -> AgentRequest:
        """The agent's request of this side: its settings over the command's."""
        s = self.settings
        threads = s.get("load_threads")
        c = s.get("cpu")
        p = s.get("priority")
        return AgentRequest(
            plan,
            priority=int(p) if p is not None else priority,
            cpu=int(c) if c is not None else cpu,
            load=s.get("load"),
            load_cpus=s.get("load_cpus"),
            load_threads=int(threads) if threads is not None else None,
            pin=s.get("pin") != "off",
        )

    def labels(self) -> dict[str, str]:
        out = {"ab": self.name, "ab_config": self.describe()}
        if "load" in self.settings:
            out["load"] = self.settings["load"]
        return out


def _int(key: str, value: str, lo: int, hi: int) -> None:
    try:
        v = int(value)
    except ValueError:
        raise ConfigError(f"{key}={value!r}: an integer is expected") from None
    if not lo <= v <= hi:
        raise ConfigError(f"{key}={v} is out of range {lo}..{hi}")


def parse_config(name: str, items: tuple[str, ...] | list[str]) -> Config:
    """`items` as given to --a / --b; ConfigError names what is allowed."""
    cfg = Config(name)
    for item in items:
        key, sep, value = item.partition("=")
        if key.startswith("set:"):
            target = item[4:]
            if "=" not in target or not target.split("=", 1)[1]:
                raise ConfigError(f"--{name.lower()} {item!r}: write set:CASE.PARAM=VALUE")
            cfg.overrides.append(target)
            continue
        if not sep or not value:
            raise ConfigError(f"--{name.lower()} {item!r}: write KEY=VALUE or set:CASE.PARAM=VALUE")
        if key not in KEYS:
            raise ConfigError(
                f"--{name.lower()} {item!r}: unknown setting {key!r}; settings: "
                f"{', '.join(KEYS)}, set:CASE.PARAM"
            )
        if key in ("pin", "trace") and value not in _ONOFF:
            raise ConfigError(f"{key}={value!r}: write {key}=on or {key}=off")
        if key == "preempt" and value not in PREEMPT_MODES:
            raise ConfigError(f"preempt={value!r}: modes are {', '.join(PREEMPT_MODES)}")
        if key == "priority":
            _int(key, value, 1, 97)
        if key in ("cpu", "load_threads"):
            _int(key, value, 0 if key == "cpu" else 1, 4095 if key == "cpu" else 64)
        cfg.settings[key] = value
    return cfg


# --- the preemption model (PREEMPT_DYNAMIC) -----------------------------------

PREEMPT_FILE = "sys/kernel/debug/sched/preempt"
_HELD = (signal.SIGINT, signal.SIGTERM)  # held while the original mode is put back


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _debugfs_mounted(where: str) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return False
    return any(
        len(f) >= 3 and f[1] == where and f[2] == "debugfs"
        for f in (line.split() for line in mounts.splitlines())
    )


class PreemptSwitch:
    """Reads and switches the PREEMPT_DYNAMIC mode through debugfs, mounting
    debugfs when it has to, and puts back the mode (and the mount) it found.

    `root` is for tests: under a root other than "/" nothing is mounted and
    the root and kernel checks are skipped (the file is a plain file)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.root = root
        self.path = root / PREEMPT_FILE
        self.mounted = False
        self.original: str | None = None
        self.modes: list[str] = []

    def _real(self) -> bool:
        return self.root == Path("/")

    def open(self) -> None:
        """Finds the current mode; ConfigError says why it cannot be switched."""
        if self._real():
            if not sys.platform.startswith("linux"):
                raise ConfigError("preempt: not Linux")
            if os.geteuid() != 0:
                raise ConfigError("preempt: needs root (debugfs and sched/preempt are root's)")
            debugfs = str(self.root / "sys/kernel/debug")
            if not _debugfs_mounted(debugfs) and not self.path.exists():
                self._mount(debugfs)
        if not self.path.exists():
            self.close()
            raise ConfigError(f"preempt: no {self.path}: {self._why_missing()}")
        try:
            text = self.path.read_text().strip()
        except OSError as e:
            self.close()
            raise ConfigError(
                f"preempt: the kernel refuses to read {self.path} ({e.strerror}); its "
                "preemption model cannot be switched at run time here"
            ) from None
        words = text.split()
        self.modes = [w.strip("()") for w in words]
        current = [w.strip("()") for w in words if w.startswith("(")]
        self.original = current[0] if current else (words[0] if len(words) == 1 else None)
        if self.original is None:
            self.close()
            raise ConfigError(f"preempt: cannot tell the current mode from {text!r}")

    def _why_missing(self) -> str:
        from rtbench.machine import probe

        if not self._real():
            return "no such file"
        pre = probe.probe_machine().get("preemption") or {}
        model = pre.get("model")
        if model != "PREEMPT_DYNAMIC":
            return (
                f"the kernel is {model or 'of an unknown model'}, not PREEMPT_DYNAMIC: its "
                "preemption model is fixed when it is built"
            )
        return "this PREEMPT_DYNAMIC kernel has no sched/preempt in debugfs"

    def _mount(self, where: str) -> None:
        try:
            with open("/proc/filesystems") as f:
                if not any(line.split()[-1:] == ["debugfs"] for line in f):
                    raise ConfigError("preempt: no debugfs in this kernel")
        except OSError:
            pass
        if _libc().mount(b"none", os.fsencode(where), b"debugfs", 0, None) != 0:
            e = ctypes.get_errno()
            raise ConfigError(f"preempt: cannot mount debugfs on {where}: {os.strerror(e)}")
        self.mounted = True

    def close(self) -> None:
        if self.mounted:
            _libc().umount2(os.fsencode(str(self.root / "sys/kernel/debug")), 0)
            self.mounted = False

    def check(self, mode: str) -> None:
        if self.modes and mode not in self.modes:
            raise ConfigError(f"preempt={mode}: this kernel offers {', '.join(self.modes)}")

    def write(self, mode: str) -> None:
        try:
            self.path.write_text(mode)
        except OSError as e:
            raise ConfigError(f"preempt: cannot switch to {mode}: {e.strerror}") from None

    @contextmanager
    def switched(self, mode: str | None) -> Iterator[None]:
        """The block runs in `mode` (None: as found); the mode found is back
        after it however it ends. A Ctrl-C during the restore waits for it."""
        if mode is None or mode == self.original:
            yield
            return
        self.write(mode)
        try:
            yield
        finally:
            held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _HELD}
            try:
                if self.original is not None:
                    self.write(self.original)
            finally:
                for sig, handler in held.items():
                    signal.signal(sig, handler)


# --- pooling and comparing ----------------------------------------------------


def _merge_hist(hists: list[Histogram]) -> Histogram | None:
    if any(h.layout != hists[0].layout for h in hists):
        return None
    counts: dict[int, int] = {}
    for h in hists:
        for i, c in h.counts:
            counts[i] = counts.get(i, 0) + c
    mins = [h.min for h in hists if h.min is not None]
    maxs = [h.max for h in hists if h.max is not None]
    return Histogram(
        layout=hists[0].layout,
        counts=sorted(counts.items()),
        n=sum(h.n for h in hists),
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
        sum=sum(h.sum for h in hists),
        underflow=sum(h.underflow for h in hists),
        overflow=sum(h.overflow for h in hists),
    )


def merge_series(parts: list[Series]) -> Series:
    """One series from the same series of several runs."""
    first = parts[0]
    samples = None
    if all(has_all_samples(s) for s in parts):
        samples = np.concatenate([s.samples for s in parts if s.samples is not None])
    hists = [s.hist for s in parts if s.hist is not None]
    mins = [s.min for s in parts if s.min is not None]
    maxs = [s.max for s in parts if s.max is not None]
    return Series(
        case=first.case,
        name=first.name,
        point=dict(first.point),
        unit=first.unit,
        samples=samples,
        hist=_merge_hist(hists) if len(hists) == len(parts) else None,
        n=sum(s.n for s in parts),
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
        sum=sum(s.sum for s in parts),
        dropped=sum(s.dropped for s in parts),
        kind=first.kind,
        attrs=dict(first.attrs),
    )


def pool(runs: list[Run]) -> Run:
    """The runs of one side as one run: each series pooled over the rounds."""
    grouped: dict[tuple[str, str, str], list[Series]] = {}
    for run in runs:
        for c in run.cases:
            for s in c.series:
                grouped.setdefault(s.key, []).append(s)
    cases: dict[str, CaseResult] = {}
    for key, parts in grouped.items():
        case = cases.setdefault(key[0], CaseResult(case=key[0], outcome="passed"))
        case.series.append(merge_series(parts))
    # The pool is as bad as its worst run: each case's worst outcome, and
    # every run's checks and warnings, named by run (a failed repetition is
    # never merged into "passed · checks none").
    for run in runs:
        who = f"run #{run.id}: " if run.id is not None else ""
        for c in run.cases:
            case = cases.setdefault(c.case, CaseResult(case=c.case, outcome=c.outcome))
            case.title = case.title or c.title
            case.outcome = worst_outcome([case.outcome, c.outcome])  # type: ignore[assignment]
            case.reason = case.reason or c.reason
            case.checks += [replace(ch, detail=who + ch.detail) for ch in c.checks]
            case.warnings += [replace(w, detail=who + w.detail) for w in c.warnings]
    # A pooled run is as real-time as the runs it pools, not just its first.
    hello = {**runs[0].hello, "realtime": {"ok": all(r.realtime for r in runs)}} if runs else {}
    complete = all(r.complete for r in runs)
    return Run(hello=hello, cases=list(cases.values()), bye={} if complete else None)


def failed_runs(members: list[Run]) -> str:
    """The runs of a pool that did not pass, as `#id outcome` ('' if none)."""
    return ", ".join(f"#{r.id} {r.outcome}" for r in members if r.outcome in ("failed", "error"))


def column(members: list[Run]) -> Run:
    """A comparison column standing for `members`, repetitions of one
    configuration: the run itself, or their series pooled, with the labels
    they share and their ids (label `runs`)."""
    if len(members) == 1:
        return members[0]
    first = members[0]
    merged = pool(members)
    merged.machine = first.machine
    merged.target = first.target
    merged.started_at = first.started_at
    merged.source = f"runs {', '.join(str(r.id) for r in members)}"
    shared = {k: v for k, v in first.labels.items() if all(r.labels.get(k) == v for r in members)}
    merged.labels = {**shared, "runs": ",".join(str(r.id) for r in members)}
    bad = failed_runs(members)
    if bad:
        merged.labels["failed_runs"] = bad
    return merged


@dataclass
class Row:
    case: str
    series: str
    indicator: str
    a: float | None
    b: float | None
    ratio: float | None
    pvalue: float | None
    test: str
    significant: bool
    unstable: list[str]
    # The change exceeds the spread between the rounds of a side (None:
    # one round per side, the spread is unknown).
    beyond_noise: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def compare(a_runs: list[Run], b_runs: list[Run], indicators: tuple[str, ...]) -> list[Row]:
    """Per series and indicator: A, B, B/A and the test of the two pools."""
    a, b = pool(a_runs), pool(b_runs)
    rows: list[Row] = []
    for ind in indicators:
        for r in compare_runs([a, b], ind, members=[a_runs, b_runs]).rows:
            rows.append(
                Row(
                    case=r.case,
                    series=r.label,
                    indicator=ind,
                    a=r.values[0],
                    b=r.values[1] if len(r.values) > 1 else None,
                    ratio=r.ratios[1] if len(r.ratios) > 1 else None,
                    pvalue=r.pvalue,
                    test=r.test,
                    significant=r.significant,
                    beyond_noise=r.beyond_noise,
                    unstable=[
                        f"{side}: {w}" for side, w in zip("AB", r.why_unstable, strict=False) if w
                    ],
                )
            )
    order = {ind: i for i, ind in enumerate(indicators)}
    rows.sort(key=lambda x: (x.case, x.series, order[x.indicator]))
    return rows
