"""Values that contradict each other are damage, with the reason; a run
with refused records is incomplete (exit 2) like any other damage; a store
that cannot be written is found before measuring (docs/outcomes.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtbench.cli import main
from rtbench.store import Store
from rtbench.stream import parse_lines
from rtbench.stream.writer import StreamWriter, default_hello


def _stream(refused: bool) -> list[str]:
    w = StreamWriter()
    w.hello(default_hello(["THR-SW"]))
    w.begin("THR-SW")
    w.series("THR-SW", "latency", [1000, 2000, 3000])
    if refused:  # CRC-valid, wrong types: a check whose verdict is a number
        w.record("check", {"case": "THR-SW", "name": "x", "verdict": 7, "detail": ""})
    w.end("THR-SW")
    w.bye()
    return w.lines


def test_a_run_with_refused_records_is_incomplete_and_exits_2(tmp_path: Path, db: Path) -> None:
    for refused, code in ((False, 0), (True, 2)):
        path = tmp_path / f"s{refused}.rtb"
        path.write_text("".join(_stream(refused)))
        r = CliRunner().invoke(main, ["ingest", str(path)])
        assert r.exit_code == code, r.output
        assert ("damaged: check record" in r.output) is refused
    with Store(db) as store:
        assert [store.load(i).complete for i in (1, 2)] == [True, False]


@pytest.mark.parametrize(
    ("kind", "body", "reason"),
    [
        (
            "progress",
            {"case": "JIT-PER", "cpus": [{"cpu": -1, "n": 1, "sum": 5}]},
            "cpus[0]",
        ),
        (
            "summary",
            {"case": "THR-SW", "series": "s", "unit": "ns", "n": 2, "min": 9, "max": 1, "sum": 10},
            "min 9 is above max 1",
        ),
    ],
)
def test_contradicting_values_are_damage_with_the_reason(
    kind: str, body: dict[str, object], reason: str
) -> None:
    w = StreamWriter()
    w.hello(default_hello(["THR-SW"]))
    w.record(kind, body)
    w.bye()
    result = parse_lines(w.lines)
    damaged = [i for i in result.issues if i.kind == "damaged"]
    assert len(damaged) == 1 and reason in damaged[0].detail, result.issues


def test_a_negative_cpu_is_refused_before_anything_runs(db: Path) -> None:
    r = CliRunner().invoke(main, ["run", "--cpu", "-1", "-c", "THR-SW", "--no-store"])
    assert r.exit_code == 2 and "--cpu" in r.output and "-1" in r.output, r.output


def _read_only_mount(path: Path, argv: list[str]) -> list[str]:
    """`argv` run where the file `path` is mounted read-only (a private
    mount namespace: nothing outside the command sees it)."""
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(path), *argv]


def _can_mount_read_only(probe: Path) -> bool:
    probe.write_text("")
    try:
        argv = _read_only_mount(probe, ["sh", "-c", f'! echo x >> "{probe}"'])
        return subprocess.run(argv, capture_output=True, check=False, timeout=60).returncode == 0
    except OSError:
        return False


def test_a_read_only_store_is_found_before_measuring(tmp_path: Path, agent: Path) -> None:
    # The store's file is read-only (its folder is not: SQLite opens it and
    # reads it); the run would measure, then fail to store. It must not start.
    db = tmp_path / "runs.sqlite"
    Store(db).close()
    if not _can_mount_read_only(tmp_path / "probe"):
        pytest.skip("a read-only mount needs unshare -m (CAP_SYS_ADMIN)")
    argv = [sys.executable, "-m", "rtbench.cli", "--db", str(db), "run", "--agent", str(agent)]
    r = subprocess.run(
        _read_only_mount(db, [*argv, "-c", "THR-SW"]),
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "cannot store a run" in r.stderr and "readonly" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert "THR-SW" not in r.stdout  # nothing was measured
