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

import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import tools

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
        tools.unavailable(f"chromium is not installed: {tools.install_hint(['chromium'])}")
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def reports(
    agent: Path, test_agent: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Path]]:
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
    # a 3 ms busy-wait injected into every SEM-SHF give (the test build),
    # its stream saved as a board's console would be
    spike = subprocess.run(
        [str(test_agent), "--inject", "give_delay=3000000", "CAL-REF:repeats=20",
         "SEM-SHF:duration_ms=150"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    (d / "spike.rtb").write_bytes(spike.stdout)
    # JIT-PER's self-test blocker holds three releases for 3 ms on a 1 ms
    # period: every behaviour check holds, the deadlines do not.
    late = subprocess.run(
        [str(agent), "JIT-PER:period_us=1000:cycles=300:blocker_us=3000:blocker_count=3"
         ":load_threads=0"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    (d / "late.rtb").write_bytes(late.stdout)
    paths = {
        "run": d / "run.html",
        "compare": d / "compare.html",
        "markdown": d / "run.md",
        "spike": d / "spike.html",
        "late": d / "late.html",
    }
    reports = [
        ("1", "-o", str(paths["run"])),
        (str(d / "spike.rtb"), "-o", str(paths["spike"])),
        (str(d / "late.rtb"), "-o", str(paths["late"])),
        ("1", "2", "-o", str(paths["compare"])),
        ("1", "-o", str(paths["markdown"])),
    ]
    # Each only reads the store and writes its own file: side by side.
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        list(pool.map(lambda args: rtbench("report", *args), reports))
    yield paths


# Measures the laid-out page: injected into a test-only copy (the report's
# CSP forbids scripts), it writes what it found into the DOM Chromium dumps.
GEOMETRY = """
<script>
window.addEventListener('load', () => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const first = {};
  const summary = document.getElementById('summary');
  first.summary = summary && box(summary);
  const findings = document.querySelector('ul.findings');
  first.findings = findings && box(findings);
  const parts = document.getElementById('verdict-parts');
  first.parts = parts && box(parts);
  first.charts = [...document.querySelectorAll('#summary svg.chart')].map(box);
  for (const d of document.querySelectorAll('details')) d.open = true;
  const clipped = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const s = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (!t.textContent.trim() || r.width === 0) continue;
      const out = r.left < s.left - 1 || r.right > s.right + 1
        || r.top < s.top - 1 || r.bottom > s.bottom + 1;
      if (out)
        clipped.push(svg.querySelector('title').textContent + ': ' + t.textContent);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'geometry';
  pre.textContent = JSON.stringify({first, clipped, height: innerHeight,
    charts: document.querySelectorAll('svg.chart').length});
  document.body.appendChild(pre);
});
</script>
"""


def geometry(path: Path, profile: Path, tmp_path: Path) -> dict[str, Any]:
    """Element positions of `path` in a 1280x800 window (the first screen)."""
    page = path.read_text(encoding="utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", GEOMETRY + "</body>"), encoding="utf-8")
    proc = chromium(
        probe.as_uri(), "--window-size=1280,800", "--dump-dom", "--virtual-time-budget=5000",
        profile=profile,
    )  # fmt: skip
    found = re.search(r'<pre id="geometry">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
    return cast(dict[str, Any], json.loads(html.unescape(found.group(1))))


def test_first_screen_holds_the_summary(
    reports: dict[str, Path], profile: Path, tmp_path: Path
) -> None:
    g = geometry(reports["spike"], profile, tmp_path)
    first, height = g["first"], g["height"]
    assert height >= 600  # the viewport of a 1280x800 window, less the browser's own
    assert first["summary"]["top"] < 250  # right under the header
    assert first["findings"]["bottom"] < height
    assert len(first["charts"]) == 2  # the histogram and the exceedance plot
    for chart in first["charts"]:
        assert chart["bottom"] <= height, chart  # both whole on the first screen
        assert chart["right"] - chart["left"] > 300  # and readable, not thumbnails
    assert g["clipped"] == [], g["clipped"]
    assert g["charts"] >= 4


@pytest.mark.realtime  # the blocker must preempt the periodic task
def test_first_screen_says_behaviour_held_and_timing_did_not(
    reports: dict[str, Path], profile: Path, tmp_path: Path
) -> None:
    """Releases held past the next planned one (JIT-PER's blocker, 3 ms on a
    1 ms period): the first screen says behaviour passed, timing failed."""
    page = load(reports["late"], profile)
    parts = re.search(r'id="verdict-parts">(.*?)</span></span></span>', page.dom, re.S)
    assert parts, page.dom[:3000]
    assert re.search(r'behaviour <span class="badge passed">passed', parts.group(1))
    assert re.search(r'timing <span class="badge failed">failed', parts.group(1))
    assert "came after the next planned release" in page.dom
    g = geometry(reports["late"], profile, tmp_path)
    assert g["first"]["parts"] and g["first"]["parts"]["bottom"] < g["height"]


def test_clipped_label_control(profile: Path, tmp_path: Path) -> None:
    """The clipping check sees a label that runs out of its chart."""
    page = tmp_path / "clipped.html"
    page.write_text(
        '<!DOCTYPE html><html><body><svg class="chart" width="100" height="40">'
        '<title>control</title><text x="60" y="20">a label too long for it</text></svg>'
        "</body></html>"
    )
    assert geometry(page, profile, tmp_path)["clipped"] == ["control: a label too long for it"]


def test_the_first_screen_names_the_injected_delay(reports: dict[str, Path]) -> None:
    """A 3 ms busy-wait in every SEM-SHF give (the test build's give_delay):
    the summary names the case as the worst latency, and both summary
    charts reach 3 ms."""
    page = reports["spike"].read_text(encoding="utf-8")
    start = page.index('id="summary"')
    screen = page[start : page.index("</section>", start)]
    found = re.search(r"Worst latency: (\d+)\.\d+ µs in SEM-SHF give_to_run", screen)
    assert found and int(found.group(1)) >= 3000, screen[:3000]
    hist = screen[screen.index("<title>latency histogram of the run</title>") :]
    legend = re.search(r"SEM-SHF give_to_run: max (\d+)\.", hist)
    assert legend and int(legend.group(1)) >= 3000
    assert "<title>exceedance plot of the run</title>" in screen


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
