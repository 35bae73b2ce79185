"""The case table is generated from RTB_CASES in agent/CMakeLists.txt, so a
case is one file and one word there; a file in cases/ that neither list
names would be compiled by nobody, and the configure step says so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

AGENT = Path(__file__).parents[2] / "agent"


def _configure(tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["cmake", "-S", str(tmp / "agent"), "-B", str(tmp / "build")],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_case_file_in_no_list_stops_the_configure(tmp_path: Path) -> None:
    shutil.copytree(AGENT, tmp_path / "agent")
    ok = _configure(tmp_path)  # the control: the tree as it is configures
    assert ok.returncode == 0, ok.stderr
    table = (tmp_path / "build" / "generated" / "rtb_case_table.h").read_text()
    assert "&rtb_case_cal_timer," in table and "&rtb_case_tm_basic," in table

    (tmp_path / "agent" / "cases" / "stray.c").write_text("/* a case nobody listed */\n")
    shutil.rmtree(tmp_path / "build")
    bad = _configure(tmp_path)
    assert bad.returncode != 0
    assert "cases/stray.c is in neither RTB_CASES nor RTB_CASES_SHARED" in bad.stderr
