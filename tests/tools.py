"""The system tools tests need, by their Debian package
(scripts/system-packages.txt, the list the install script reads too).

`@pytest.mark.tools("qemu-system-x86", "busybox-static")` on a test or a
module: where a package's proof is missing the test skips, naming the
package and the one command that installs it; where tools are required
(CI=true, or RTBENCH_REQUIRE_TOOLS=1 as .ci/run sets) it fails instead,
since a test that skips for want of its tool proves nothing. `firmware()`
does the same for a firmware whose RTOS kernel is neither mirrored nor
fetchable."""

from __future__ import annotations

import functools
import glob
import os
import platform
import shutil
from collections.abc import Generator
from pathlib import Path
from typing import NoReturn

import pytest

from rtbench.machine.build import Flavor, KernelUnavailable, ensure_firmware
from rtbench.targets import kernels

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "system-packages"
LIST = SCRIPT.with_name("system-packages.txt")
REQUIRE_ENV = "RTBENCH_REQUIRE_TOOLS"


def qemu_guest() -> tuple[str, ...]:
    """What booting a Linux guest of this machine's architecture needs."""
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return ("qemu-system-x86" if x86 else "qemu-system-arm", "busybox-static", "cpio")


def required() -> bool:
    """Whether a missing tool fails the tests (CI) rather than skips them."""
    return os.environ.get("CI") == "true" or os.environ.get(REQUIRE_ENV) == "1"


@functools.cache
def packages() -> dict[str, tuple[str, ...]]:
    """Each package's proofs: commands on PATH, or absolute paths (globs)."""
    table: dict[str, tuple[str, ...]] = {}
    for line in LIST.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            table[fields[0]] = tuple(fields[1:])
    return table


def _present(proof: str) -> bool:
    return bool(glob.glob(proof)) if proof.startswith("/") else shutil.which(proof) is not None


def missing(*names: str) -> list[str]:
    """'package (no proof)' for each of `names` that is not installed here."""
    out = []
    for name in names:
        proofs = packages().get(name)
        if proofs is None:
            raise KeyError(f"{name!r} is not in {LIST}: add it there with its proof")
        absent = next((p for p in proofs if not _present(p)), None)
        if absent is not None:
            out.append(f"{name} (no {absent})")
    return out


def _as_root() -> str:
    # A minimal Debian has no sudo: then the command is for root to run.
    return "" if os.geteuid() == 0 else "sudo " if shutil.which("sudo") else "as root: "


def install_hint(names: list[str]) -> str:
    """The command that installs `names` (one test's skip)."""
    return f"{_as_root()}apt-get install --no-install-recommends {' '.join(names)}"


def setup_hint(names: list[str]) -> str:
    """The one command that installs every missing package, and what apt
    needs first: fresh lists, and the arm64 architecture, without which the
    arm64 guests' kernels cannot be fetched (scripts/system-packages)."""
    return (f"{_as_root()}{SCRIPT} (it runs dpkg --add-architecture arm64, apt-get update, "
            f"apt-get install --no-install-recommends {' '.join(names)})")  # fmt: skip


def unavailable(reason: str) -> NoReturn:
    """Skips the test with `reason`, or fails it where tools are required."""
    if required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 or CI=true: required here)", pytrace=False)
    pytest.skip(reason)


def need(*names: str) -> None:
    """Skips (fails in CI) naming the missing ones of `names` and the one
    command that installs them: a test whose packages depend on its
    parameters calls it, the `tools` marker does it for the others."""
    gone = missing(*names)
    if gone:
        pkgs = [g.split(" ", 1)[0] for g in gone]
        unavailable(f"needs {', '.join(gone)}: {install_hint(pkgs)}")


def check(item: pytest.Item) -> None:
    """pytest_runtest_setup's part: every `tools` marker of the item."""
    need(*(n for m in item.iter_markers("tools") for n in m.args))


def guest_kernel(name: str) -> kernels.Kernel:
    """A Debian kernel for a QEMU guest (fetched once into the cache), or a
    skip (a fail in CI) where it cannot be fetched: apt's lists, the network."""
    try:
        return kernels.fetch(name)
    except kernels.KernelError as e:
        unavailable(f"the {name} kernel could not be fetched (`rtbench kernel fetch {name}`): {e}")


def firmware(port: str, board: str, flavor: Flavor = "release") -> Path:
    """The firmware, or a skip (a fail in CI) naming the variable that
    points at a mirror of its RTOS kernel when it could not be fetched."""
    try:
        return ensure_firmware(port, board, flavor)
    except KernelUnavailable as e:
        unavailable(str(e).split("\n", 1)[0])


class SkipSummary:
    """A plugin of the controller: after pytest's per-location list of skips
    (-ra), what was skipped grouped by why, and the one command that installs
    every missing system package (a new user's question: what did I not
    test, and what do I type to test it)."""

    @staticmethod
    def _group(reason: str) -> str:
        if "apt-get install" in reason:
            return "need system packages (named above)"
        if reason.startswith("needs root"):
            return "need root"
        if reason.startswith("needs real-time priority"):
            return "need real-time priority (root, or CAP_SYS_NICE / RLIMIT_RTPRIO)"
        if "RTBENCH_" in reason:  # the variable that names a mirror or a setting
            return "need an RTOS kernel or a setting (named above)"
        return "cannot apply here, or run elsewhere (reasons above)"

    # The outermost wrapper: printed after pytest's own short summary (-ra),
    # the last block before the counts.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter
    ) -> Generator[None, None, None]:
        yield
        self._summary(terminalreporter)

    def _summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        reasons = []
        for report in terminalreporter.stats.get("skipped", []):
            longrepr = getattr(report, "longrepr", None)
            if isinstance(longrepr, tuple) and len(longrepr) == 3:
                reasons.append(str(longrepr[2]).removeprefix("Skipped: "))
        if not reasons:
            return
        groups: dict[str, int] = {}
        for reason in reasons:
            key = self._group(reason)
            groups[key] = groups.get(key, 0) + 1
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", f"{len(reasons)} skipped, by why")
        for key, n in sorted(groups.items(), key=lambda kv: -kv[1]):
            write(f"{n:6d}  {key}")
        pkgs: list[str] = []
        for reason in reasons:
            _, found, rest = reason.partition("apt-get install ")
            if found:
                words = rest.split(")", 1)[0].split()
                pkgs += [w for w in words if w not in pkgs and not w.startswith("-")]
        table = packages()
        pkgs = [p for p in pkgs if p in table]  # a message's trailing words are not packages
        if pkgs:
            write(f"to run the tests that need system packages: {setup_hint(pkgs)}")
