"""Stores the runs of hosts that died while measuring (SIGKILL, OOM, power).

Every command that opens the store calls `recover` first; `rtbench recover`
does it on request. A journal whose host still runs is locked by it and left
alone; any other is stored as a run (incomplete unless its `bye` arrived)
with every case whose `end` arrived, and then removed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rtbench.journal import candidates, claimed, read_header, was_saving
from rtbench.measure import read_stream
from rtbench.model import Run
from rtbench.model import Warning as RunWarning
from rtbench.store import Store, StoreError
from rtbench.stream import StreamError
from rtbench.stream.assemble import END_LOST, ENDED_INSIDE


@dataclass
class Recovered:
    journal: Path
    run_id: int | None  # None: nothing to store, already stored, or failed
    message: str


def recover(store: Store, say: Callable[[str], None]) -> list[Recovered]:
    """Stores every abandoned journal of `store`; says what it did."""
    done: list[Recovered] = []
    mine = store.location.key
    for path in candidates(store.location):
        try:
            header = read_header(path)
        except OSError:
            continue
        if header.get("store", mine) != mine:
            continue  # another store's run, in the shared fallback directory
        with claimed(path) as ours:
            if not ours:
                continue  # its host is still measuring
            result = _recover_one(store, path, header)
        done.append(result)
        say(result.message)
    return done


def _recover_one(store: Store, path: Path, header: dict[str, object]) -> Recovered:
    pid = header.get("pid", "?")
    what = f"the journal of an interrupted run (host pid {pid}, started {header.get('started_at')})"
    try:
        run = read_stream(path)
    except (OSError, StreamError) as e:
        return Recovered(path, None, f"found {what} in {path} but cannot read it: {e}")
    if not run.hello and not run.cases:
        _remove(path)
        return Recovered(path, None, f"found {what}: nothing was measured; removed it")
    try:
        if was_saving(path) and _already_stored(store, run):
            _remove(path)
            return Recovered(path, None, f"found {what}: it was already stored; removed it")
        run.warnings.append(
            RunWarning(
                "recovered",
                f"stored from the journal after its host (pid {pid}) ended without storing it",
            )
        )
        store.save(run)
    except (StoreError, OverflowError, ValueError, TypeError) as e:
        return Recovered(
            path,
            None,
            f"found {what} in {path} but cannot store it ({e}); it stays there: "
            f"`rtbench recover` tries again, or `rtbench ingest {path}`",
        )
    _remove(path)
    finished = sum(1 for c in run.cases if c.reason not in (ENDED_INSIDE, END_LOST))
    state = "complete" if run.complete else "incomplete"
    return Recovered(
        path,
        run.id,
        f"recovered {what}: stored as run {run.id} ({state}, {len(run.cases)} cases, "
        f"{finished} of them finished)",
    )


def _already_stored(store: Store, run: Run) -> bool:
    """A run the dead host committed before it could remove its journal."""
    return any(
        s.started_at == run.started_at
        and s.target == run.target
        and s.cases == len(run.cases)
        and s.labels == run.labels
        for s in store.list_runs()
    )


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
