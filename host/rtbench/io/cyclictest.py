"""Import rt-tests' cyclictest JSON output (`cyclictest --json=FILE`) as a run.

The file (rt-tests src/cyclictest/cyclictest.c write_stats and
src/lib/rt-utils.c rt_write_json) holds, per measuring thread, a sparse
latency histogram {"bucket": count} in µs (ns with --nsecs, when
"resolution_in_ns" is 1), the cycle count, min, max and the average rounded
to two decimals. Values past the histogram's size (-h N) are counted in no
bucket: they show here as overflow (cycles - the buckets' sum); the exact max
is kept apart, as in rtbench's own histograms.

The threads become one case, JIT-PER, the same measurement (a periodic
SCHED_FIFO release, latency from the planned wake-up): one series
`latency[cpu=N]` per thread, as `rtbench run -c JIT-PER --cpus LIST` names
its own (`latency[thread=i]` when the file does not say a thread's CPU, or
two threads share one), in ns and of kind latency, so `compare` and
`report` set a cyclictest file beside a JIT-PER run series by series.
The sum is rebuilt from the rounded average, so the mean is good to
0.005 µs. Whether the threads ran at a real-time priority is read from the
command line (-p N / --priority=N): the file says nothing else about it.

rt-tests writes this JSON with fprintf: some versions put a stray colon in
two keys ("cmdline:") and leave the command line unescaped, and a thread
without cycles has an average of "-nan". The reader repairs those before
giving up.
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from rtbench.model import CaseResult, Histogram, Point, Run, Series, Warning

CASE = "JIT-PER"
SERIES = "latency"
_NAN = re.compile(r"(?<=[:\s])-?nan\b", re.IGNORECASE)
_CMDLINE = re.compile(r'^(\s*"cmdline:?"\s*:\s*")(.*)(",\s*)$', re.MULTILINE)
_PRIO = re.compile(r"(?:^|\s)(?:-p\s*|--prio(?:rity)?[=\s])(\d+)")
_HIST = re.compile(r"(?:^|\s)(?:-[hH]\s*|--histo(?:gram|fall)?[=\s])(\d+)")
_INTERVAL = re.compile(r"(?:^|\s)(?:-i\s*|--interval[=\s])(\d+)")


class CyclictestError(ValueError):
    """A file that is not cyclictest JSON output (or too damaged to read)."""


def _repair(text: str) -> str:
    """Escape the command line and null the NaNs that rt-tests writes raw."""

    def escape(m: re.Match[str]) -> str:
        return m[1] + json.dumps(m[2])[1:-1] + m[3]

    return _NAN.sub("null", _CMDLINE.sub(escape, text))


def _load(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            doc = json.loads(_repair(text))
        except json.JSONDecodeError as e:
            raise CyclictestError(f"not valid JSON, even after repairs: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("thread"), dict):
        raise CyclictestError('no "thread" object: not cyclictest --json output')
    return doc


def _get(doc: dict[str, Any], key: str, default: Any = None) -> Any:
    """doc[key], also under the "key:" spelling some rt-tests versions write."""
    return doc.get(key, doc.get(key + ":", default))


def _int_option(pattern: re.Pattern[str], cmdline: str) -> int | None:
    m = pattern.search(cmdline)
    return int(m[1]) if m else None


def _iso(stamp: str) -> str:
    try:
        return parsedate_to_datetime(stamp).astimezone(UTC).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return ""


def _histogram(
    raw: dict[str, Any], cycles: int, bounds: tuple[int, int], scale: int, size: int | None
) -> Histogram | None:
    counts = sorted((int(k), int(v)) for k, v in raw.items() if int(v) > 0)
    if not counts:
        return None
    buckets = size if size is not None else counts[-1][0] + 1
    in_buckets = sum(c for _, c in counts)
    return Histogram(
        layout={"kind": "linear", "lo": 0, "width": scale, "buckets": buckets},
        counts=counts,
        n=cycles,
        min=bounds[0],
        max=bounds[1],
        sum=0,  # set by the caller, from the average
        overflow=max(0, cycles - in_buckets),
    )


def _thread_series(
    index: str, t: dict[str, Any], scale: int, size: int | None, point: Point
) -> tuple[Series, list[Warning]]:
    cid = CASE
    cycles = int(t.get("cycles") or 0)
    avg = t.get("avg")
    lo = int(t["min"]) * scale if cycles else None
    hi = int(t["max"]) * scale if cycles else None
    total = round(float(avg) * cycles * scale) if cycles and avg is not None else 0
    hist = None
    if lo is not None and hi is not None:
        hist = _histogram(t.get("histogram") or {}, cycles, (lo, hi), scale, size)
    if hist is not None:
        hist.sum = total
    s = Series(
        case=cid, name=SERIES, point=point, unit="ns", hist=hist, n=cycles, min=lo, max=hi,
        sum=total, kind="latency", attrs={"thread": int(index)},
    )  # fmt: skip
    warnings = []
    if hist is not None and hist.overflow:
        warnings.append(
            Warning("hist_overflow", f"thread {index}: {hist.overflow} beyond the histogram", cid)
        )
    return s, warnings


def _case(threads: list[tuple[str, Any]], scale: int, size: int | None, ok: bool) -> CaseResult:
    """JIT-PER with one latency series per thread, keyed by CPU when each
    thread has its own."""
    cpus = [t.get("cpu") for _, t in threads]
    by_cpu = all(isinstance(c, int) for c in cpus) and len(set(cpus)) == len(cpus)
    series, warnings = [], []
    for (index, t), cpu in zip(threads, cpus, strict=True):
        point: Point = {"cpu": cpu} if by_cpu else {"thread": int(index)}
        s, w = _thread_series(index, t, scale, size, point)
        series.append(s)
        warnings += w
    return CaseResult(
        case=CASE,
        title="Periodic task release jitter (cyclictest, imported)",
        params={"source": "cyclictest", "threads": len(threads)},
        outcome="passed" if ok else "error",
        reason="" if ok else "cyclictest exited with an error",
        series=series,
        warnings=warnings,
    )


def _hello(doc: dict[str, Any], cmdline: str, prio: int, scale: int) -> dict[str, Any]:
    sysinfo = doc.get("sysinfo") or {}
    return {
        "format": 1,
        "agent": "cyclictest",
        "version": str(_get(doc, "rt_test_version", "")),
        "port": "rt-tests",
        "os": {k: sysinfo.get(k) for k in ("sysname", "release", "version", "machine")},
        "cpu": {},
        "clock": {"source": "cyclictest (clock_nanosleep)", "resolution_ns": scale},
        "realtime": {
            "ok": prio > 0,
            "policy": "SCHED_FIFO" if prio > 0 else "SCHED_OTHER",
            "detail": f"priority {prio} read from the cyclictest command line",
        },
        "params": {
            "cmdline": cmdline,
            "priority": prio,
            "interval_us": _int_option(_INTERVAL, cmdline),
        },
    }


def parse_cyclictest(text: str, name: str = "cyclictest.json") -> Run:
    """The Run a cyclictest JSON file describes."""
    doc = _load(text)
    cmdline = str(_get(doc, "cmdline", ""))
    sysinfo = doc.get("sysinfo") or {}
    scale = 1 if doc.get("resolution_in_ns") else 1000
    prio = _int_option(_PRIO, cmdline) or 0
    ok = int(doc.get("return_code", 0) or 0) == 0
    size = _int_option(_HIST, cmdline)
    try:
        threads = sorted(doc["thread"].items(), key=lambda kv: int(kv[0]))
        cases = [_case(threads, scale, size, ok)] if threads else []
    except (KeyError, TypeError, ValueError) as e:
        raise CyclictestError(f"a thread's figures do not read: {type(e).__name__}: {e}") from e
    return Run(
        hello=_hello(doc, cmdline, prio, scale),
        cases=cases,
        warnings=[Warning("imported", f"cyclictest JSON {name}; sums rebuilt from the average")],
        bye={"result": "passed" if ok else "error", "records": 0},
        started_at=_iso(str(doc.get("start_time", ""))),
        target=str(sysinfo.get("nodename") or "cyclictest"),
        machine={
            "hostname": sysinfo.get("nodename"),
            "kernel_release": sysinfo.get("release"),
            "kernel_version": sysinfo.get("version"),
            "preemption": {"model": "PREEMPT_RT" if sysinfo.get("realtime") else None},
        },
        source=f"import-cyclictest {name}",
    )


def read_cyclictest(path: str | Path) -> Run:
    p = Path(path)
    try:
        text = p.read_text("utf-8", errors="surrogateescape")
    except OSError as e:
        raise CyclictestError(f"cannot read {p}: {e}") from e
    return parse_cyclictest(text, p.name)
