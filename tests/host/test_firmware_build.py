"""How `rtbench build --port freertos` finds FreeRTOS-Kernel and says what
is wrong, without building anything; the ports' and boards' manifests the
host reads instead of per-port code; and the board target's options and
QEMU command line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import cast

import pytest

from rtbench import ports
from rtbench.machine.build import BuildError, KernelUnavailable, agent_source, ensure_firmware
from rtbench.run.request import AgentRequest
from rtbench.targets import TargetError, resolve
from rtbench.targets.qemu_board import BoardTarget, board_specs
from rtbench.transports.board import semihosting_args

ENV_FREERTOS = "RTBENCH_FREERTOS_KERNEL"


def freertos_kernel_source(agent: Path) -> Path | None:
    (source,) = ports.port(agent_source(), "freertos").sources
    return ports.local_source(source, agent)


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
    with pytest.raises(ports.ManifestError, match="no FREERTOS_KERNEL sources"):
        freertos_kernel_source(agent)
    (mine / "tasks.c").write_text("")
    assert freertos_kernel_source(agent) == mine


@pytest.mark.tools("cmake", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")
def test_without_internet_or_mirror_the_error_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout with no mirror above it, and git sent to a folder that does
    # not exist instead of upstream: the fetch fails as it does offline.
    src = tmp_path / "agent"
    shutil.copytree(agent_source(), src)
    monkeypatch.setenv("RTBENCH_AGENT_SRC", str(src))
    monkeypatch.setenv("RTBENCH_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.delenv(ENV_FREERTOS, raising=False)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "file://{tmp_path}/offline/"]\n\tinsteadOf = https://\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    with pytest.raises(KernelUnavailable) as e:
        ensure_firmware("freertos", "mps2-an385")
    first = str(e.value).splitlines()[0]
    assert f"set {ENV_FREERTOS} to a copy of that tag" in first
    assert "shared/vendor/FreeRTOS-Kernel-V11.3.0" in first


def test_an_unknown_board_is_refused() -> None:
    with pytest.raises(BuildError, match="--port freertos --board mps2-an385"):
        ensure_firmware("freertos", "stm32f4-disco")


def test_board_target_options() -> None:
    t = resolve("qemu:freertos-mps2-an385?time=host&flavor=test&max_samples=500")
    assert isinstance(t, BoardTarget)
    assert (t.settings.time, t.settings.flavor, t.settings.max_samples) == ("host", "test", 500)
    assert t.settings.clock_args() == []
    assert cast(BoardTarget, resolve("qemu:freertos-mps2-an385")).settings.clock_args() == [
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
    # A board's RAM caps the samples of every request (AgentRequest.within).
    capped = AgentRequest(max_samples=1_000_000, extra=["X"]).within(2000)
    assert capped.argv() == ["--max-samples=2000", "X"]
    fits = AgentRequest(max_samples=10, extra=["X"]).within(2000)
    assert fits.argv() == ["--max-samples=10", "X"]
    assert AgentRequest(extra=["X"]).within(2000).argv() == ["--max-samples=2000", "X"]


def test_every_port_is_its_folder_and_the_host_reads_its_manifest() -> None:
    src = agent_source()
    known = ports.ports(src)
    assert {"posix", "freertos"} <= set(known)
    assert not known["posix"].firmware and known["freertos"].firmware
    for p in known.values():
        # What the host fetches is what CMake fetches: the same URL and tag.
        cmake = (src / "ports" / p.name / "port.cmake").read_text()
        for s in p.sources:
            assert re.search(rf"GIT_REPOSITORY\s+{re.escape(s.url)}", cmake), (p.name, s.url)
            assert re.search(rf"GIT_TAG\s+{re.escape(s.tag)}\b", cmake), (p.name, s.tag)
            assert s.commit in cmake
    # qemu:<port>-<board> for every board an RTOS port lists, nothing else.
    specs = board_specs()
    assert set(specs) == {f"{p.name}-{b}" for p in known.values() for b in p.boards}
    assert specs["freertos-mps2-an385"].board.qemu_machine == "mps2-an385"


def test_a_bad_manifest_is_refused_with_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "ports" / "mine"
    folder.mkdir(parents=True)
    (folder / "port.toml").write_text('name = "other"\nos = "X"\n')
    with pytest.raises(ports.ManifestError, match="not its folder"):
        ports.read_port(folder / "port.toml")
    (folder / "port.toml").write_text('name = "mine"\nos = "X"\nboards = "b"\n')
    with pytest.raises(ports.ManifestError, match="list of board names"):
        ports.read_port(folder / "port.toml")
    (folder / "port.toml").write_text("name = [")
    with pytest.raises(ports.ManifestError, match=r"port\.toml"):
        ports.read_port(folder / "port.toml")


def test_the_kernel_digest_is_its_content_not_its_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "sub").mkdir(parents=True)
        (d / "tasks.c").write_text("int x;\n")
        (d / "sub" / "port.c").write_text("int y;\n")
    assert ports.tree_digest(a) == ports.tree_digest(b)
    (b / "sub" / "port.c").write_text("int y; /* patched */\n")
    assert ports.tree_digest(a) != ports.tree_digest(b)


def test_the_three_kernel_campaign_names_every_rtos_port_on_one_board() -> None:
    from rtbench.experiments.campaign import load_campaign

    c = load_campaign(Path(__file__).resolve().parents[2] / "examples" / "rtos-mps2.toml")
    targets = [resolve(t.spec) for t in c.targets]
    assert all(isinstance(t, BoardTarget) for t in targets)
    specs = [t.spec for t in targets if isinstance(t, BoardTarget)]
    assert {s.port.name for s in specs} == {"freertos", "ucos3", "ucos2"}
    assert {s.board.name for s in specs} == {"mps2-an385"}
    # Every RTOS port of the checkout is in the study.
    assert {s.port.name for s in specs} == {
        p.name for p in ports.ports(agent_source()).values() if p.firmware
    }
