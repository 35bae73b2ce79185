"""labgrid targets without a lab: specs, options, the environment's role,
the missing-package message, and which campaign cells run in lanes. The
real coordinator, exporter and places are in tests/e2e/test_target_labgrid.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rtbench.experiments.campaign import parse_campaign
from rtbench.experiments.campaign_run import lane_cells, parallel
from rtbench.targets import TargetError, resolve
from rtbench.targets.labgrid import LabgridTarget, _role_for


def test_spec_and_options() -> None:
    t = resolve("labgrid:rpi4-a?coordinator=lab:20408&dir=/data/rtb&emulated=yes")
    assert isinstance(t, LabgridTarget)
    assert t.kind == "labgrid" and t.emulated is True and t.is_local is False
    meta = t.metadata()
    assert meta["place"] == "rpi4-a" and meta["coordinator"] == "lab:20408"
    assert t.dir == "/data/rtb"
    # Not emulated unless said: a place is a board.
    assert resolve("labgrid:b?coordinator=lab:1").emulated is False


def test_coordinator_from_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LG_COORDINATOR", "from-env:20408")
    monkeypatch.delenv("LG_ENV", raising=False)
    assert resolve("labgrid:p").metadata()["coordinator"] == "from-env:20408"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("labgrid:", "write labgrid:PLACE"),
        ("labgrid:a/b", "write labgrid:PLACE"),
        ("labgrid:p?bogus=1", "unknown: bogus"),
        ("labgrid:p?wait=soon", "expected a number"),
        ("labgrid:p?env=/no/such.yaml", "no such labgrid environment"),
    ],
)
def test_bad_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        resolve(spec)


def test_missing_labgrid_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "labgrid", None)  # import labgrid fails
    with pytest.raises(TargetError, match=r"rtbench\[lab\]"):
        resolve("labgrid:p")


def test_the_environments_target_for_a_place(tmp_path: Path) -> None:
    targets = {
        "main": {"resources": {"RemotePlace": {"name": "rpi4-a"}}, "drivers": {}},
        "other": {"resources": [{"RemotePlace": {"name": "rpi4-b"}}]},
        "rpi4-c": {"drivers": {}},
    }
    assert _role_for(targets, "rpi4-a") == "main"
    assert _role_for(targets, "rpi4-b") == "other"
    assert _role_for(targets, "rpi4-c") == "rpi4-c"  # named like the place
    assert _role_for(targets, "nope") is None
    env = tmp_path / "env.yaml"
    env.write_text("targets:\n  main:\n    resources:\n      RemotePlace:\n        name: x\n")
    t = resolve(f"labgrid:y?env={env}&coordinator=c:1")
    assert isinstance(t, LabgridTarget)
    with pytest.raises(TargetError, match="no target for place y"):
        t._drivers()


def test_only_places_run_in_lanes_in_campaign_order() -> None:
    c = parse_campaign(
        {
            "campaign": {"cases": ["CAL-REF"], "repetitions": 2},
            "target": [
                {"name": "a", "spec": "labgrid:a", "coordinator": "c:1"},
                {"name": "here", "spec": "local"},
                {"name": "b", "spec": "labgrid:b", "coordinator": "c:1"},
            ],
        },
        "x",
    )
    targets = {t.name: resolve(t.spec, dict(t.options), label=t.name) for t in c.targets}
    assert [n for n, t in targets.items() if parallel(t)] == ["a", "b"]
    assert [cell.key for cell in lane_cells(c.cells(), "a")] == ["a/none/1", "a/none/2"]
