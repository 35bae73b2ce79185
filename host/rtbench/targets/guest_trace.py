"""`--trace` in a QEMU guest: the kernel trace recorded in the guest through
tracefs and brought back with the stream.

The guest has no Python: its `/init` sets tracefs up with busybox before
the agent (the clock, a per-CPU buffer that holds the whole run, the
events of rtbench.trace), passes the agent `--trace-marker`, and after it
reads each CPU's binary buffer (`trace_pipe_raw`, until what was read stops
growing: the file blocks once empty) and sends it, with the kernel's event formats, as
base64 marker lines on the stream port. The host rebuilds the directory
`Capture.load` reads and the trace is split or attributed as a local one.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rtbench.model import Run
from rtbench.model import Warning as RunWarning

GUEST_TRACEFS = "/sys/kernel/tracing"
MARKER_PATH = f"{GUEST_TRACEFS}/trace_marker"
# Per CPU: the guest has no drain thread, so the buffer holds the whole run
# (a guest run is short: TCG). 8 MiB x CPUs of a 512 MiB guest.
BUFFER_KB = 8192

# Before the agent: PORT and MARKER are filled in by initramfs.
SETUP_SCRIPT = r"""
if [ -f /rtbench/trace ]; then
    read tclocks tevents tkb </rtbench/trace
    T=${TRACEFS:-/sys/kernel/tracing}
    echo 0 >$T/tracing_on
    tclock=""
    for c in $(echo $tclocks | tr , ' '); do
        if grep -qw "$c" $T/trace_clock; then echo $c >$T/trace_clock; tclock=$c; break; fi
    done
    echo $tkb >$T/buffer_size_kb
    tenabled=""
    for e in $(echo $tevents | tr , ' '); do
        f=$T/events/${e%%:*}/${e#*:}/enable
        if [ -e $f ] && echo 1 >$f; then tenabled="$tenabled,$e"; fi
    done
    echo >$T/trace
    echo 1 >$T/tracing_on
fi
"""

# After the agent.
DUMP_SCRIPT = r"""
if [ -f /rtbench/trace ]; then
    echo 0 >$T/tracing_on
    # tracing_on stops new events, not one a writer is already putting in
    # (a loaded guest's vCPU can be held mid-event for long): a page read
    # then is torn. Writers are done once no CPU's counts move (at most 10 s).
    tw=""; tn=0
    while [ $tn -lt 10 ]; do
        tc=$(cat $T/per_cpu/cpu*/stats | grep -v ' ts:')  # the counts, not the clocks
        [ "$tc" = "$tw" ] && break
        tw=$tc; tn=$((tn + 1)); sleep 1
    done
    echo "MARKER trace begin clock=$tclock events=$tenabled" >/dev/PORT
    tt=${TRACETMP:-/tmp/trace}
    mkdir -p $tt
    tpids=""
    for d in $T/per_cpu/cpu*; do
        cat $d/trace_pipe_raw >$tt/${d##*/}.raw &
        tpids="$tpids $!"
    done
    # The files block once empty: the readers are stopped when what they
    # wrote has stopped growing for 3 s, not after a fixed time (a loaded
    # TCG guest takes long to read megabytes; a cut read loses the newest
    # events, --break's among them).
    ts=-1; tk=0
    while [ $tk -lt 3 ]; do
        sleep 1
        tn=$(ls -l $tt | awk '{s += $5} END {print s + 0}')
        if [ "$tn" = "$ts" ]; then tk=$((tk + 1)); else tk=0; ts=$tn; fi
    done
    kill $tpids 2>/dev/null
    wait $tpids 2>/dev/null
    for d in $T/per_cpu/cpu*; do
        c=${d##*/}
        o=$(grep -E '^(overrun|dropped events):' $d/stats | awk '{s += $NF} END {print s + 0}')
        echo "MARKER trace overrun $c $o" >/dev/PORT
    done
    # Each base64 line numbered at both ends: a line the port lost, cut or
    # ran into another is found and its bytes held as lost (a QEMU virtio
    # console drops what a loaded host does not take at once).
    tsend() {
        echo "MARKER trace file $2" >/dev/PORT
        base64 $1 | awk '{print "MARKER trace b " NR " " $0 " " NR}' >/dev/PORT
    }
    for f in $tt/*.raw; do tsend $f ${f##*/}; done
    for e in $(echo $tenabled,ftrace:print | tr , ' '); do
        tsend $T/events/${e%%:*}/${e#*:}/format formats/${e%%:*}__${e#*:}
    done
    tsend $T/events/header_page header_page
    tsend $T/events/header_event header_event
    tsend $T/buffer_subbuf_size_kb subbuf_kb 2>/dev/null
    rm -rf $tt
    echo "MARKER trace end" >/dev/PORT
fi
"""


@dataclass(frozen=True)
class Request:
    clocks: tuple[str, ...]
    events: tuple[str, ...]
    buffer_kb: int
    flight: bool  # --break: the spike explained, not the per-case split

    def line(self) -> str:
        return f"{','.join(self.clocks)} {','.join(self.events)} {self.buffer_kb}\n"


def request(flight: bool) -> Request:
    from rtbench.trace.tracefs import EVENTS, FLIGHT_CLOCKS, FLIGHT_EVENTS, NS_CLOCKS

    if flight:
        return Request(FLIGHT_CLOCKS, FLIGHT_EVENTS, BUFFER_KB, True)
    return Request(NS_CLOCKS, EVENTS, BUFFER_KB, False)


@dataclass
class Received:
    """The trace as the guest sends it, file by file."""

    request: Request | None = None
    clock: str = ""
    events: list[str] = field(default_factory=list)
    files: dict[str, list[bytes]] = field(default_factory=dict)
    numbered: dict[str, dict[int, bytes]] = field(default_factory=dict)  # name -> line n -> text
    overrun: dict[int, int] = field(default_factory=dict)
    ended: bool = False
    unsupported: str = ""  # why this guest records no trace
    source: str = "QEMU guest (top level)"  # where it was recorded, for the reports
    _current: str = ""

    def feed(self, body: bytes) -> None:
        words = body.split(maxsplit=1)
        if not words:
            return
        what, rest = words[0], (words[1] if len(words) > 1 else b"")
        if what == b"b" and self._current:
            parts = rest.split()
            if len(parts) == 3 and parts[0].isdigit():  # "N text N"
                n = int(parts[0])
                got = parts[1] if parts[2] == parts[0] else b"?"  # ran into another: lost
                self.numbered.setdefault(self._current, {})[n] = got
            elif len(parts) != 1 or parts[0].isdigit():
                self.numbered.setdefault(self._current, {})  # a damaged numbered line
            else:
                self.files[self._current].append(rest.strip())
        elif what == b"file":
            self._current = rest.decode("ascii", "replace").strip()
            self.files.setdefault(self._current, [])
        elif what == b"begin":
            text = rest.decode("ascii", "replace")
            if m := re.search(r"clock=(\S*)", text):
                self.clock = m.group(1)
            if m := re.search(r"events=(\S*)", text):
                self.events = [e for e in m.group(1).split(",") if e]
        elif what == b"overrun":
            parts = rest.split()
            if len(parts) == 2 and parts[1].isdigit() and int(parts[1]):
                self.overrun[int(parts[0].removeprefix(b"cpu"))] = int(parts[1])
        elif what == b"end":
            self.ended = True
        elif what == b"none":  # the target could not set a trace up: why
            self.unsupported = rest.decode("utf-8", "replace").strip()

    def save(self, directory: Path) -> None:
        """The directory `Capture.load` reads."""
        from rtbench.trace.formats import parse_header_page

        (directory / "formats").mkdir(parents=True, exist_ok=True)
        data = {name: base64.b64decode(b"".join(chunks)) for name, chunks in self.files.items()}
        lost: dict[str, list[tuple[int, int]]] = {}
        for name, lines in self.numbered.items():
            data[name], lost[name] = rebuild(lines)
        cpus = sorted(int(n[3:-4]) for n in data if re.fullmatch(r"cpu\d+\.raw", n))
        for name, content in data.items():
            (directory / name).write_bytes(content)
        header_page = data.get("header_page", b"").decode()
        page = parse_header_page(header_page + "\n").page_size
        subbuf = data.get("subbuf_kb", b"").decode().strip()
        if subbuf.isdigit():
            page = max(page, int(subbuf) * 1024)
        asked = self.request.events if self.request else ()
        meta = {
            "clock": self.clock,
            "cpus": cpus,
            "events": self.events,
            "missing": [e for e in asked if e not in self.events],
            "page_size": page,
            "source": self.source,
            "byteorder": "little",
            "overrun": {str(k): v for k, v in self.overrun.items()},
            "notes": [],
            "lost": {n[3:-4]: r for n, r in lost.items() if r and re.fullmatch(r"cpu\d+\.raw", n)},
        }
        (directory / "meta.json").write_text(json.dumps(meta))


LINE_BYTES = 57  # what one 76-column base64 line holds


def rebuild(lines: dict[int, bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    """A file from its numbered base64 lines, and the byte ranges lost on the
    way: a line missing, cut or run into another is zeros of a line's length,
    so that every byte after it stays where it was (pages stay aligned), and
    its range is reported for the reader to cut the page there."""
    out = bytearray()
    lost: list[tuple[int, int]] = []
    last = max(lines, default=0)
    for n in range(1, last + 1):
        text = lines.get(n, b"")
        data: bytes | None = None
        if len(text) == 76 or (n == last and 0 < len(text) < 76 and len(text) % 4 == 0):
            try:
                data = base64.b64decode(text, validate=True)
            except binascii.Error:
                data = None
        if data is None or (n < last and len(data) != LINE_BYTES):
            data = bytes(LINE_BYTES)
            if lost and lost[-1][1] == len(out):
                lost[-1] = (lost[-1][0], len(out) + LINE_BYTES)
            else:
                lost.append((len(out), len(out) + LINE_BYTES))
        out += data
    return bytes(out), lost


def attach(run: Run, got: Received) -> None:
    """The guest's trace split or attributed as a local one, or why not."""
    from rtbench.trace import add_kernel_split, explain_breaks
    from rtbench.trace.tracefs import Capture

    if got.request is None:
        return
    if got.unsupported:
        run.warnings.append(RunWarning("trace", f"no kernel trace: {got.unsupported}"))
        return
    if not got.ended or not got.files:
        why = "the guest ended before sending it" if not got.ended else "it sent nothing"
        run.warnings.append(RunWarning("trace", f"no kernel trace from the guest: {why}"))
        return
    with tempfile.TemporaryDirectory(prefix="rtbench-guest-trace-") as tmp:
        try:
            got.save(Path(tmp))
            capture = Capture.load(Path(tmp))
        except (ValueError, OSError, KeyError) as e:
            run.warnings.append(RunWarning("trace", f"the guest's trace is unreadable: {e}"))
            return
        if got.request.flight:
            explain_breaks(run, capture)
        else:
            add_kernel_split(run, capture)
