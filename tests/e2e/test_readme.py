"""The README's commands, as a new user types them: every command of its
```sh blocks is either run here (in a scratch folder, against a scratch
store holding the runs the examples name) and must exit as documented, or
is in SKIP with the reason it cannot run in a test; a skipped `rtbench`
command is still parsed by the CLI, so an option the README names exists.
A command added to the README without either fails here."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from helpers import rtbench

from rtbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent

# Leading words of a command -> why it is not run by this test.
SKIP: dict[str, str] = {
    "make run": "the quick suite for a minute: what CI's `make run` does",
    "make test": "the tests themselves",
    "pip install": "installs into this environment: tests/e2e/test_install.py installs a wheel",
    "rtbench run": "measures for a minute or more (the quick suite, sweeps, soaks); the e2e "
    "tests run the same options shorter",
    "rtbench build --arch": "a cross build: tests/agent/test_cross.py",
    "rtbench kernel fetch": "downloads Debian kernels (network): tests/e2e/test_target_qemu.py",
    "rtbench campaign examples": "boots QEMU guests for minutes: tests/e2e/test_campaign.py",
    "rtbench --db postgresql": "a team's PostgreSQL server: tests/e2e/test_store_postgresql.py",
}
# What a command may exit with, where the README says more than 0.
# 1 is a finding about this machine (a missed deadline on a loaded VM, a
# degraded setting): a documented exit, not a broken command.
EXITS = {
    "rtbench doctor": {0, 1},
    "rtbench check": {0, 1},
    "rtbench run": {0, 1},
    "rtbench ingest": {0, 1},  # the ingested run's own outcome
}
CRITERIA = '"run.stars" = { min = 0 }\n'
CYCLICTEST = """{"file_version": 1, "cmdline:": "cyclictest -t 1 -h 100 --json=ct.json",
  "rt_test_version:": "2.40", "start_time": "x", "end_time": "y", "return_code": 0,
  "sysinfo": {"sysname": "Linux", "nodename": "n", "release": "6.6.0-rt15",
              "version": "#1 SMP PREEMPT_RT", "machine": "x86_64", "realtime": 1},
  "num_threads": 1, "resolution_in_ns": 0,
  "thread": {"0": {"histogram": {"9": 99, "12": 1}, "cycles": 100, "min": 9, "max": 12,
                   "avg": 9.03, "cpu": 0, "node": 0}}}
"""
SHORT_RUN = ["run", "-c", "CAL-REF", "--set", "CAL-REF.repeats=10", "-c", "JIT-PER",
             "--set", "JIT-PER.cycles=50", "--set", "JIT-PER.period_us=1000",
             "--set", "JIT-PER.load_threads=0", "--no-samples"]  # fmt: skip


def commands() -> list[list[str]]:
    """Each command of the README's ```sh blocks, split as the shell does
    (comments dropped; a line that is only a comment is none)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.S | re.M)
    out = []
    for block in blocks:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


def skip_reason(words: list[str]) -> str | None:
    line = " ".join(words).removeprefix(".venv/bin/")
    if re.search(r"--target \S*(ssh|serial|qemu|labgrid):", line):
        return "a target machine, board or guest: tests/e2e/test_target_*.py"
    return next((why for lead, why in SKIP.items() if line.startswith(lead)), None)


def parse_only(args: list[str]) -> None:
    """Resolves and parses `rtbench ARGS` as the CLI would, running nothing."""
    ctx = main.make_context("rtbench", list(args))
    cmd: click.Command = main
    while isinstance(cmd, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            return
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None and name is not None, args
        ctx = sub.make_context(name, rest, parent=ctx)
        cmd = sub


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, agent: Path) -> Path:
    """A folder and a store as the README's examples expect them: nine
    labelled runs (`compare 3 7`, `compare 3,4,5 7,8,9`, `trend`), the criteria, a cyclictest
    file, a console log."""
    d = tmp_path_factory.mktemp("readme")
    store = d / "runs.sqlite"
    os.environ["RTBENCH_DB"] = str(store)  # for the seeding; each command gets it too
    try:
        for i in range(9):
            # As a campaign labels them: one board, two kernels (`trend --by kernel`).
            labels = ["--label", "board=rpi4", "--label", f"kernel={('6.1-rt', '6.6')[i % 2]}"]
            r = rtbench(*SHORT_RUN, *labels)
            assert r.returncode in EXITS["rtbench run"], r.stdout + r.stderr
        r = rtbench(*SHORT_RUN, "--no-store", "--save-stream", str(d / "console.log"))
        assert r.returncode in EXITS["rtbench run"], r.stdout + r.stderr
    finally:
        del os.environ["RTBENCH_DB"]
    (d / "ci.toml").write_text(CRITERIA)
    (d / "ct.json").write_text(CYCLICTEST)
    return d


def test_every_command_is_run_or_skipped_with_a_reason() -> None:
    found = commands()
    assert len(found) > 20, found  # the blocks were found
    leads = {" ".join(w).removeprefix(".venv/bin/") for w in found}
    unused = [lead for lead in SKIP if not any(c.startswith(lead) for c in leads)]
    assert not unused, f"SKIP names commands the README no longer has: {unused}"


def test_the_quick_start_is_two_commands() -> None:
    # What a new user types: set up and run, then the tests (make check, the
    # fast part of make test, is named in the prose beside them).
    quick = README.read_text().split("## Quick start", 1)[1]
    block = re.search(r"^```sh\n(.*?)^```", quick, re.S | re.M)
    assert block is not None
    lines = [shlex.split(line, comments=True) for line in block.group(1).splitlines()]
    assert [w for w in lines if w] == [["make", "run"], ["make", "test"]]
    assert "`make check`" in quick.split("\n## ", 1)[0]


def test_after_make_run_the_venv_has_rtbench() -> None:
    if not (ROOT / ".venv").is_dir():
        pytest.skip("no .venv in this checkout: `make run` was not used here")
    assert os.access(ROOT / ".venv" / "bin" / "rtbench", os.X_OK)


@pytest.mark.parametrize("words", commands(), ids=lambda w: " ".join(w)[:60])
def test_readme_command(words: list[str], scratch: Path) -> None:
    why = skip_reason(words)
    exe = words[0].removeprefix(".venv/bin/")
    if why is not None:
        if exe == "rtbench":
            parse_only(words[1:])  # the options the README names exist
        pytest.skip(why)
    assert exe == "rtbench", f"{words}: neither run here nor in SKIP"
    env = {
        **os.environ,
        "RTBENCH_DB": str(scratch / "runs.sqlite"),
        "RTBENCH_TARGETS": str(scratch / "targets.toml"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    path = shutil.which("rtbench", path=env["PATH"])
    assert path is not None, "no rtbench command beside this Python"
    # The examples name files relative to the checkout (examples/...).
    args = [str(ROOT / a) if a.startswith("examples/") else a for a in words[1:]]
    r = subprocess.run(
        [path, *args], capture_output=True, text=True, env=env, cwd=scratch, timeout=300,
        check=False,
    )  # fmt: skip
    lead = " ".join([exe, *words[1:2]])
    assert r.returncode in EXITS.get(lead, {0}), f"{shlex.join(words)}:\n{r.stdout}\n{r.stderr}"
