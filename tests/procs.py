"""What runs on this machine, read from /proc, for the tests that check
what a run starts and what it leaves behind. One parser of a stat file: a
command name may hold spaces and parentheses, so the fields are those
after its last ')'."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stat:
    pid: int
    comm: str
    state: str  # R, S, D, Z, T, t, ...
    ppid: int
    rt_priority: int
    policy: int


def stat(path: Path) -> Stat | None:
    """A /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat; None once gone."""
    try:
        text = path.read_text()
    except OSError:
        return None
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    return Stat(pid=int(path.parent.name), comm=head[head.index("(") + 1 :], state=fields[0],
                ppid=int(fields[1]), rt_priority=int(fields[37]),
                policy=int(fields[38]))  # fmt: skip


def processes() -> Iterator[Stat]:
    """Every process now, but those that end while read."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (s := stat(d / "stat")) is not None:
            yield s


def threads(pid: int) -> list[Stat]:
    """The threads of `pid` (none once it has ended)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    return [s for t in tasks if (s := stat(t / "stat")) is not None]


def alive(pids: Iterable[int]) -> bool:
    """One of `pids` runs still (a zombie has ended: only its parent's wait
    is missing)."""
    for pid in pids:
        s = stat(Path(f"/proc/{pid}/stat"))
        if s is not None and s.state != "Z":
            return True
    return False


def children(parent: int) -> list[int]:
    return [s.pid for s in processes() if s.ppid == parent]


def read(pid: int, name: str) -> bytes | None:
    """/proc/<pid>/<name> (cmdline, environ), None once gone or barred."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None


def agents(parent: int | None = None) -> list[int]:
    """Live rtbench agents (of `parent` only, when given: other sessions may
    run agents on the same machine)."""
    found = []
    for s in processes():
        cmd = read(s.pid, "cmdline")
        if (cmd is not None and b"rtbench-agent" in cmd.split(b"\0")[0] and s.state != "Z"
                and (parent is None or s.ppid == parent)):  # fmt: skip
            found.append(s.pid)
    return found
