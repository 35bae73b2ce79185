"""The command table of `rtbench` (commands load with their module when
used) and `rtbench runs` on a store of many runs."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
from stores import StoreAt, simple_run

import rtbench.commands
from rtbench.cli import COMMAND_MODULES, main


def test_the_command_table_names_every_command_of_every_module() -> None:
    registered: dict[str, str] = {}
    for info in pkgutil.iter_modules(rtbench.commands.__path__):
        module = importlib.import_module(f"rtbench.commands.{info.name}")
        if hasattr(module, "register"):
            group = click.Group()
            module.register(group)
            registered |= dict.fromkeys(group.commands, module.__name__)
    assert registered == COMMAND_MODULES


def test_listing_runs_loads_no_report_stack(db: Path) -> None:
    code = (
        "import sys\n"
        "from rtbench.cli import main\n"
        "try:\n"
        "    main(['runs'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "heavy = sorted(m for m in ('matplotlib', 'scipy', 'jinja2') if m in sys.modules)\n"
        "print('heavy:', heavy)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "RTBENCH_DB": str(db)},
    )
    assert r.returncode == 0, r.stderr
    assert "heavy: []" in r.stdout, r.stdout


def test_runs_shows_the_newest(store_at: StoreAt) -> None:
    with store_at.open() as store:
        for i in range(5):
            store.save(simple_run(board=f"b{i % 2}"))
        assert [r.id for r in store.list_runs(newest=2)] == [4, 5]
        assert [r.id for r in store.list_runs({"board": "b0"}, newest=2)] == [3, 5]
        assert store.list_runs(newest=2)[1].labels == {"board": "b0"}
        assert store.count_runs() == 5 and store.count_runs({"board": "b1"}) == 2
    runner = CliRunner()
    r = runner.invoke(main, ["--db", store_at.where, "runs", "--limit", "2"])
    assert r.exit_code == 0, r.output
    assert "│ 5 " in r.stdout and "│ 4 " in r.stdout and "│ 3 " not in r.stdout
    assert "the newest 2 of 5 runs" in r.stderr
    r = runner.invoke(main, ["--db", store_at.where, "runs", "--all"])
    assert all(f"│ {i} " in r.stdout for i in range(1, 6)) and "newest" not in r.stderr
    r = runner.invoke(main, ["--db", store_at.where, "runs", "--label", "board=b9"])
    assert r.exit_code == 0 and "no run matches" in r.stdout
