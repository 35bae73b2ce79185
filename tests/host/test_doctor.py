"""The doctor's checks on hand-made probe dicts, its rendering, and a real
unprivileged process (root only: the test drops to nobody in a child)."""

from __future__ import annotations

import io
import json
import os
import resource
from typing import Any

import pytest
from rich.console import Console

from rtbench.machine.doctor import (
    CHECKS,
    Finding,
    doctor_exit_code,
    render_findings,
    run_doctor,
)
from rtbench.machine.probe import UNLIMITED, probe_privileges

NOBODY = 65534


def finding(
    name: str, machine: dict[str, Any], privileges: dict[str, Any] | None = None
) -> Finding:
    found = [f for f in run_doctor(machine, privileges or {}) if f.name == name]
    assert len(found) == 1, name
    return found[0]


def test_every_check_reports_once_with_a_detail() -> None:
    findings = run_doctor({}, {})
    assert [f.name for f in findings] == [
        "rt-privilege",
        "rt-throttling",
        "preemption",
        "clocksource",
        "cpu-governor",
        "isolated-cpus",
        "smt",
        "virtualization",
        "load",
        "memlock",
        "tracefs",
        "thp",
        "c-states",
        "irq-affinity",
        "smi",
    ]
    assert all(f.detail for f in findings)
    # The fallback name used when a check crashes must match the check's own.
    for check, f in zip(CHECKS, findings, strict=True):
        assert check.__name__.removeprefix("check_").replace("_", "-") == f.name


def test_junk_metadata_does_not_crash() -> None:
    machine: dict[str, Any] = {
        "cpufreq": {"available": True, "governors": {"x": "performance", "1": 5}},
        "loadavg": ["high"],
        "cpu_count": 2,
        "preemption": 5,
        "clocksource": "tsc",
        "tracefs": {"mounted": True, "readable": True, "event_groups": [1]},
    }
    findings = run_doctor(machine, {"sched_fifo": "maybe"})
    assert len(findings) == len(CHECKS)
    assert {f.status for f in findings} <= {"ok", "degraded", "bad", "info"}


# --- RT privilege -------------------------------------------------------------


def test_rt_privilege_root_ok() -> None:
    f = finding("rt-privilege", {}, {"euid": 0, "sched_fifo": True, "cap_sys_nice": True})
    assert f.status == "ok" and not f.fix


def test_rt_privilege_refused_for_user_is_bad_with_all_fixes() -> None:
    priv = {
        "euid": 1000,
        "user": "alice",
        "sched_fifo": False,
        "sched_fifo_detail": "refused: Operation not permitted",
        "rlimit_rtprio_soft": 0,
        "cap_sys_nice": False,
    }
    f = finding("rt-privilege", {}, priv)
    assert f.status == "bad"
    assert "not_realtime" in f.detail
    assert "root" in f.fix
    assert "setcap cap_sys_nice+ep" in f.fix
    assert "/etc/security/limits.conf" in f.fix and "alice  -  rtprio  99" in f.fix


def test_rt_privilege_refused_for_root_points_at_container() -> None:
    f = finding("rt-privilege", {}, {"euid": 0, "sched_fifo": False, "cap_sys_nice": False})
    assert f.status == "bad" and "SYS_NICE" in f.fix and "rt_runtime_us" in f.fix


def test_rt_privilege_low_rtprio_limit_is_degraded() -> None:
    priv = {"euid": 1000, "sched_fifo": True, "cap_sys_nice": False, "rlimit_rtprio_soft": 50}
    f = finding("rt-privilege", {}, priv)
    assert f.status == "degraded" and "50" in f.detail and "rtprio  99" in f.fix
    priv["rlimit_rtprio_soft"] = UNLIMITED
    assert finding("rt-privilege", {}, priv).status == "ok"


# --- machine checks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("throttling", "status"),
    [
        ({"runtime_us": -1, "period_us": 1000000, "enabled": False}, "ok"),
        ({"runtime_us": 1000000, "period_us": 1000000, "enabled": False}, "ok"),
        ({"runtime_us": 950000, "period_us": 1000000, "enabled": True}, "degraded"),
        (None, "info"),
    ],
)
def test_rt_throttling(throttling: dict[str, Any] | None, status: str) -> None:
    f = finding("rt-throttling", {"rt_throttling": throttling})
    assert f.status == status
    if status == "degraded":
        assert "95%" in f.detail
        assert "echo -1 > /proc/sys/kernel/sched_rt_runtime_us" in f.fix
        assert "starve" in f.fix


@pytest.mark.parametrize(
    ("current", "available", "status", "in_fix"),
    [
        ("tsc", ["tsc", "hpet"], "ok", ""),
        ("arch_sys_counter", ["arch_sys_counter"], "ok", ""),
        ("kvm-clock", ["kvm-clock", "tsc"], "ok", ""),
        ("hpet", ["tsc", "hpet", "acpi_pm"], "degraded", "echo tsc >"),
        ("acpi_pm", ["hpet", "acpi_pm"], "degraded", "tsc=reliable"),
        ("mystery", ["mystery"], "info", ""),
    ],
)
def test_clocksource(current: str, available: list[str], status: str, in_fix: str) -> None:
    f = finding("clocksource", {"clocksource": {"current": current, "available": available}})
    assert f.status == status
    assert in_fix in f.fix
    assert finding("clocksource", {}).status == "info"


def test_cpu_governor() -> None:
    def gov(governors: dict[str, str]) -> Finding:
        freq = {"available": bool(governors), "governors": governors, "driver": None}
        return finding("cpu-governor", {"cpufreq": freq})

    assert gov({"0": "performance", "1": "performance"}).status == "ok"
    mixed = gov({"0": "performance", "1": "powersave", "2": "powersave", "3": "ondemand"})
    assert mixed.status == "degraded"
    assert "powersave on CPUs 1-2" in mixed.detail and "ondemand on CPUs 3" in mixed.detail
    assert "performance" in mixed.fix
    absent = gov({})
    assert absent.status == "info" and "VM" in absent.detail
    assert finding("cpu-governor", {}).status == "info"


@pytest.mark.parametrize(
    ("model", "mode", "status"),
    [
        ("PREEMPT_RT", "full", "ok"),
        ("PREEMPT", "full", "ok"),
        ("PREEMPT_DYNAMIC", "full", "ok"),
        ("PREEMPT_DYNAMIC", "lazy", "ok"),
        ("PREEMPT_DYNAMIC", "voluntary", "degraded"),
        ("PREEMPT_DYNAMIC", "none", "degraded"),
        ("PREEMPT_DYNAMIC", None, "info"),
        ("PREEMPT_VOLUNTARY", "voluntary", "degraded"),
        ("PREEMPT_NONE", "none", "degraded"),
        ("NONE_OR_VOLUNTARY", None, "degraded"),
    ],
)
def test_preemption(model: str, mode: str | None, status: str) -> None:
    pre = {"model": model, "mode": mode, "mode_source": None, "modes": None, "realtime": False}
    f = finding("preemption", {"preemption": pre})
    assert f.status == status
    if model == "PREEMPT_DYNAMIC" and status != "ok":
        assert "preempt=full" in f.fix and "/sys/kernel/debug/sched/preempt" in f.fix
    if status == "degraded":
        assert "PREEMPT_RT" in f.fix


def test_isolated_cpus() -> None:
    ok = finding("isolated-cpus", {"cpus_isolated": [2, 3], "cpus_nohz_full": [2, 3]})
    assert ok.status == "ok" and "2-3" in ok.detail
    none = finding("isolated-cpus", {"cpus_isolated": [], "cpu_count": 8})
    assert none.status == "info"
    assert "isolcpus=4-7" in none.fix and "nohz_full=4-7" in none.fix
    assert finding("isolated-cpus", {}).status == "info"


def test_tracefs() -> None:
    mounted = {
        "mounted": True,
        "path": "/sys/kernel/tracing",
        "readable": True,
        "tracers": ["nop"],
        "event_groups": {"irq": True, "sched": True, "timer": True, "irq_vectors": False},
    }
    f = finding("tracefs", {"tracefs": mounted})
    assert f.status == "ok" and "missing: irq_vectors" in f.detail
    absent = {**mounted, "mounted": False, "path": None, "readable": False}
    f = finding("tracefs", {"tracefs": absent})
    assert f.status == "info" and f.fix.endswith("mount -t tracefs nodev /sys/kernel/tracing")
    assert finding("tracefs", {"tracefs": {**mounted, "readable": False}}).status == "info"


def test_memlock() -> None:
    assert finding("memlock", {}, {"euid": 0, "rlimit_memlock_soft": 8 << 20}).status == "ok"
    user = {"euid": 1000, "user": "bob", "cap_ipc_lock": False}
    assert finding("memlock", {}, {**user, "rlimit_memlock_soft": UNLIMITED}).status == "ok"
    low = finding("memlock", {}, {**user, "rlimit_memlock_soft": 8 << 20})
    assert low.status == "degraded" and "8192 KiB" in low.detail
    assert "bob  -  memlock  unlimited" in low.fix
    assert finding("memlock", {}, {}).status == "info"


def test_virtualization_smt_load_thp() -> None:
    assert finding("virtualization", {"hypervisor": True}).status == "degraded"
    assert finding("virtualization", {"hypervisor": False}).status == "ok"
    assert finding("virtualization", {"hypervisor": None}).status == "info"

    smt_on = finding("smt", {"smt": {"active": True, "control": "on"}})
    assert smt_on.status == "info" and "smt/control" in smt_on.fix
    assert finding("smt", {"smt": {"active": False, "control": "off"}}).status == "ok"

    assert finding("load", {"loadavg": [3.5, 1.0, 1.0], "cpu_count": 2}).status == "degraded"
    assert finding("load", {"loadavg": [0.2, 0.1, 0.1], "cpu_count": 2}).status == "ok"
    assert finding("load", {"loadavg": [3.5, 1.0, 1.0], "cpus_online": list(range(16))}).status == (
        "ok"
    )
    assert finding("load", {"loadavg": [3.5, 1.0, 1.0]}).status == "info"

    assert finding("thp", {"thp": "always"}).status == "info"
    assert finding("thp", {"thp": "madvise"}).status == "ok"


# --- exit code and rendering ---------------------------------------------------


def test_exit_code() -> None:
    assert doctor_exit_code([]) == 0
    assert doctor_exit_code([Finding("a", "ok", "x"), Finding("b", "degraded", "y", "z")]) == 0
    assert doctor_exit_code([Finding("a", "info", "x"), Finding("b", "bad", "y", "z")]) == 1


def test_render_plain_text_keeps_brackets_and_fixes() -> None:
    findings = [
        Finding("thp", "ok", "transparent huge pages: always [madvise] never"),
        Finding("rt-privilege", "bad", "cannot use SCHED_FIFO", "sudo setcap cap_sys_nice+ep x"),
    ]
    out = io.StringIO()
    render_findings(findings, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert "[madvise]" in text  # not swallowed as rich markup
    assert "fix: sudo setcap cap_sys_nice+ep x" in text
    assert "1 ok, 0 degraded, 1 bad, 0 info" in text
    lines = text.splitlines()
    assert lines[0].startswith("ok") and lines[1].startswith("bad")


def test_render_colours_by_status() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system="standard")
    render_findings([Finding("x", "bad", "broken", "fix it")], console)
    assert "\x1b[1;31mbad" in out.getvalue()


# --- a real unprivileged process -----------------------------------------------


@pytest.mark.root("forking a child that drops to nobody with RLIMIT_RTPRIO 0")
def test_unprivileged_process_cannot_use_sched_fifo() -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        status = 1
        try:
            os.close(read_fd)
            resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            payload = json.dumps(probe_privileges()).encode()
            with os.fdopen(write_fd, "wb") as w:
                w.write(payload)
            status = 0
        except BaseException as exc:  # report, don't let the exception escape the child
            with open(write_fd, "wb", closefd=False) as w:
                w.write(json.dumps({"child_error": repr(exc)}).encode())
        finally:
            os._exit(status)

    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as r:
        data = r.read()
    _, wait_status = os.waitpid(pid, 0)
    priv = json.loads(data)
    assert "child_error" not in priv, priv["child_error"]
    assert os.waitstatus_to_exitcode(wait_status) == 0

    assert priv["euid"] == NOBODY
    assert priv["sched_fifo"] is False
    assert priv["sched_fifo_detail"]
    assert priv["rlimit_rtprio_soft"] == 0 and priv["rlimit_rtprio_hard"] == 0
    assert priv["cap_sys_nice"] is False

    f = finding("rt-privilege", {}, priv)
    assert f.status == "bad"
    assert "not_realtime" in f.detail
    assert "setcap cap_sys_nice+ep" in f.fix and "limits.conf" in f.fix
    assert doctor_exit_code(run_doctor({}, priv)) == 1
