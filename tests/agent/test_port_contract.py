"""The port contract holds for a 32-bit microcontroller: the core and every
case compile for a Cortex-M3 (arm-none-eabi-gcc, newlib) against a stub
port configuration with the agent's warnings as errors and its stack-frame
limit, without a port's own files. The controls show the compiler really
targets that CPU (no 128-bit integers there) and that the frame limit bites.
test_cross.py builds and runs the whole armhf agent; the FreeRTOS firmware
builds the real port."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import tools

from rtbench.machine.build import agent_source

Runner = Callable[..., Any]  # conftest's run_agent -> AgentResult

CC = "arm-none-eabi-gcc"
# The warnings of agent/CMakeLists.txt (RTB_WARNINGS) and its frame limit.
FLAGS = [
    "-mcpu=cortex-m3", "-mthumb", "-std=gnu11", "-O2",
    "-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes", "-Wformat=2",
    "-Wframe-larger-than=2048",
]  # fmt: skip
# A small board: pointers and objects of a 32-bit RTOS, case memory from an
# arena (no heap needed), a quarter of the histogram buckets.
STUB_CONFIG = """\
#define RTB_THREAD_STORAGE 16
#define RTB_SEM_STORAGE 96
#define RTB_MUTEX_STORAGE 16
#define RTB_QUEUE_STORAGE 96
#define RTB_EVENT_STORAGE 32
#define RTB_CASE_ARENA (64 * 1024)
#define RTB_HIST_BUCKETS 512
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which(CC) is None:
        tools.unavailable(
            f"no {CC}: " + tools.install_hint(["gcc-arm-none-eabi", "libnewlib-arm-none-eabi"])
        )
    d = tmp_path_factory.mktemp("stub-port")
    (d / "rtb_port_config.h").write_text(STUB_CONFIG)
    return d


def _compile(src: Path, stub: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    agent = agent_source()
    args = [CC, *FLAGS, *extra, f"-I{agent / 'include'}", f"-I{agent / 'core'}", f"-I{stub}"]
    return subprocess.run(
        [*args, "-c", str(src), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _portable_sources() -> list[Path]:
    agent = agent_source()
    return sorted([*(agent / "core").glob("*.c"), *(agent / "cases").glob("*.c")])


Compiled = dict[Path, tuple[subprocess.CompletedProcess[str], Path]]


@pytest.fixture(scope="module")
def compiled(stub: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[bool], Compiled]:
    """Every portable source compiled once per flavour (release, test build)
    for the module, on as many CPUs as the tests may use: (the compiler's
    result, the object) by source."""
    done: dict[bool, Compiled] = {}

    def flavour(hooks: bool) -> Compiled:
        if hooks not in done:
            out = tmp_path_factory.mktemp("m3-test-build" if hooks else "m3-release")
            extra = ["-DRTB_TEST_HOOKS=1"] if hooks else []
            sources = _portable_sources()

            def one(src: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
                obj = out / (src.stem + ".o")
                return _compile(src, stub, obj, *extra), obj

            with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
                done[hooks] = dict(zip(sources, pool.map(one, sources), strict=True))
        return done[hooks]

    return flavour


@pytest.mark.parametrize("hooks", [False, True], ids=["release", "test-build"])
def test_core_and_every_case_compile_for_cortex_m3(
    compiled: Callable[[bool], Compiled], hooks: bool
) -> None:
    failed = {src.name: p.stderr[-1500:] for src, (p, _) in compiled(hooks).items() if p.returncode}
    assert not failed, "\n".join(f"== {k}\n{v}" for k, v in failed.items())
    assert len(_portable_sources()) > 30  # core and the case table, not an empty glob


def _wide_atomics(obj: Path) -> list[str]:
    nm = subprocess.run(
        ["arm-none-eabi-nm", "-u", str(obj)], capture_output=True, text=True, check=True
    )
    return [s for s in nm.stdout.split() if s.startswith("__atomic_") and s.endswith("_8")]


def test_the_core_needs_no_64_bit_atomics(
    stub: Path, tmp_path: Path, compiled: Callable[[bool], Compiled]
) -> None:
    # ARMv7-M has no LDREXD: a 64-bit atomic becomes an __atomic_*_8 call
    # that a port would have to supply. The core (runner, watchdog, stream)
    # needs none; cases may (docs/porting.md, rule 12).
    # The control: a 64-bit atomic is seen.
    control = tmp_path / "control.c"
    control.write_text(
        '#include "rtb.h"\nrtb_time get(_Atomic rtb_time *t);\n'
        "rtb_time get(_Atomic rtb_time *t) { return atomic_load(t); }\n"
    )
    assert _compile(control, stub, tmp_path / "control.o", "-DRTB_TEST_HOOKS=1").returncode == 0
    assert _wide_atomics(tmp_path / "control.o") == ["__atomic_load_8"]
    core = agent_source() / "core"
    objects = {src: out for src, out in compiled(True).items() if src.parent == core}
    assert objects and all(p.returncode == 0 for p, _ in objects.values())
    calls = {src.name: w for src, (_, obj) in sorted(objects.items())
             if (w := _wide_atomics(obj))}  # fmt: skip
    assert not calls


def test_the_compiler_is_a_32_bit_target(stub: Path, tmp_path: Path) -> None:
    # The control: what the core must not use does not compile here (__int128
    # was the first thing a 32-bit port tripped over).
    src = tmp_path / "wide.c"
    src.write_text('#include "rtb/port.h"\n__int128 wide(rtb_time t) { return t; }\n')
    p = _compile(src, stub, tmp_path / "wide.o")
    assert p.returncode != 0 and "__int128" in p.stderr


def test_a_large_stack_frame_fails_the_build(stub: Path, tmp_path: Path) -> None:
    src = tmp_path / "frame.c"
    src.write_text(
        '#include "rtb.h"\n'
        "int sum(void);\n"
        "int sum(void)\n{\n    volatile int64_t big[512]; /* 4 KiB */\n"
        "    big[0] = rtb_ts_now();\n    return (int)big[0];\n}\n"
    )
    p = _compile(src, stub, tmp_path / "frame.o")
    assert p.returncode != 0 and "frame size" in p.stderr


# ---- a port without loads ---------------------------------------------------

# The cases that measure under their own load, each asking for load threads.
LOADED = ["THR-PRE:duration_ms=100", "IRQ-RSP:count=100", "JIT-PER:cycles=50"]


@pytest.fixture(scope="module")
def agent_without_loads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The POSIX agent built as a port without loads (core/load_none.c)."""
    out = tmp_path_factory.mktemp("no-loads")
    for cmd in (
        ["cmake", "-S", str(agent_source()), "-B", str(out), "-DRTB_POSIX_LOADS=OFF",
         "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", str(out), "-j2", "--target", "rtbench-agent"],
    ):  # fmt: skip
        subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return out / "rtbench-agent"


def test_a_port_without_loads_says_so_instead_of_measuring(
    agent_without_loads: Path, run_agent: Runner
) -> None:
    r = run_agent(agent_without_loads, LOADED)
    assert r.run.complete and r.run.hello["port_info"]["loads"] is False
    for case in r.run.cases:
        assert case.outcome == "unsupported", (case.case, case.outcome)
        assert "this port has no loads" in case.reason
        assert not case.series  # nothing measured without the load it asked for
    # A run-wide load is refused before anything runs.
    refused = run_agent(agent_without_loads, ["--load", "cpu", "CAL-REF"])
    assert refused.code == 2 and "this port has no loads" in refused.stderr


def test_the_same_cases_run_where_the_port_has_loads(agent: Path, run_agent: Runner) -> None:
    # The control: the same plan on the POSIX port with its loads.
    r = run_agent(agent, LOADED)
    assert r.run.hello["port_info"]["loads"] is True
    assert {c.case: c.outcome for c in r.run.cases}.keys() == {"THR-PRE", "IRQ-RSP", "JIT-PER"}
    assert all(c.outcome != "unsupported" for c in r.run.cases)
