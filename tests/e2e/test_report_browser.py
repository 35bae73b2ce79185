"""The HTML report in a real browser: Debian's Chromium, headless.

A real short run, labelled with HTML/JS, stored in a temporary store; then
`rtbench report` writes the run report and a comparison of two runs, and
Chromium loads each file: the page renders (title, sections, SVG charts),
logs nothing to the console (no script error; a script that the escaping
let through would either run or be refused by the page's CSP, and both
log), and the label is in the DOM as text. A control page with a failing
script proves that the console capture sees errors at all.

Set RTBENCH_REPORT_SHOTS=DIR to keep the screenshots for a look.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"
# A payload whose effect would be visible in the dumped DOM if it ran.
MUTATING = "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
ESCAPED = "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
RTBENCH = [sys.executable, "-m", "rtbench.cli"]


@dataclass
class Page:
    dom: str
    console: list[str]


def chromium(url: str, *extra: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # as root, and in containers without user namespaces
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *extra,
        url,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def load(path: Path, profile: Path) -> Page:
    """The DOM after loading, and every console message the page caused."""
    proc = chromium(
        path.as_uri(), "--enable-logging=stderr", "--v=0", "--dump-dom", profile=profile
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return Page(proc.stdout, console)


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium): no browser check")
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def reports(agent: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two real short runs in a temporary store, and the reports of them."""
    d = tmp_path_factory.mktemp("reports")
    db = d / "runs.sqlite"
    env = {**os.environ, "RTBENCH_DB": str(db)}

    def rtbench(*args: str) -> None:
        proc = subprocess.run(
            [*RTBENCH, *args], capture_output=True, text=True, env=env, timeout=300, check=False
        )
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]

    quick = ["-c", "CAL-REF", "-c", "SEM-SHF", "--set", "SEM-SHF.duration_ms=50"]
    rtbench(
        "run",
        "--agent",
        str(agent),
        *quick,
        "--label",
        f"note={HOSTILE}",
        "--label",
        f"probe={MUTATING}",
    )
    rtbench("run", "--agent", str(agent), *quick, "--label", "board=second")
    paths = {"run": d / "run.html", "compare": d / "compare.html", "markdown": d / "run.md"}
    rtbench("report", "1", "-o", str(paths["run"]))
    rtbench("report", "1", "2", "-o", str(paths["compare"]))
    rtbench("report", "1", "-o", str(paths["markdown"]))
    yield paths


def test_console_capture_sees_a_script_error(profile: Path, tmp_path: Path) -> None:
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><title>c</title><script>throw new Error("control")</script>')
    page = load(control, profile)
    assert any("control" in line for line in page.console), page.console


def _check_safe(page: Page) -> None:
    assert page.console == [], page.console
    assert ESCAPED in page.dom  # the label, as text
    assert "<script" not in page.dom.lower()  # no script element at all
    assert "<img" not in page.dom.lower()
    assert not re.search(r"<html[^>]*data-pwned", page.dom)


def test_run_report_renders_in_chromium(reports: dict[str, Path], profile: Path) -> None:
    page = load(reports["run"], profile)
    _check_safe(page)
    title = re.search(r"<title>(.*?)</title>", page.dom, re.S)
    assert title and title.group(1).startswith("rtbench report: run 1 (note=&lt;script&gt;")
    for section in ("overview", "case-1", "case-2", "machine"):
        assert f'id="{section}"' in page.dom
    assert "CAL-REF" in page.dom and "SEM-SHF" in page.dom
    # a histogram and a series over time for give_to_run, one histogram for t_std
    assert page.dom.count("<svg") >= 3
    assert "<title>histogram of SEM-SHF give_to_run</title>" in page.dom
    assert "Published, other hardware" in page.dom  # SEM-SHF has published scores


def test_comparison_renders_in_chromium(reports: dict[str, Path], profile: Path) -> None:
    page = load(reports["compare"], profile)
    _check_safe(page)
    assert 'id="comparison"' in page.dom and 'id="histograms"' in page.dom
    assert re.search(r"\d\.\d{3}×", page.dom)  # ratios
    assert "<title>SEM-SHF give_to_run</title>" in page.dom  # overlaid histograms


def test_markdown_report_is_escaped(reports: dict[str, Path]) -> None:
    text = reports["markdown"].read_text(encoding="utf-8")
    assert not re.search(r"(?<!\\)<", text)


@pytest.mark.parametrize("which", ["run", "compare"])
def test_screenshot(which: str, reports: dict[str, Path], profile: Path) -> None:
    shot = reports[which].with_suffix(".png")
    proc = chromium(
        reports[which].as_uri(),
        f"--screenshot={shot}",
        "--window-size=1280,4000",
        "--hide-scrollbars",
        profile=profile,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # not a blank page
    keep = os.environ.get("RTBENCH_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
