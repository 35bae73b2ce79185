"""Text from outside is text (issue 26, "Text is text"): markup and escape
sequences in every stream string print as text in ingest, show, analyze,
report and the live progress bar; mixed-type sweep points, hand-edited
exports and a targets file that is not UTF-8 are clear errors or work,
never a traceback."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtbench.cli import main
from rtbench.stream.writer import StreamWriter, default_hello

RELEASE = "6.1.0-custom[/rt]"
BAD_CASE = "[/bad]"
# Escape sequences a stream might carry: a window title (OSC 0), colour,
# a screen clear, a hyperlink (OSC 8). None may reach a terminal raw.
RAW = ("\x1b]0;", "\x1b[31m", "\x1b[2J", "\x1b]8;")


def hostile_stream(path: Path) -> Path:
    w = StreamWriter()
    hello = default_hello(["THR-SW", BAD_CASE])
    hello["os"]["release"] = RELEASE
    hello["cpu"]["model"] = "CPU \x1b]0;pwned\x07 \x1b[31mred\x1b[0m [bold]x :thumbs_up:"
    w.hello(hello)
    w.begin("THR-SW", "Thread switch [/x]", {"n": 2})
    # Sweep points of two types: ordered, never a TypeError.
    w.series("THR-SW", "latency", [1000, 2000, 3000] * 10, point={"n": 2})
    w.series("THR-SW", "latency", [1500, 2500] * 10, point={"n": "ten"})
    w.check("THR-SW", "ok[/]", "pass", "detail [/red] \x1b[2J")
    w.end("THR-SW")
    w.begin(BAD_CASE, "bad [/]", {})
    w.series(BAD_CASE, "lat[/]", [5, 6, 7] * 5)
    w.warn("w[/]", "warn \x1b]8;;http://example.invalid\x07link\x1b]8;;\x07 [/]", case=BAD_CASE)
    w.end(BAD_CASE)
    w.bye()
    path.write_text("".join(w.lines), encoding="utf-8")
    return path


def _ok(args: list[str]) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, (args, r.output)
    assert "Traceback" not in r.output and "internal error" not in r.output
    for raw in RAW:
        assert raw not in r.output, (args, raw)
    return r.output


def test_markup_and_escapes_in_every_stream_string_print_as_text(tmp_path: Path, db: Path) -> None:
    stream = hostile_stream(tmp_path / "evil.rtb")
    shown = _ok(["ingest", str(stream)])
    for text in (RELEASE, BAD_CASE, "ok[/]", "lat[/]", "[bold]x", ":thumbs_up:", "\\x1b[2J"):
        assert text in shown, text
    assert RELEASE in _ok(["show"])
    assert BAD_CASE in _ok(["analyze"])
    _ok(["export", "latest", "--samples", "-o", str(tmp_path / "e.json")])
    for ext in ("html", "md"):
        out = tmp_path / f"r.{ext}"
        _ok(["report", "latest", "-o", str(out)])
        text = out.read_text(encoding="utf-8")
        assert "\x1b" not in text and "x1b" in text, ext


def test_the_live_progress_bar_on_a_terminal_prints_case_ids_as_text(
    tmp_path: Path, db: Path
) -> None:
    stream = hostile_stream(tmp_path / "evil.rtb")
    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "rtbench.cli", "run", "--no-store", "-c", "THR-SW"]
    proc = subprocess.Popen(
        [*argv, "--target", f"replay:{stream}"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    seen = b"".join(chunks).decode("utf-8", "replace")
    assert "Traceback" not in seen and "MarkupError" not in seen
    assert RELEASE in seen and BAD_CASE in seen
    for raw in RAW:
        assert raw not in seen, raw


def _export(tmp_path: Path, db: Path, edit: str) -> Path:
    stream = hostile_stream(tmp_path / "s.rtb")
    CliRunner().invoke(main, ["ingest", str(stream)])
    good = tmp_path / "good.json"
    _ok(["export", "latest", "--samples", "-o", str(good)])
    doc = json.loads(good.read_text())
    series = doc["cases"][0]["series"][0]
    bad = tmp_path / f"{edit}.json"
    if edit == "float":
        series["samples"][0] = 1.5
    elif edit == "huge":
        series["samples"][0] = 2**80
    elif edit == "min_above_max":
        series["min"], series["max"] = 5000, 1
    elif edit == "hist_total":  # counts that do not add up to n
        layout = {"kind": "linear", "lo": 0, "width": 1000, "buckets": 4}
        series["hist"] = {
            **{k: series[k] for k in ("n", "min", "max", "sum")},
            "layout": layout,
            "underflow": 0,
            "overflow": 0,
            "counts": [[1, 10], [2, 10], [3, 5]],
        }
    if edit == "deep":
        bad.write_text('{"schema": "rtbench-export", "run": ' + "[" * 100_000 + "]" * 100_000 + "}")
    else:
        bad.write_text(json.dumps(doc))
    return bad


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("float", "1.5 is not a 64-bit whole number"),
        ("huge", "is not a 64-bit whole number"),
        ("deep", "nested too deeply"),
        ("min_above_max", "min 5000 is above max 1"),
        ("hist_total", "n is 30, but counts, underflow and overflow add up to 25"),
    ],
)
def test_hand_edited_exports_are_clear_errors(
    tmp_path: Path, db: Path, edit: str, message: str
) -> None:
    bad = _export(tmp_path, db, edit)
    r = CliRunner().invoke(main, ["import", str(bad)])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output and "internal" not in r.output


def test_a_targets_file_not_utf8_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "targets.toml"
    path.write_bytes(b'[a]\nspec = "ssh://\xff\xfe"\n')
    monkeypatch.setenv("RTBENCH_TARGETS", str(path))
    r = CliRunner().invoke(main, ["run", "--target", "a", "--no-store"])
    assert r.exit_code == 2, r.output
    assert "not UTF-8" in r.output and "Traceback" not in r.output


def test_report_of_runs_with_nothing_in_common_is_clean(tmp_path: Path, db: Path) -> None:
    for cases in (["THR-SW"], ["SEM-X"]):
        w = StreamWriter()
        w.hello(default_hello(cases))
        w.begin(cases[0])
        w.series(cases[0], "latency", [1, 2, 3])
        w.end(cases[0])
        w.bye()
        path = tmp_path / f"{cases[0]}.rtb"
        path.write_text("".join(w.lines))
        _ok(["ingest", str(path)])
    for command in ("compare", "report"):
        r = CliRunner().invoke(main, [command, "1", "2"])
        assert r.exit_code == 2, (command, r.output)
        assert "nothing compares" in r.output and "Traceback" not in r.output
