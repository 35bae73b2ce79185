"""The terminal summary of a run: figures per series, checks, warnings,
stream problems. Times in µs, counts as counts; the maximum is the
headline, and no figure is ever cut (`rtbench.reports.tables`)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from rtbench.model import Run
from rtbench.reports.figures import figures_table
from rtbench.reports.tables import print_table
from rtbench.reports.units import us
from rtbench.verdict import verdict

_OUTCOME_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "bold red",
    "unsupported": "yellow",
    "skipped": "yellow",
}
_VERDICT_STYLE = {"pass": "green", "fail": "red", "error": "bold red", "skip": "yellow"}


def _header(run: Run, console: Console) -> None:
    h, system = run.hello, run.system
    kernel = system.release or "?"
    model = system.preempt or "?"
    mode = f" ({system.preempt_mode})" if system.preempt_mode else ""
    clock = h["clock"] if isinstance(h.get("clock"), dict) else {}
    title = f"run {run.id}" if run.id is not None else "run (not stored)"
    console.print(Text(f"rtbench {title} · {run.started_at} · target {run.target}", style="bold"))
    console.print(
        f"  {system.sysname or '?'} {kernel} · {model}{mode} · "
        f"{system.cpu_model or '?'} × {system.cpu_count or '?'} · "
        f"clock {clock.get('source', '?')} (read {clock.get('read_overhead_ns', '?')} ns)",
        highlight=False,
    )
    if run.labels:
        console.print(
            "  labels: " + ", ".join(f"{k}={v}" for k, v in run.labels.items()),
            highlight=False,
            markup=False,
        )
    if run.emulated:
        console.print(
            Text(
                f"  EMULATED: the target ran in {run.emulated}; every figure below is flagged "
                "emulated and compares only with runs of the same emulator on the same host."
                + (f" {run.emulated_time}" if run.emulated_time else ""),
                style="bold white on magenta",
            )
        )
    if not run.realtime:
        detail = (
            h.get("realtime", {}).get("detail", "") if isinstance(h.get("realtime"), dict) else ""
        )
        console.print(
            Text(
                "  NOT REAL-TIME: the agent ran without real-time priority; every figure below "
                f"is flagged not_realtime and says little about this OS. {detail}\n"
                "  Fix: run as root or grant CAP_SYS_NICE (see `rtbench doctor`).",
                style="bold white on red",
            )
        )


def _cases(names: list[str]) -> str:
    """The cases a warning came from: all of a few, the first three of many."""
    if len(names) <= 3:
        return ", ".join(names)
    return f"{', '.join(names[:3])} and {len(names) - 3} more cases"


def render_run(run: Run, console: Console) -> None:
    _header(run, console)
    if run.cases:
        print_table(figures_table(run), console)
    t_std = run.t_std_ns
    if t_std:
        console.print(f"  score = mean / T_std, T_std = {us(t_std)} µs (CAL-REF)", highlight=False)
    checks = [ch for c in run.cases for ch in c.checks]
    if checks:
        console.print(Text("Checks", style="bold"))
        for ch in checks:
            style = _VERDICT_STYLE.get(ch.verdict, "")
            line = Text("  ")
            line.append(f"{ch.verdict:5}", style=style)
            line.append(f" {ch.case} {ch.name}: {ch.detail}")
            console.print(line)
    warnings = run.all_warnings()
    if warnings:
        console.print(Text("Warnings", style="bold yellow"))
        # One line per warning, naming the cases it came from: without
        # real-time priority every case says not_realtime in the same words
        # (44 lines of one warning buried the others).
        where: dict[tuple[str, str, bool], list[str]] = {}
        for w in warnings:
            names = where.setdefault((w.code, w.detail, w.case is None), [])
            if w.case is not None and w.case not in names:
                names.append(w.case)
        for (code, detail, _), names in where.items():
            console.print(Text(f"  {code} {_cases(names)}: {detail}", style="yellow"))
    if run.issues:
        console.print(Text("Stream problems", style="bold red"))
        for issue in run.issues:
            console.print(Text(f"  {issue}", style="red"))
    line = Text("Cases: ")
    for c in run.cases:
        line.append(f"{c.case} ", style="bold")
        line.append(c.outcome, style=_OUTCOME_STYLE.get(c.outcome, ""))
        if c.reason:
            line.append(f" ({c.reason})")
        line.append("  ")
    console.print(line)
    style = _OUTCOME_STYLE.get(run.outcome, "")
    complete = "" if run.complete else " (stream incomplete)"
    console.print(Text(f"Result: {run.outcome}{complete}", style=f"bold {style}"))
    v = verdict(run)
    for name, part in (("Behaviour", v.behaviour), ("Timing", v.timing)):
        line = Text(f"  {name}: ")
        line.append(part.outcome, style=f"bold {_OUTCOME_STYLE.get(part.outcome, '')}")
        if part.reasons:
            line.append(f" ({'; '.join(part.reasons)})")
        console.print(line)
    note = _not_judged(run)
    if note:
        console.print(Text(f"  {note}", style="yellow"))


def _not_judged(run: Run) -> str:
    """What a `passed` does not cover: skipped checks and cases that could
    not apply here (docs/outcomes.md). A run where nothing applied says so
    rather than pass silently."""
    skipped = [ch for c in run.cases for ch in c.checks if ch.verdict == "skip"]
    idle = [c for c in run.cases if c.outcome in ("skipped", "unsupported")]
    if not skipped and not idle:
        return ""
    if run.cases and len(idle) == len(run.cases):
        return (
            f"nothing was judged: all {len(idle)} cases were skipped or unsupported here "
            "(reasons above); this run says nothing about the OS"
        )
    parts = []
    if skipped:
        parts.append(f"{len(skipped)} checks skipped")
    if idle:
        parts.append(f"{len(idle)} of {len(run.cases)} cases skipped or unsupported")
    return ", ".join(parts) + ": they could not apply here (reasons above) and are not passes"
