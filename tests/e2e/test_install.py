"""An installed rtbench works from any directory, as a new user gets it.

A fresh virtual environment gets `pip install` of a copy of the repository
offline: no build isolation and no dependency resolution; this project's
environment lends setuptools and the dependencies through one `.pth` line
(whose own `.pth` files Python does not process, so the checkout's editable
rtbench stays out of sight). Then, from another directory, with an empty
home and cache: `rtbench list` needs no agent, and `rtbench run -c CAL-REF`
builds the agent from the sources inside the package into the user's cache
and stores the run.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
# What `pip install` of the repository reads (the rest of the tree is
# tests, docs and build output).
PROJECT = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "agent", "host"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")


def _check(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | str | None = None
) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        cmd, capture_output=True, text=True, check=False, timeout=600, env=env, cwd=cwd
    )
    assert p.returncode == 0, f"{cmd} exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with rtbench installed from a copy of the repository; its bin/."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in PROJECT:
        s = ROOT / name
        if s.is_dir():
            shutil.copytree(s, src / name, ignore=IGNORE)
        else:
            shutil.copy2(s, src / name)
    venv = tmp / "venv"
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    vpy = venv / "bin" / "python"
    purelib = _check([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    site = Path(purelib.stdout.strip())
    (site / "_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _check(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(vpy),
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            str(src),
        ],
    )
    shutil.rmtree(src)  # the installed tool must not lean on the copy
    return venv / "bin"


@pytest.fixture
def user_env(installed: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RTBENCH_", "XDG_"))}
    env.pop("PYTHONPATH", None)
    env.update(
        PATH=f"{installed}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "elsewhere").mkdir()
    return env


def test_installed_package_carries_the_agent_sources(installed: Path) -> None:
    code = "import rtbench.machine.build as b; print(b.__file__); print(b.agent_source())"
    p = _check([str(installed / "python"), "-c", code], cwd="/")
    module, agent = p.stdout.split()
    assert module.startswith(str(installed.parent)), "rtbench imported from outside the venv"
    assert Path(agent) == Path(module).parents[1] / "agent"  # rtbench/agent
    for part in (
        "CMakeLists.txt",
        "cmake/toolchain-aarch64.cmake",
        "core/runner.c",
        "ports/posix/main.c",
        "ports/posix/port.cmake",
        "include/rtb/port.h",
        "ports/posix/port.c",
        "cases/cal_ref.c",
    ):
        assert (Path(agent) / part).is_file(), part


def test_list_needs_no_agent(user_env: dict[str, str], tmp_path: Path) -> None:
    p = _check(["rtbench", "list"], env=user_env, cwd=tmp_path / "elsewhere")
    assert "CAL-REF" in p.stdout and "implemented" in p.stdout
    assert "unsupported" in p.stdout  # THR-LOCK, with its reason from the agent's table
    assert "freertos" in p.stdout  # every port's column, from the shipped tables
    assert not (tmp_path / "cache" / "rtbench").exists(), "list built the agent"


def test_run_builds_into_the_user_cache_and_stores(
    user_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "data" / "rtbench" / "rtbench.sqlite"
    p = subprocess.run(
        ["rtbench", "run", "-c", "CAL-REF", "--set", "CAL-REF.repeats=10"],
        env=user_env,
        cwd=tmp_path / "elsewhere",
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # 0 passed, 1 failed: either is a completed, stored run (a noisy machine is a finding).
    assert p.returncode in (0, 1), f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert (tmp_path / "cache" / "rtbench" / "build" / "release" / "rtbench-agent").is_file()
    assert str(db) in "".join(p.stdout.split()), p.stdout  # says where it stored the run
    with sqlite3.connect(db) as con:
        (count,) = con.execute("SELECT count(*) FROM runs").fetchone()
    assert count == 1
