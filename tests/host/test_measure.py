"""The measuring path's parts on their own: what system a run measured, the
journal and its lock, atomic output files, the stop signals."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from rtbench.io.atomic import AtomicSink, OutputError, atomic_text, write_text
from rtbench.model import Run
from rtbench.run.journal import Journal, candidates, claimed, journal_dir, read_header
from rtbench.run.measure import StopSignals, read_stream
from rtbench.run.session import Interrupted, collect
from rtbench.stream import StreamWriter, default_hello
from rtbench.stream.assemble import END_LOST, ENDED_INSIDE
from rtbench.transports.replay import ReplayTransport

HOST = {
    "kernel_release": "6.18.0-host",
    "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
    "preemption": {"model": "PREEMPT_DYNAMIC", "mode": "none"},
    "cpu_model": "Host CPU",
    "cpu_count": 2,
    "clocksource": {"current": "tsc"},
}


def _hello(release: str, **os_extra: str) -> dict[str, object]:
    return {
        "os": {"sysname": "Linux", "release": release, **os_extra},
        "cpu": {"model": "Guest CPU", "count": 1},
    }


def test_system_is_the_targets_own_view_first() -> None:
    guest = Run(hello=_hello("6.1.0-rt-amd64", preempt="PREEMPT_RT"), machine=HOST)
    s = guest.system
    assert (s.release, s.preempt, s.cpu_model, s.cpu_count) == (
        "6.1.0-rt-amd64",
        "PREEMPT_RT",
        "Guest CPU",
        1,
    )
    # A different kernel than the host's: nothing of the host probe leaks in.
    assert s.preempt_mode == "" and s.clocksource == "" and s.source == "agent"


def test_host_probe_fills_in_for_the_same_system() -> None:
    local = Run(hello=_hello("6.18.0-host"), machine=HOST)
    s = local.system
    assert (s.preempt, s.preempt_mode, s.clocksource) == ("PREEMPT_DYNAMIC", "none", "tsc")
    assert Run(machine=HOST).system.release == "6.18.0-host"  # no hello at all
    assert Run(machine=HOST).system.source == "host probe"
    assert Run().system.release == ""
    odd = Run(hello={"os": "nonsense", "cpu": {"count": True}})  # never a crash
    assert odd.system.cpu_count is None


def _stream(path: Path) -> Path:
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF"]))
    w.begin("CAL-REF")
    w.series("CAL-REF", "t_std", [1000] * 10)
    w.end("CAL-REF")
    path.write_text("".join(w.lines))
    return path


def test_journal_is_locked_while_its_host_lives(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    header = {"labels": {"a": "b"}, "target": "qemu:x", "started_at": "T"}
    journal = Journal.create(store, header, pytest.fail)
    assert journal is not None and journal.path.parent == journal_dir(store)
    for line in _stream(tmp_path / "s.rtb").read_bytes().splitlines():
        journal.write(line, sync=b" end " in line)
    assert candidates(store) == [journal.path]
    with claimed(journal.path) as ours:
        assert not ours  # our own lock: a live host
    run = read_stream(journal.path)
    assert [c.case for c in run.cases] == ["CAL-REF"] and run.log == []
    assert run.labels == {"a": "b"} and run.target == "qemu:x" and run.started_at == "T"
    journal.close()  # as if the host died: the lock goes with it
    with claimed(journal.path) as ours:
        assert ours
    assert read_header(journal.path)["pid"] == os.getpid()


def test_journal_falls_back_and_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"  # the fallback: the user's state directory, private
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    blocked = tmp_path / "file"
    blocked.write_text("")  # the store's directory cannot be made below a file
    said: list[str] = []
    journal = Journal.create(blocked / "runs.sqlite", {}, said.append)
    assert journal is not None and str(journal.path).startswith(str(state))
    assert journal.path.parent.stat().st_mode & 0o777 == 0o700
    assert "the journal is in" in said[0]
    journal.write(b"noise")
    kept = journal.keep()
    assert kept is not None and kept.name.startswith("rtbench-unsaved-") and kept.is_file()
    assert candidates(blocked / "runs.sqlite") == []  # a kept file is not recovered


def test_atomic_writes_leave_nothing_partial(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="does not exist"):
        write_text(tmp_path / "missing" / "x.html", "x")
    target = tmp_path / "x.html"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_text(target) as f:
        f.write("half")
        raise RuntimeError
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.html"]
    sink = AtomicSink(tmp_path / "s.rtb")
    sink.write(b"line\n")
    assert not (tmp_path / "s.rtb").exists()  # only once complete
    sink.commit()
    assert (tmp_path / "s.rtb").read_bytes() == b"line\n" and sink.error is None


def test_stop_signals_interrupt_only_the_reading() -> None:
    said: list[str] = []
    with StopSignals(said.append) as stop:
        os.kill(os.getpid(), signal.SIGTERM)  # outside armed(): only noted
        time.sleep(0)  # let the handler run
        assert stop.received == signal.SIGTERM and stop.exit_code == 143
        os.kill(os.getpid(), signal.SIGINT)  # a second one changes nothing
        time.sleep(0)
        assert stop.received == signal.SIGTERM and len(said) == 2
        with pytest.raises(KeyboardInterrupt), stop.armed():
            pass  # a stop already asked for ends the reading at once
    assert "SIGTERM" in stop.why()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize("fixed", [True, False])
def test_a_signal_while_a_line_is_handled_waits_for_it(tmp_path: Path, fixed: bool) -> None:
    """SIGTERM landing right after the journal took a case's `end`: the run
    still holds that case finished (the journal and the run agree). The
    negative control arms the whole reading, as before the fix, and loses it."""
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF", "SYS-CALL"]))
    for case in ("CAL-REF", "SYS-CALL"):
        w.begin(case)
        w.series(case, "t_std", [1000] * 10)
        w.end(case)
    path = tmp_path / "s.rtb"
    path.write_text("".join(w.lines))
    journaled: list[bytes] = []

    def tee(raw: bytes, rec: object) -> None:
        journaled.append(raw)
        if b" end " in raw and b"CAL-REF" in raw:  # the journal has CAL-REF's end
            os.kill(os.getpid(), signal.SIGTERM)

    with StopSignals() as stop, pytest.raises(Interrupted) as got:
        if fixed:
            collect(ReplayTransport(path), [], tee=tee, armed=stop.armed)
        else:  # the old way: armed around the whole reading
            with stop.armed():
                collect(ReplayTransport(path), [], tee=tee)
    finished = [c.case for c in got.value.run.cases if c.reason not in (ENDED_INSIDE, END_LOST)]
    assert any(b" end " in r and b"CAL-REF" in r for r in journaled)
    assert ("CAL-REF" in finished) == fixed, finished
