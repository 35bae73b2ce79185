"""Records tests/host/data/spike-sample/: a real flight-recorder trace of a
JIT-PER run stopped at --break by a known busy thread (root only), for the
attribution's unit tests (tests/host/test_attribution.py).

    sudo .venv/bin/python tests/host/data/make_spike_sample.py

A SCHED_FIFO thread named `rtb-hog` at priority 95 on CPU 1 sleeps a second,
then spins 25 ms; the release agent runs JIT-PER on both CPUs (1 ms period,
no load) with --break 10 ms and the trace marker of a flight-recorder
instance (docs/soak.md). Kept: the last pages of each CPU's buffer, the
kernel's own text rendering of the same events (`trace.txt.gz`, the oracle
for the decoded events), the agent's stream (`stream.rtb`, no samples) and
`expected.json` (the hog's pid, name, priority and CPU).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rtbench.machine.build import ensure_agent
from rtbench.trace import Capture, Recorder
from rtbench.trace.tracefs import FLIGHT_CLOCKS, FLIGHT_EVENTS

_TS = re.compile(r"\] \S+ +(\d+\.\d{6}): ")

OUT = Path(__file__).resolve().parent / "spike-sample"
PAGES = 6  # kept per CPU: the window before the break and a little more
HOG = (
    "import ctypes, os, time\n"
    "ctypes.CDLL(None).prctl(15, b'rtb-hog', 0, 0, 0)\n"
    "os.sched_setaffinity(0, {1})\n"
    "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))\n"
    "time.sleep(1.0)\n"
    "end = time.monotonic() + 0.025\n"
    "while time.monotonic() < end:\n"
    "    pass\n"
)


def main() -> None:
    agent = ensure_agent("release")
    with Recorder(
        events=FLIGHT_EVENTS, buffer_kb=256, clocks=FLIGHT_CLOCKS, drain_interval=None
    ) as rec:
        if rec.marker is None:
            raise SystemExit(f"cannot trace: {rec.unavailable}")
        hog = subprocess.Popen([sys.executable, "-c", HOG])
        stream = subprocess.run(
            [
                str(agent),
                "--cpus=all",
                "--break=10000000",
                "--no-samples",
                *rec.agent_args(),
                "JIT-PER:period_us=1000:cycles=5000:load_threads=0",
            ],
            capture_output=True,
            check=False,
        ).stdout
        hog.wait()
        text = (rec.dir / "trace").read_text()
    capture = rec.capture
    assert capture is not None
    if OUT.exists():
        shutil.rmtree(OUT)
    capture.save(OUT)
    for cpu in capture.cpus:
        raw = OUT / f"cpu{cpu}.raw"
        data = raw.read_bytes()
        raw.write_bytes(data[-PAGES * capture.page_size :])
    # The text of the events kept (and the header): from the first kept
    # event's microsecond on.
    first = min(e.ts for e in Capture.load(OUT).events_in_order()) // 1000 / 1e6
    kept = [
        line
        for line in text.splitlines(keepends=True)
        if line.startswith("#") or ((m := _TS.search(line)) and float(m[1]) >= first)
    ]
    with gzip.open(OUT / "trace.txt.gz", "wt") as f:
        f.write("".join(kept))
    (OUT / "stream.rtb").write_bytes(stream)
    expected = {"comm": "rtb-hog", "pid": hog.pid, "rt_priority": 95, "cpu": 1}
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    capture.close()
    print(f"{OUT}: {sum(p.stat().st_size for p in OUT.rglob('*') if p.is_file())} bytes")


if __name__ == "__main__":
    main()
