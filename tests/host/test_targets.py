"""Target specs, the targets file and `rtbench targets`: what each spec
means, and a clear error (never a traceback) for each bad one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtbench.targets import TargetError, load_targets_file, resolve, targets_file
from rtbench.targets.local import LocalTarget, ReplayTarget
from rtbench.targets.serial import SerialTarget
from rtbench.targets.ssh import SshTarget
from rtbench.transports.serial import command_line, record_kind
from rtbench.transports.ssh import WRAPPER, remote_command

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@pytest.fixture
def targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "targets.toml"
    monkeypatch.setenv("RTBENCH_TARGETS", str(path))
    return path


def test_local_is_the_default() -> None:
    for spec in (None, "", "local"):
        t = resolve(spec)
        assert isinstance(t, LocalTarget) and t.is_local and not t.emulated
        assert t.name == "local"


@pytest.mark.parametrize(
    ("spec", "destination", "port"),
    [
        ("ssh://pi@rpi4", "pi@rpi4", None),
        ("ssh://pi@rpi4:2222", "pi@rpi4", 2222),
        ("ssh://MyBoard", "MyBoard", None),  # an alias keeps its case
        ("ssh://root@[fe80::1]:22", "root@fe80::1", 22),
        ("ssh://lab/", "lab", None),
    ],
)
def test_ssh_specs(spec: str, destination: str, port: int | None) -> None:
    t = resolve(spec)
    assert isinstance(t, SshTarget) and not t.is_local
    assert t.endpoint.destination == destination and t.endpoint.port == port
    argv = t.endpoint.ssh("true")
    assert argv[-3:] == ["--", destination, "true"]  # never read as an option
    assert "BatchMode=yes" in argv
    assert ("-p" in argv) == (port is not None)
    assert t.metadata() == {"kind": "ssh", "destination": destination} | (
        {"port": port} if port else {}
    )


def test_ssh_options_from_the_query(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host x\n")
    t = resolve(f"ssh://x?config={cfg}&dir=/opt/rtb&sudo=no&timeout=3")
    assert isinstance(t, SshTarget)
    assert t.endpoint.config == cfg and t.endpoint.timeout == 3
    assert (t.remote_dir, t.sudo) == ("/opt/rtb", "no")
    argv = t.endpoint.ssh("true")
    assert argv[argv.index("-F") + 1] == str(cfg)


def test_serial_specs() -> None:
    t = resolve("serial:///dev/ttyUSB0?baud=921600&cmd=/root/rtbench-agent%20--cpu%3D1")
    assert isinstance(t, SerialTarget)
    assert (t.device, t.baud, t.command) == ("/dev/ttyUSB0", 921600, "/root/rtbench-agent --cpu=1")
    assert t.metadata()["start"] == "command" and t.metadata()["samples"] is False
    fw = resolve("serial:/dev/ttyAMA0")
    assert isinstance(fw, SerialTarget) and fw.device == "/dev/ttyAMA0" and fw.baud == 115200
    assert fw.metadata()["start"] == "firmware"


def test_replay_spec() -> None:
    t = resolve(f"replay:{CORPUS / 'good_small.rtb'}")
    assert isinstance(t, ReplayTarget) and t.check().ok
    assert not resolve("replay:/no/such/file").check().ok


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ftp://host", "unknown target kind 'ftp'"),
        ("ssh://", "write ssh://"),
        ("ssh://host:", "empty port"),
        ("ssh://host:99999", "not a valid target spec"),
        ("ssh://host/path", "write ssh://"),
        ("ssh://host?bogus=1", "ssh targets take config, dir, sudo, timeout; unknown: bogus"),
        ("ssh://host?sudo=maybe", "expected auto, yes or no"),
        ("ssh://host?timeout=soon", "expected a whole number"),
        ("ssh://host?config=/no/such/config", "no such ssh config file"),
        ("serial://", "no device"),
        ("serial:///dev/ttyS0?baud=fast", "baud='fast': expected a whole number"),
        ("serial:///dev/ttyS0?baud=0", "expected a whole number >= 50"),
        ("serial:///dev/ttyS0?samples=perhaps", "expected yes or no"),
        ("serial:///dev/ttyS0?wait=-1", "expected a number of seconds > 0"),
        ("qemu:", "write qemu:NAME"),
        ("no-such-name", "no target named 'no-such-name'"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str, targets: Path) -> None:
    with pytest.raises(TargetError, match=message.replace("?", r"\?").replace("(", r"\(")):
        resolve(spec)


def test_the_targets_file_names_targets_with_options(targets: Path) -> None:
    targets.write_text(
        '[rpi4]\nspec = "ssh://pi@rpi4"\nsudo = "yes"\ndescription = "the lab board"\n\n'
        '[board]\nspec = "serial:///dev/ttyUSB0?baud=9600"\nbaud = 921600\ncmd = "./agent"\n'
        "samples = true\n"
    )
    assert targets_file() == targets
    assert set(load_targets_file()) == {"rpi4", "board"}
    rpi = resolve("rpi4")
    assert isinstance(rpi, SshTarget) and rpi.name == "rpi4" and rpi.sudo == "yes"
    board = resolve("board")
    # The file's options override the spec's query.
    assert isinstance(board, SerialTarget)
    assert (board.baud, board.command, board.samples) == (921600, "./agent", True)


def test_the_default_targets_file_is_in_the_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RTBENCH_TARGETS", raising=False)
    assert targets_file().parts[-2:] == ("rtbench", "targets.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[a\n", "not valid TOML"),
        ("a = 1\n", "'a' must be a table"),
        ("[a]\nport = 22\n", r"\[a\] needs spec"),
        ('[a]\nspec = "b"\n', "must be a spec, not another name"),
        ('[a]\nspec = "ssh://h"\nbaud = 9600\n', r"\[a\]: ssh targets take"),
        ('[a]\nspec = "local"\nbaud = 9600\n', "local targets take no options"),
    ],
)
def test_a_bad_targets_file_says_where(targets: Path, text: str, message: str) -> None:
    targets.write_text(text)
    with pytest.raises(TargetError, match=message) as e:
        resolve("a")
    assert str(targets) in str(e.value)


def test_an_absent_targets_file_is_no_targets(targets: Path) -> None:
    assert load_targets_file() == {}
    with pytest.raises(TargetError, match=r"known: none"):
        resolve("lab")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtbench.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "COLUMNS": "200"},
        timeout=120,
        check=False,
    )


def test_rtbench_targets_lists_and_checks(targets: Path, tmp_path: Path) -> None:
    targets.write_text(
        f'[rec]\nspec = "replay:{CORPUS / "good_small.rtb"}"\n\n'
        f'[gone]\nspec = "serial://{tmp_path}/ttyGONE"\n'
    )
    env = {"RTBENCH_TARGETS": str(targets)}
    r = _cli("targets", env=env)
    assert r.returncode == 2, r.stdout + r.stderr  # one does not answer: rtbench could not reach it
    rows = {line.split("│")[1].strip(): line for line in r.stdout.splitlines() if "│" in line}
    assert set(rows) >= {"local", "rec", "gone"}
    assert "yes" in rows["local"] and "yes" in rows["rec"]
    assert " no " in rows["gone"] and "cannot open" in rows["gone"]
    r = _cli("targets", "local", "rec", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("targets", "--no-check", "gone", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    targets.write_text("[broken\n")
    r = _cli("targets", env=env)
    assert r.returncode == 2 and "not valid TOML" in r.stderr and "Traceback" not in r.stderr


def test_run_refuses_a_bad_target_clearly(targets: Path) -> None:
    env = {"RTBENCH_TARGETS": str(targets)}
    r = _cli("run", "--target", "ftp://x", "-c", "CAL-REF", env=env)
    assert r.returncode == 2 and "unknown target kind 'ftp'" in r.stderr
    assert "Traceback" not in r.stderr
    # (SSH targets and QEMU guests record it themselves; a serial one cannot.)
    r = _cli("run", "--target", "serial:///dev/ttyS0", "--trace", "-c", "CAL-REF", env=env)
    assert r.returncode == 2 and "--trace records this machine's kernel" in r.stderr


def test_serial_command_line_and_exit_marker() -> None:
    line = command_line("/root/agent", ["--no-samples", "THR-SW:n=2", "it's"])
    assert line.startswith("/root/agent --no-samples THR-SW:n=2 'it'\"'\"'s'; echo ")
    assert "rtbench-exit:" not in line  # the shell's echo of the line never matches
    out = subprocess.run(["sh", "-c", "true; " + line.split("; ", 1)[1]], capture_output=True)
    assert out.stdout == b"rtbench-exit:0\n"
    assert command_line("run {args} now", ["A"]).startswith("run A now; ")


def test_record_kind_checks_the_crc() -> None:
    lines = (CORPUS / "good_small.rtb").read_bytes().splitlines()
    assert record_kind(lines[0]) == "hello" and record_kind(lines[-1]) == "bye"
    assert record_kind(b"[ 1.0] noise " + lines[-1]) == "bye"
    assert record_kind(lines[-1].replace(b"bye", b"byf")) is None
    assert record_kind(b"@rtb 1 2") is None and record_kind(b"plain") is None


def test_the_ssh_wrapper_is_posix_shell() -> None:
    # dash -n: syntax only; the wrapper runs under the target's /bin/sh.
    assert subprocess.run(["sh", "-n", "-c", WRAPPER], check=False).returncode == 0
    cmd = remote_command("/home/u/.cache/rtbench/rtbench-agent-x86_64", "/home/u/x", ["A"], True)
    assert cmd.startswith("sudo -n sh -c ")
    assert cmd.endswith("rtbench-run /home/u/.cache/rtbench/rtbench-agent-x86_64 /home/u/x A")
