"""The command line's one error boundary (rtbench.errors, docs/outcomes.md):
an internal error exits 2 and names its saved traceback, never exit 1; a
domain error exits 2 with its message; Ctrl-C anywhere exits 130 without a
traceback; a missing optional extra says what to install."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

import rtbench.machine.doctor
from rtbench.cli import main
from rtbench.store import StoreError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"


def _doctor_raising(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(rtbench.machine.doctor, "run_doctor", boom)


def test_an_internal_error_exits_2_and_names_its_saved_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    _doctor_raising(monkeypatch, ZeroDivisionError("a bug"))
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 2, r.output
    assert "internal error" in r.output and "Traceback" not in r.output
    saved = [p for p in (tmp_path / "state").rglob("crash-*.txt")]
    assert len(saved) == 1 and str(saved[0]) in r.output.replace("\n", "")
    text = saved[0].read_text()
    assert "Traceback" in text and "ZeroDivisionError: a bug" in text and "boom" in text


def test_a_domain_error_exits_2_with_its_message_and_saves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    _doctor_raising(monkeypatch, StoreError("the store went away"))
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 2 and "rtbench: the store went away" in r.output
    assert "internal error" not in r.output and not (tmp_path / "state").exists()


def test_ctrl_c_inside_a_command_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _doctor_raising(monkeypatch, KeyboardInterrupt())
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 130
    assert "Aborted" not in r.output and "Traceback" not in r.output


def _entry(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The `rtbench` executable's entry point, after `code` ran."""
    return subprocess.run(
        [sys.executable, "-c", f"{code}\nfrom rtbench.__main__ import main\nmain()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_ctrl_c_during_start_up_exits_130_without_a_traceback() -> None:
    # The Ctrl-C lands while the command line's libraries load (as a
    # person pressing it at once does), deterministically: at rich's import.
    hook = (
        "import sys\n"
        "class Finder:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'rich':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Finder())\n"
    )
    r = _entry(hook, "runs")
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "KeyboardInterrupt" not in r.stderr


def _extra_modules(extra: str) -> list[str]:
    """Every importable top-level module of every distribution the extra
    declares, as installed here."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [
        req.split(">")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")
        for req in doc["project"]["optional-dependencies"][extra]
    ]
    owners = importlib.metadata.packages_distributions()
    modules = sorted(
        m for m, dists in owners.items() if any(d.lower().replace("_", "-") in names for d in dists)
    )
    assert len(modules) >= len(names), (names, modules)
    return modules


def test_a_labgrid_target_without_the_lab_extra_says_what_to_install(tmp_path: Path) -> None:
    modules = _extra_modules("lab")
    assert {"labgrid", "yaml"} <= set(modules)
    hide = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    args = ("run", "--target", "labgrid:rpi4-a", "--no-store", "-c", "THR-SW")
    r = _entry(hide, *args, env={"RTBENCH_DB": str(tmp_path / "db")})
    assert r.returncode == 2, r.stderr
    assert "rtbench[lab]" in r.stderr and "Traceback" not in r.stderr


def test_ingest_interrupted_stores_nothing_unless_asked(tmp_path: Path) -> None:
    lines = (CORPUS / "good_small.rtb").read_bytes().splitlines(keepends=True)
    for keep in (False, True):
        fifo = tmp_path / f"stream-{keep}"
        os.mkfifo(fifo)
        db = tmp_path / f"runs-{keep}.sqlite"
        args = ["ingest", str(fifo), *(["--keep-partial"] if keep else [])]
        # Started with SIGINT ignored, as `cmd &` in a shell without job
        # control (a harness in the background) starts it: the Ctrl-C below
        # must still stop it (it once hung here, the writer being open).
        proc = subprocess.Popen(
            [sys.executable, "-m", "rtbench.cli", "--db", str(db), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        # Opening the FIFO returns once ingest is reading it: the Ctrl-C
        # then lands in the middle of the stream (its bye never comes).
        with fifo.open("wb") as w:
            w.writelines(lines[:4])
            # Text after the records, more than a pipe holds: when the write
            # returns, ingest has read past the records. Then the Ctrl-C.
            w.write(b"console noise\n" * 20_000)
            w.flush()
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr
        with sqlite3.connect(db) as c:
            stored = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        assert stored == (1 if keep else 0), stderr
