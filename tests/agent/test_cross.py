"""Agent builds for targets: the aarch64 and armhf agents, cross-compiled
and linked statically, run under user-mode QEMU and write a stream the
host reads into a complete run; builds are cached by source hash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import tools

from rtbench.catalogue import parse_list, posix_cases
from rtbench.machine.build import ARCHES, agent_digest, agent_source, build_dir, ensure_agent
from rtbench.stream import assemble, parse_lines

AARCH64 = ARCHES["aarch64"]
# ELF class (1: 32-bit, 2: 64-bit), e_machine, and what `uname -m` says.
ELF = {"aarch64": (2, 183, "aarch64"), "armhf": (1, 40, "armv7l")}
PT_INTERP = 3


def _qemu(arch: str) -> str:
    emulators = ARCHES[arch].qemu_user
    found = next((q for q in emulators if shutil.which(q)), None)
    if found is None:
        tools.unavailable(
            f"no user-mode QEMU for {arch} ({' or '.join(emulators)}): "
            + tools.install_hint(["qemu-user-static"])
        )
    return found


@pytest.fixture(scope="module", params=["aarch64", "armhf"])
def target(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """(arch, its static agent)."""
    arch: str = request.param
    if shutil.which(ARCHES[arch].compiler) is None:
        tools.unavailable(
            f"no {ARCHES[arch].compiler}: {tools.install_hint(ARCHES[arch].packages.split())}"
        )
    return arch, ensure_agent(arch=arch)


def _program_headers(elf: bytes) -> list[int]:
    """p_type of each program header (little-endian ELF)."""
    wide = elf[4] == 2
    phoff = int.from_bytes(elf[32:40] if wide else elf[28:32], "little")
    size = int.from_bytes(elf[54:56] if wide else elf[42:44], "little")
    count = int.from_bytes(elf[56:58] if wide else elf[44:46], "little")
    return [
        int.from_bytes(elf[phoff + i * size : phoff + i * size + 4], "little") for i in range(count)
    ]


def test_target_agent_is_a_static_binary_of_its_arch(target: tuple[str, Path]) -> None:
    arch, exe = target
    elf = exe.read_bytes()
    cls, machine, _ = ELF[arch]
    assert elf[:4] == b"\x7fELF" and elf[4] == cls
    assert int.from_bytes(elf[18:20], "little") == machine
    # Static: no program interpreter (dynamic loader) to find on the target.
    assert PT_INTERP not in _program_headers(elf)
    assert exe.parent == build_dir("release", arch, static=True)


def test_native_agent_is_dynamic(agent: Path) -> None:
    # The check above can fail: the agent for this machine has an interpreter.
    assert PT_INTERP in _program_headers(agent.read_bytes())


def test_target_agent_lists_the_same_cases_under_qemu(target: tuple[str, Path]) -> None:
    arch, exe = target
    p = subprocess.run(
        [_qemu(arch), str(exe), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    cases = parse_list(p.stdout)
    assert list(cases) == list(posix_cases())
    assert {c.id for c in cases.values() if not c.supported} == {
        c.id for c in posix_cases().values() if not c.supported
    }


def test_target_agent_runs_a_case_and_its_stream_parses(target: tuple[str, Path]) -> None:
    arch, exe = target
    p = subprocess.run(
        [_qemu(arch), str(exe), "CAL-REF:repeats=10"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    parsed = parse_lines(p.stdout.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    assert not parsed.issues, parsed.issues
    assert run.complete, p.stderr.decode(errors="replace")
    assert run.hello["os"]["machine"] == ELF[arch][2]  # uname as the emulated target answers
    assert [c.case for c in run.cases] == ["CAL-REF"]
    t_std = run.cases[0].find("t_std")
    assert t_std is not None and t_std.n == 10
    assert t_std.samples is not None and len(t_std.samples) == 10


def test_an_unchanged_build_is_reused_and_a_source_change_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which(AARCH64.compiler) is None:
        tools.unavailable(f"no {AARCH64.compiler}: {tools.install_hint(AARCH64.packages.split())}")
    # A private copy of the sources and build root: the checkout's stay untouched.
    src = tmp_path / "agent"
    shutil.copytree(agent_source(), src)
    monkeypatch.setenv("RTBENCH_AGENT_SRC", str(src))
    monkeypatch.setenv("RTBENCH_BUILD_DIR", str(tmp_path / "build"))
    # The test build (unoptimised): the stamp's rule is the flavours' same,
    # and it compiles in half the time of the release the fixture builds.
    first = ensure_agent("test", arch="aarch64")
    digest = agent_digest(first)
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path))  # no CMake, no compiler: the stamp decides alone
        assert ensure_agent("test", arch="aarch64") == first
    (src / "core" / "runner.c").write_text(
        (src / "core" / "runner.c").read_text() + '\nconst char rtb_cross_test_marker[] = "x";\n'
    )
    rebuilt = ensure_agent("test", arch="aarch64")
    assert rebuilt == first and agent_digest(rebuilt) != digest


def test_digest_is_the_files_sha256(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"abc")
    assert agent_digest(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_cases_asking_for_small_stacks_create_their_threads(target: tuple[str, Path]) -> None:
    """THR-SW and THR-CTX ask for 64 KiB stacks, below arm64's C-library
    minimum (128 KiB): the port raises the size, the threads exist."""
    arch, exe = target
    p = subprocess.run(
        [_qemu(arch), str(exe), "THR-SW:n=2:duration_ms=30", "THR-CTX:iterations=200"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    parsed = parse_lines(p.stdout.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    assert run.complete, p.stderr.decode(errors="replace")
    for case in run.cases:
        # not `error` ("only 0 of 2 threads could be created"); a scheduler
        # finding under emulation would be `failed`, still measured
        assert case.outcome in ("passed", "failed"), (case.case, case.outcome, case.reason)
        assert all(s.n > 0 for s in case.series), case.case
