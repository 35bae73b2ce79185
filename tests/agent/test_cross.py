"""Agent builds for targets: the aarch64 agent, cross-compiled and linked
statically, runs under user-mode QEMU and writes a stream the host reads
into a complete run; builds are cached by source hash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rtbench.build import ARCHES, agent_digest, agent_source, build_dir, ensure_agent
from rtbench.catalogue import parse_list, posix_cases
from rtbench.stream import assemble, parse_lines

AARCH64 = ARCHES["aarch64"]


def _qemu() -> str:
    found = next((q for q in AARCH64.qemu_user if shutil.which(q)), None)
    if found is None:
        pytest.skip(f"no user-mode QEMU for aarch64 ({' or '.join(AARCH64.qemu_user)})")
    return found


@pytest.fixture(scope="module")
def aarch64_agent() -> Path:
    if shutil.which(AARCH64.compiler) is None:
        pytest.skip(f"no {AARCH64.compiler} (Debian: {AARCH64.packages})")
    return ensure_agent(arch="aarch64")


def test_aarch64_agent_is_a_static_aarch64_binary(aarch64_agent: Path) -> None:
    head = aarch64_agent.read_bytes()[:64]
    assert head[:4] == b"\x7fELF" and head[4] == 2  # 64-bit
    assert int.from_bytes(head[18:20], "little") == 183  # e_machine: EM_AARCH64
    # Static: no program interpreter to look for on the target.
    assert b"/lib/ld-linux-aarch64.so" not in aarch64_agent.read_bytes()
    assert aarch64_agent.parent == build_dir("release", "aarch64", static=True)


def test_aarch64_agent_lists_the_same_cases_under_qemu(aarch64_agent: Path) -> None:
    p = subprocess.run(
        [_qemu(), str(aarch64_agent), "--list"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    cases = parse_list(p.stdout)
    assert list(cases) == list(posix_cases())
    assert {c.id for c in cases.values() if not c.supported} == {
        c.id for c in posix_cases().values() if not c.supported
    }


def test_aarch64_agent_runs_a_case_and_its_stream_parses(aarch64_agent: Path) -> None:
    p = subprocess.run(
        [_qemu(), str(aarch64_agent), "CAL-REF:repeats=10"],
        capture_output=True, timeout=300, check=False,
    )
    parsed = parse_lines(p.stdout.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    assert not parsed.issues, parsed.issues
    assert run.complete, p.stderr.decode(errors="replace")
    assert run.hello["os"]["machine"] == "aarch64"  # uname as the emulated target answers it
    assert [c.case for c in run.cases] == ["CAL-REF"]
    t_std = run.cases[0].find("t_std")
    assert t_std is not None and t_std.n == 10
    assert t_std.samples is not None and len(t_std.samples) == 10


def test_an_unchanged_build_is_reused_and_a_source_change_rebuilds(
    aarch64_agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A private copy of the sources and build root: the checkout's stay untouched.
    src = tmp_path / "agent"
    shutil.copytree(agent_source(), src)
    monkeypatch.setenv("RTBENCH_AGENT_SRC", str(src))
    monkeypatch.setenv("RTBENCH_BUILD_DIR", str(tmp_path / "build"))
    first = ensure_agent(arch="aarch64")
    digest, mtime = agent_digest(first), first.stat().st_mtime_ns
    again = ensure_agent(arch="aarch64")
    assert again == first and again.stat().st_mtime_ns == mtime  # not even relinked
    (src / "core" / "main.c").write_text(
        (src / "core" / "main.c").read_text() + "\nconst char rtb_cross_test_marker[] = \"x\";\n"
    )
    rebuilt = ensure_agent(arch="aarch64")
    assert rebuilt == first and agent_digest(rebuilt) != digest


def test_digest_is_the_files_sha256(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"abc")
    assert agent_digest(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
