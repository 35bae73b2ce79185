"""How `rtbench build --port freertos` finds FreeRTOS-Kernel and says what
is wrong, without building anything; and the board target's options and
QEMU command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtbench.build import ENV_FREERTOS, BuildError, ensure_firmware, freertos_kernel_source
from rtbench.targets import TargetError, resolve
from rtbench.targets.qemu_board import BoardTarget, cap_samples, semihosting_args


def _checkout(root: Path, vendor: bool) -> Path:
    agent = root / "work" / "rtbench" / "agent"
    agent.mkdir(parents=True)
    (agent / "CMakeLists.txt").write_text("")
    if vendor:
        kernel = root / "work" / "shared" / "vendor" / "FreeRTOS-Kernel-V11.3.0"
        kernel.mkdir(parents=True)
        (kernel / "tasks.c").write_text("")
    return agent


def test_the_vendor_copy_above_the_checkout_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_FREERTOS, raising=False)
    agent = _checkout(tmp_path, vendor=True)
    found = freertos_kernel_source(agent)
    assert found == tmp_path / "work" / "shared" / "vendor" / "FreeRTOS-Kernel-V11.3.0"


def test_without_a_copy_cmake_fetches_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_FREERTOS, raising=False)
    assert freertos_kernel_source(_checkout(tmp_path, vendor=False)) is None


def test_the_env_var_wins_and_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _checkout(tmp_path, vendor=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.setenv(ENV_FREERTOS, str(mine))
    with pytest.raises(BuildError, match="no FreeRTOS-Kernel sources"):
        freertos_kernel_source(agent)
    (mine / "tasks.c").write_text("")
    assert freertos_kernel_source(agent) == mine


def test_an_unknown_board_is_refused() -> None:
    with pytest.raises(BuildError, match="--port freertos --board mps2-an385"):
        ensure_firmware("freertos", "stm32f4-disco")


def test_board_target_options() -> None:
    t = resolve("qemu:freertos-mps2-an385?time=host&flavor=test&max_samples=500")
    assert isinstance(t, BoardTarget)
    assert (t.settings.time, t.settings.flavor, t.settings.max_samples) == ("host", "test", 500)
    assert t.settings.clock_args() == []
    assert resolve("qemu:freertos-mps2-an385").settings.clock_args() == [  # type: ignore[attr-defined]
        "-icount", "shift=5,sleep=off"
    ]  # fmt: skip
    for bad in ("time=wall", "shift=99", "flavor=debug", "smp=2"):
        with pytest.raises(TargetError):
            resolve(f"qemu:freertos-mps2-an385?{bad}")


def test_arguments_reach_the_firmware_intact() -> None:
    # QEMU's option syntax: a comma inside a value is doubled.
    assert semihosting_args(["THR-SW:n=2,5"]) == (
        "enable=on,target=native,arg=rtbench-agent,arg=THR-SW:n=2,,5"
    )
    assert cap_samples(["--max-samples=1000000", "X"], 2000) == ["--max-samples=2000", "X"]
    assert cap_samples(["--max-samples", "10", "X"], 2000) == ["--max-samples=10", "X"]
    assert cap_samples(["X"], 2000) == ["--max-samples=2000", "X"]
