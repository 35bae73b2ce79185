"""Records tests/host/data/trace-sample/: a short real kernel trace of this
machine (root only), for the trace parser's unit tests.

    sudo .venv/bin/python tests/host/data/make_trace_sample.py

What it records, in a private trace instance: two marked windows like the
agent's ("rtbench begin FIX-A seq=1" ... "rtbench end FIX-A"), a thread
ping-pong inside them (wake-ups and switches), a file written and fsync'ed
(a block-device interrupt, where the machine has one), and the ticks. Beside
the raw pages it keeps the kernel's own text rendering of the same buffer
(`trace.txt.gz`, microseconds), which the tests use as an independent oracle
for the nanosecond times decoded from the raw pages.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from rtbench.trace import Recorder

OUT = Path(__file__).resolve().parent / "trace-sample"


def ping_pong(rounds: int) -> None:
    go, back = threading.Event(), threading.Event()

    def partner() -> None:
        for _ in range(rounds):
            go.wait()
            go.clear()
            back.set()

    t = threading.Thread(target=partner, name="fix-partner")
    t.start()
    for _ in range(rounds):
        go.set()
        back.wait()
        back.clear()
        time.sleep(0.0002)
    t.join()


def disk_io() -> None:
    with tempfile.NamedTemporaryFile(dir="/var/tmp") as f:
        f.write(os.urandom(1 << 16))
        f.flush()
        os.fsync(f.fileno())


def main() -> None:
    # A drain interval longer than the recording: nothing is consumed before
    # the text rendering below is taken, so both see the same events.
    with Recorder(drain_interval=3600.0) as rec:
        if rec.marker is None:
            raise SystemExit(f"cannot trace: {rec.unavailable}")
        with rec.marker.open("w") as m:
            for seq, case in ((1, "FIX-A"), (2, "FIX-B")):
                m.write(f"rtbench begin {case} seq={seq}\n")
                m.flush()
                ping_pong(20)
                disk_io()
                time.sleep(0.015)  # a few ticks
                m.write(f"rtbench end {case}\n")
                m.flush()
        (rec.dir / "tracing_on").write_text("0")
        text = (rec.dir / "trace").read_text()
    capture = rec.capture
    assert capture is not None
    if OUT.exists():
        shutil.rmtree(OUT)
    capture.save(OUT)
    with gzip.open(OUT / "trace.txt.gz", "wt") as f:
        f.write(text)
    capture.close()
    print(f"{OUT}: {sum(p.stat().st_size for p in OUT.rglob('*') if p.is_file())} bytes")


if __name__ == "__main__":
    main()
