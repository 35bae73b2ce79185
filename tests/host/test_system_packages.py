"""The system packages the tests need: scripts/system-packages names what is
missing and the one command that installs it (fails when required), and a
test marked `tools` skips naming its package, or fails where tools are
required (CI). The missing tools are made missing for real: a PATH without
them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import tools

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "system-packages"
NEEDS_QEMU = """
import pytest

@pytest.mark.tools("qemu-system-x86", "cpio")
def test_needs_qemu() -> None:
    pass

def test_needs_nothing() -> None:
    pass
"""


def bare_path(tmp_path: Path) -> str:
    """A PATH with only what the script itself runs (bash, id): every
    command-proved package is missing there."""
    d = tmp_path / "bin"
    if d.is_dir():
        return str(d)
    d.mkdir()
    for tool in ("bash", "id"):
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=True)
        (d / tool).symlink_to(found.stdout.strip())
    return str(d)


def env(**kw: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", tools.REQUIRE_ENV)}
    return {**base, **kw}


def script(path: str, **kw: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT), "--check"], capture_output=True, text=True,
        env=env(PATH=path, **kw), timeout=60, check=False,
    )  # fmt: skip


def test_the_list_parses_and_every_package_has_a_proof() -> None:
    table = tools.packages()
    assert "qemu-system-x86" in table and "busybox-static" in table
    assert all(proofs for proofs in table.values()), table


def test_missing_packages_are_named_with_the_command_that_installs_them(tmp_path: Path) -> None:
    r = script(bare_path(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "qemu-system-x86 (no qemu-system-x86_64)" in r.stdout
    assert "cmake (no cmake)" in r.stdout
    # No apt-get on that PATH: the packages are named for another manager.
    assert "qemu-system-x86" in r.stdout.splitlines()[-1]


def test_required_missing_packages_fail(tmp_path: Path) -> None:
    for required in ({"CI": "true"}, {tools.REQUIRE_ENV: "1"}):
        r = script(bare_path(tmp_path), **required)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "FAILED" in r.stderr and "qemu-system-x86 (no qemu-system-x86_64)" in r.stderr


def test_the_script_and_the_tests_agree_on_what_is_here() -> None:
    r = script(os.environ["PATH"])
    gone = tools.missing(*tools.packages())
    assert (r.returncode == 0 and "packages: all " in r.stdout) == (not gone), (r.stdout, gone)
    for line in gone:
        assert line in r.stdout


def _pytest(tmp_path: Path, **kw: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_needs.py").write_text(NEEDS_QEMU)
    tests = str(ROOT / "tests")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rsE",
         "-q", str(tmp_path / "test_needs.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        env=env(PATH=bare_path(tmp_path), PYTHONPATH=tests, **kw),
    )  # fmt: skip


def test_a_test_whose_tool_is_missing_skips_naming_it(tmp_path: Path) -> None:
    r = _pytest(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"\b1 passed, 1 skipped", r.stdout), r.stdout
    assert "needs qemu-system-x86 (no qemu-system-x86_64), cpio (no cpio)" in r.stdout
    assert "apt-get install --no-install-recommends qemu-system-x86 cpio" in r.stdout
    # The end of the output: the skips grouped by why, and the one command.
    tail = r.stdout[r.stdout.index("short test summary info") :]
    assert re.search(r"1 skipped, by why =+\n +1  need system packages", tail), tail
    hint = "to run the tests that need system packages: "
    assert f"{hint}{tools.setup_hint(['qemu-system-x86', 'cpio'])}\n" in tail, tail


def test_in_ci_a_test_whose_tool_is_missing_fails(tmp_path: Path) -> None:
    # CI=true here; RTBENCH_REQUIRE_TOOLS=1 is the same switch (tools.required).
    r = _pytest(tmp_path, CI="true")
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"\b1 passed, .*1 error", r.stdout), r.stdout
    assert "needs qemu-system-x86 (no qemu-system-x86_64)" in r.stdout


def test_a_guest_kernel_that_cannot_be_fetched_skips_or_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An empty kernel cache and no apt on PATH: as a machine without apt or network.
    monkeypatch.setenv("RTBENCH_KERNEL_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("PATH", bare_path(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(tools.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="the debian-rt kernel could not be fetched"):
        tools.guest_kernel("debian-rt")
    monkeypatch.setenv(tools.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="required here"):
        tools.guest_kernel("debian-rt")


def test_a_package_needed_to_go_on_fails_whoever_runs_it(tmp_path: Path) -> None:
    # `make setup` calls `--need python3-venv` when Python has no ensurepip
    # (Debian's python3 without python3-venv): it cannot go on without it,
    # so a missing one fails outside CI too, naming the command; the other
    # missing packages are not its business.
    r = subprocess.run(
        ["/bin/bash", str(SCRIPT), "--need", "cmake"], capture_output=True, text=True,
        env=env(PATH=bare_path(tmp_path)), timeout=60, check=False,
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED: needed to go on" in r.stderr and "cmake (no cmake)" in r.stderr
    assert "qemu" not in r.stdout + r.stderr
    r = subprocess.run(
        ["/bin/bash", str(SCRIPT), "--need", "no-such-package"], capture_output=True,
        text=True, env=env(PATH=bare_path(tmp_path)), timeout=60, check=False,
    )  # fmt: skip
    assert r.returncode == 2 and "no-such-package" in r.stderr, r.stdout + r.stderr


def test_without_sudo_the_command_is_for_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A minimal Debian has no sudo: `sudo apt-get install sudo` cannot be run.
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("PATH", bare_path(tmp_path))
    assert tools.install_hint(["sudo"]) == "as root: apt-get install --no-install-recommends sudo"
    (tmp_path / "bin" / "sudo").symlink_to("/bin/true")
    assert tools.install_hint(["cpio"]).startswith("sudo apt-get install ")
    # The script, run as nobody, says the same (where nobody may read it).
    if os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists():
        return
    public = Path(tempfile.mkdtemp(prefix="rtbench-nosudo-", dir="/tmp"))
    try:
        public.chmod(0o755)
        for tool, to in (("bash", "bash"), ("id", "id"), ("apt-get", "true")):
            (public / tool).symlink_to(shutil.which(to) or to)
        r = subprocess.run(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "/bin/bash", str(SCRIPT), "--check"],
            capture_output=True, text=True, env=env(PATH=str(public)), timeout=60, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(public)
    if "Permission denied" in r.stderr:
        return  # the checkout lies where nobody cannot enter
    assert r.returncode == 0, r.stdout + r.stderr
    how = f"to install them, as root: {SCRIPT} (it runs dpkg --add-architecture arm64, "
    assert how in r.stdout, r.stdout
    assert "apt-get install --no-install-recommends " in r.stdout


@pytest.mark.parametrize(
    ("reason", "group"),
    [
        ("needs qemu-system-x86 (no qemu-system-x86_64): sudo apt-get install "
         "--no-install-recommends qemu-system-x86", "need system packages"),
        ("needs root (configfs); running as uid 1000", "need root"),
        ("needs real-time priority: SCHED_FIFO refused", "need real-time priority"),
        ("https://github.com/FreeRTOS/FreeRTOS-Kernel.git V11.3.0 could not be fetched from "
         "upstream and no mirror was found: set RTBENCH_FREERTOS_KERNEL to a copy of that tag",
         "need an RTOS kernel"),
        ("needs a local copy of the ucos2 kernel: set RTBENCH_UCOS2_KERNEL to one",
         "need an RTOS kernel"),
        # What the machine is: nothing to install or to set (a one-CPU run
        # once listed these under the RTOS kernels).
        ("needs two CPUs to measure on both", "cannot apply here"),
        ("needs a kernel with tracefs", "cannot apply here"),
        ("one CPU allowed (1): no narrower mask to choose", "cannot apply here"),
    ],
)  # fmt: skip
def test_the_skip_summary_groups_each_reason_by_what_would_lift_it(reason: str, group: str) -> None:
    assert tools.SkipSummary._group(reason).startswith(group)
