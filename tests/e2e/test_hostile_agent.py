"""An agent (or a console, or a file) that writes anything, forever, costs
bounded memory and ends the run with a clear error (rtbench.stream.limits):
garbage forever with or without a hello, one endless line, a stderr flood,
and `ingest` of a stream followed by a lot of text. The host's peak RSS is
measured as a child's ru_maxrss and must stay under a fixed limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from rtbench.stream.limits import MAX_LINE
from rtbench.stream.writer import StreamWriter, default_hello

# The host's peak resident memory, whatever the agent writes: python with
# rtbench imported is ~70-100 MB; the floods below were 360 MB to 2.9 GB.
RSS_LIMIT_MB = 250

FAKE = """\
import os, sys
if "--list" in sys.argv:
    sys.stdout.write(open(os.environ["FAKE_LIST"]).read())
    sys.exit(0)
if "--dry-run" in sys.argv:
    sys.exit(0)
mode = os.environ["FAKE_MODE"]
out, err = sys.stdout.buffer, sys.stderr.buffer
lines = open(os.environ["FAKE_STREAM"], "rb").read().splitlines(keepends=True)
if mode != "no-hello":
    out.write(lines[0])
    out.flush()
if mode in ("garbage", "no-hello"):
    while True:
        out.write(b"garbage that is not a record, again and again\\n" * 1000)
elif mode == "endless":
    while True:
        out.write(b"x" * 65536)
elif mode == "stderr":
    chunk = b"e" * 1023 + b"\\n"
    for _ in range(400_000):  # 400 MB of stderr lines
        err.write(chunk)
    err.write(b"y" * (50 << 20))  # and a 50 MB stderr line
    err.flush()
    out.writelines(lines[1:])
"""


def _stream(path: Path) -> Path:
    w = StreamWriter()
    w.hello(default_hello(["THR-SW"]))
    w.begin("THR-SW")
    w.series("THR-SW", "latency", [1000, 2000, 3000])
    w.end("THR-SW")
    w.bye()
    path.write_text("".join(w.lines))
    return path


def _peak_rss_mb(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, int]:
    """Runs `argv` under a small wrapper: its exit status, its output and
    the peak RSS (MB) of the largest of its descendants (ru_maxrss)."""
    wrapper = (
        "import json, resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024\n"
        "print(json.dumps([p.returncode, p.stdout + p.stderr, rss]))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", wrapper, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=True,
    )
    code, output, rss = json.loads(r.stdout)
    return int(code), str(output), int(rss)


@pytest.fixture
def fake_agent(tmp_path: Path) -> Path:
    script = tmp_path / "fake-agent"
    script.write_text(f"#!{sys.executable}\n{FAKE}")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("no-hello", "no `hello` record within"),
        ("garbage", "that are not records, over the limit"),
        ("endless", "that are not records, over the limit"),
        ("stderr", None),
    ],
)
def test_a_hostile_agent_ends_within_bounds(
    tmp_path: Path, fake_agent: Path, mode: str, message: str | None
) -> None:
    listing = tmp_path / "list.jsonl"
    listing.write_text(resources.files("rtbench").joinpath("data", "posix-cases.jsonl").read_text())
    env = {
        **os.environ,
        "FAKE_MODE": mode,
        "FAKE_LIST": str(listing),
        "FAKE_STREAM": str(_stream(tmp_path / "s.rtb")),
        "RTBENCH_DB": str(tmp_path / "runs.sqlite"),
        "COLUMNS": "200",
    }
    argv = [sys.executable, "-m", "rtbench.cli", "run", "--agent", str(fake_agent), "-c", "THR-SW"]
    code, output, rss = _peak_rss_mb(argv, env, timeout=600)
    assert "Traceback" not in output
    assert rss < RSS_LIMIT_MB, (rss, output[-2000:])
    if message is None:  # the stderr flood: the run itself is whole
        assert code == 0, output[-2000:]
    else:
        assert code == 2, output[-2000:]
        assert message in output, output[-2000:]
    if mode == "endless":
        assert f"lines longer than {MAX_LINE} bytes were cut" in output


def test_ingest_of_a_stream_and_much_text_is_bounded(tmp_path: Path) -> None:
    stream = _stream(tmp_path / "s.rtb")
    big = tmp_path / "big.rtb"
    noise = b"n" * 999 + b"\n"
    with big.open("wb") as f:
        f.write(stream.read_bytes())
        for _ in range(300):  # 300 MB of text after the stream
            f.write(noise * 1000)
    env = {**os.environ, "RTBENCH_DB": str(tmp_path / "runs.sqlite"), "COLUMNS": "200"}
    argv = [sys.executable, "-m", "rtbench.cli", "ingest", str(big)]
    code, output, rss = _peak_rss_mb(argv, env, timeout=600)
    assert code == 0 and "Traceback" not in output, output[-2000:]
    assert rss < RSS_LIMIT_MB, (rss, output[-2000:])
    argv = [sys.executable, "-m", "rtbench.cli", "show", "--format", "json"]
    shown = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=True)
    assert shown.returncode == 0
