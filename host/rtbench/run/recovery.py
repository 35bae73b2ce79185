"""Stores the runs of hosts that died while measuring (SIGKILL, OOM, power).

Every command that opens the store calls `recover` first; `rtbench recover`
does it on request. A journal whose host still runs is locked by it and left
alone; any other is stored as a run (incomplete unless its `bye` arrived)
with every case whose `end` arrived, and then removed.

"Already stored" is decided by the run's identity alone (`Run.uuid`, from
the journal's header): a journal is removed only once the store holds a run
of its identity. One that cannot be removed is marked done
(`journal.mark_done`) and not read again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rtbench.model import Warning as RunWarning
from rtbench.run.journal import candidates, claimed, mark_done, read_header
from rtbench.run.measure import read_stream
from rtbench.store import AlreadyStored, Store, StoreError
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
    found: list[tuple[Path, dict[str, object]]] = []
    for path in candidates(store.location, say):
        try:
            header = read_header(path)
        except OSError as e:
            say(f"{path}: ignored ({e.strerror or e})")
            continue
        if header.get("store", mine) != mine:
            continue  # another store's run, in the shared fallback directory
        found.append((path, header))
    for path, header in _longest_first(found):
        with claimed(path) as ours:
            if not ours:
                continue  # its host is still measuring
            result = _recover_one(store, path, header)
        done.append(result)
        say(result.message)
    return done


def _longest_first(
    found: list[tuple[Path, dict[str, object]]],
) -> list[tuple[Path, dict[str, object]]]:
    """Journals in their order, but two of one run (a host killed while it
    moved its journal to the fallback folder) longest first: the shorter is
    then a part of a stored run, and only then removed."""
    first: dict[str, int] = {}
    for i, (path, header) in enumerate(found):
        first.setdefault(str(header.get("run") or path), i)

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return 0

    return sorted(found, key=lambda f: (first[str(f[1].get("run") or f[0])], -size(f[0])))


def _recover_one(store: Store, path: Path, header: dict[str, object]) -> Recovered:
    pid = header.get("pid", "?")
    what = f"the journal of an interrupted run (host pid {pid}, started {header.get('started_at')})"
    try:
        run = read_stream(path)
    except (OSError, StreamError) as e:
        return Recovered(path, None, f"found {what} in {path} but cannot read it: {e}")
    if not run.hello and not run.cases:
        return Recovered(path, None, f"found {what}: nothing was measured; {_finish(path)}")
    try:
        stored = store.stored_as(run.uuid)
        if stored is None:
            run.warnings.append(
                RunWarning(
                    "recovered",
                    f"stored from the journal after its host (pid {pid}) ended without storing it",
                )
            )
            store.save(run)
    except AlreadyStored as e:
        stored = e.run_id
    except (StoreError, OverflowError, ValueError, TypeError) as e:
        return Recovered(
            path,
            None,
            f"found {what} in {path} but cannot store it ({e}); it stays there: "
            f"`rtbench recover` tries again, or `rtbench ingest {path}`",
        )
    if stored is not None:
        return Recovered(
            path, None, f"found {what}: it is already stored as run {stored}; {_finish(path)}"
        )
    gone = _finish(path)
    finished = sum(1 for c in run.cases if c.reason not in (END_LOST, ENDED_INSIDE))
    state = "complete" if run.complete else "incomplete"
    return Recovered(
        path,
        run.id,
        f"recovered {what}: stored as run {run.id} ({state}, {len(run.cases)} cases, "
        f"{finished} of them finished); {gone}",
    )


def _finish(path: Path) -> str:
    """Removes a journal that is done with; one that cannot be removed is
    marked done. Says which."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return "removed it"
    except OSError as e:
        why = e.strerror or str(e)
        try:
            mark_done(path)
        except OSError as e2:
            return (
                f"it cannot be removed ({why}) nor marked done ({e2.strerror or e2}): "
                "it is found again, and not stored again"
            )
        return f"it cannot be removed ({why}): marked done, it is not read again"
    return "removed it"
