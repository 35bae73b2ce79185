"""`rtbench targets` (the named targets and whether each answers), and the
`--target` option that the measuring commands share."""

from __future__ import annotations

import atexit
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from rtbench import catalogue
from rtbench.catalogue import AgentCase
from rtbench.commands.common import busy, err, fail, out
from rtbench.targets import (
    Reachability,
    Target,
    TargetError,
    close,
    load_targets_file,
    resolve,
    targets_file,
)
from rtbench.transports import Transport, TransportError

CHECK_TIMEOUT_S = 10.0


def target_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--target",
        "target_spec",
        metavar="SPEC|NAME",
        default=None,
        help="Where the agent runs: local (default), ssh://[user@]host[:port], "
        "serial:///dev/ttyX?baud=N&cmd=…, qemu:NAME, labgrid:PLACE, or a name from the "
        "targets file "
        "(`rtbench targets`).",
    )(f)


def resolve_or_fail(spec: str | None, trace: bool = False) -> Target:
    try:
        target = resolve(spec)
    except TargetError as e:
        fail(str(e))
    atexit.register(close_quietly, target)
    # A QEMU guest or an SSH target records its own trace (rtbench.targets.guest_trace).
    if trace and not target.is_local and not hasattr(target, "guest_trace"):
        fail(
            f"--trace records this machine's kernel (tracefs): it cannot trace {target.name} "
            "yet; run rtbench on the target itself for a kernel trace"
        )
    return target


def close_quietly(target: Target) -> None:
    """Releases what the target holds (a labgrid place) as the command ends;
    a failure is said, never raised: what was measured is stored already."""
    try:
        close(target)
    except TargetError as e:
        err.print(str(e), style="yellow")


def target_cases(target: Target, agent: Path | None) -> dict[str, AgentCase]:
    """The case table of the agent that runs on `target`: the given agent's
    own (`--list`), else the shipped table of the target's port (a board's
    RTOS port; every other target runs the POSIX agent)."""
    if agent is not None:
        return catalogue.agent_cases(agent)
    return catalogue.port_cases(str(getattr(target, "port", "posix")))


def open_transport(target: Target, agent: Path | None) -> Transport:
    """The target's transport, its set-up (a copy, a boot) said plainly when it fails."""
    try:
        if target.is_local:
            return target.transport(agent)
        with busy(f"preparing {target.name} (a build, a boot: seconds to minutes)"):
            return target.transport(agent)
    except (TargetError, TransportError) as e:  # a build or a boot that cannot start
        fail(str(e))


def _check(target: Target | str) -> Reachability:
    if isinstance(target, str):
        return Reachability(False, target)  # the reason it did not resolve
    try:
        return target.check(CHECK_TIMEOUT_S)
    except TargetError as e:
        return Reachability(False, str(e))


@click.command(name="targets")
@click.argument("specs", nargs=-1, metavar="[SPEC|NAME]...")
@click.option("--no-check", is_flag=True, help="List only; do not try to reach them.")
def targets_cmd(specs: tuple[str, ...], no_check: bool) -> None:
    """The targets of the targets file (or the given specs) and whether each
    answers. Exit 0 when all do, 2 when one does not or the file is bad (1
    means an OS missed a check: docs/outcomes.md)."""
    path = targets_file()
    try:
        named = load_targets_file(path)
    except TargetError as e:
        fail(str(e))
    rows: list[tuple[str, str]] = (
        [(s, s) for s in specs]
        if specs
        else [("local", "local"), *((n, str(e["spec"])) for n, e in named.items())]
    )
    resolved: list[Target | str] = []
    for name, _ in rows:
        try:
            resolved.append(resolve(name))
        except TargetError as e:
            resolved.append(str(e))
    checks: list[Reachability | None] = [None] * len(resolved)
    if not no_check:
        with ThreadPoolExecutor(max_workers=8) as pool:
            checks = list(pool.map(_check, resolved))
    t = Table(header_style="bold", title=f"targets ({path})")
    for col in ("name", "kind", "spec", "reachable", "detail"):
        t.add_column(col, overflow="fold")
    for (name, spec), target, reach in zip(rows, resolved, checks, strict=True):
        kind = target.kind if not isinstance(target, str) else "?"
        state: str | Text
        if reach is None:
            state, detail = "-", "" if not isinstance(target, str) else target
        else:
            state = Text("yes", style="green") if reach.ok else Text("no", style="red")
            detail = reach.detail
        t.add_row(name, kind, spec, state, detail)
    out.print(t)
    if not named and not specs:
        out.print(
            f"no targets file at {path}: name targets there (docs/targets.md) or set "
            "RTBENCH_TARGETS",
            style="dim",
            highlight=False,
        )
    bad = any(isinstance(r, str) for r in resolved) or any(c and not c.ok for c in checks)
    raise SystemExit(2 if bad else 0)


def register(main: click.Group) -> None:
    main.add_command(targets_cmd)
