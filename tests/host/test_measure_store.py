"""Issue 23: one measure-and-store (`rtbench.run.measure_store`) for run, ab
and campaign, and one rule from outcome to exit status (`rtbench.outcomes`,
docs/outcomes.md): what happened to a run decides its exit status the
same way whichever command measured it."""

from __future__ import annotations

import re
from pathlib import Path

from rtbench.outcomes import EXIT, exit_code, outcome_of_exit
from rtbench.run.measure import Plan
from rtbench.run.measure_store import measure_and_store
from rtbench.store import locate
from rtbench.transports import ReplayTransport

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"


def test_the_exit_rule_is_the_documented_one() -> None:
    """docs/outcomes.md's table is the rule the code follows."""
    doc = (ROOT / "docs" / "outcomes.md").read_text()
    table = doc[doc.index("## Exit status") :]
    for outcome in ("passed", "failed", "error"):
        row = next(line for line in table.splitlines() if re.match(rf"\| \d+ \| {outcome}", line))
        assert int(row.split("|")[1]) == exit_code(outcome), row
    assert exit_code("skipped") == 0 and exit_code("something new") == 2
    assert {outcome_of_exit(EXIT[o]) for o in ("passed", "failed", "error")} == {
        "passed", "failed", "error",
    }  # fmt: skip
    assert outcome_of_exit(130) == "error"


def test_a_run_measured_and_stored_keeps_its_outcome(tmp_path: Path) -> None:
    plan = Plan([], store_path=locate(tmp_path / "runs.sqlite"))
    taken = measure_and_store(ReplayTransport(CORPUS / "good_small.rtb"), plan)
    assert taken.measured is not None and taken.saved is not None
    assert taken.saved.run_id == 1 and taken.problem is None
    assert taken.outcome == taken.measured.run.outcome
    assert taken.code == exit_code(taken.measured.run.outcome)


def test_a_run_that_cannot_be_stored_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")  # the store's folder is a file: even root cannot
    plan = Plan([], store_path=locate(tmp_path / "file" / "runs.sqlite"))
    taken = measure_and_store(ReplayTransport(CORPUS / "good_small.rtb"), plan)
    assert taken.measured is not None and taken.saved is not None
    assert taken.saved.error is not None and taken.saved.run_id is None
    assert taken.outcome == "error" and taken.code == 2
    assert taken.problem is not None and "could not be stored" in taken.problem


def test_nothing_measured_is_an_error_that_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-stream.rtb"
    taken = measure_and_store(ReplayTransport(missing), Plan([]), store=False)
    assert taken.measured is None and taken.outcome == "error" and taken.code == 2
    assert taken.problem is not None and taken.problem.startswith("could not measure: ")
