"""Outputs that never destroy (rtbench.io.atomic): `-o`, `--junit` and
`--save-stream` onto an existing path that is not a regular file write
through it (a FIFO, a character device, the process's own streams) or
refuse it; a symbolic link is followed, never replaced; only a regular file
is replaced atomically."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtbench.cli import main
from rtbench.io.atomic import AtomicSink, OutputError, write_text
from rtbench.stream.writer import StreamWriter, default_hello


def _stored_run(tmp_path: Path) -> None:
    w = StreamWriter()
    w.hello(default_hello(["THR-SW"]))
    w.begin("THR-SW")
    w.series("THR-SW", "latency", [1000, 2000, 3000])
    w.end("THR-SW")
    w.bye()
    stream = tmp_path / "s.rtb"
    stream.write_text("".join(w.lines))
    assert CliRunner().invoke(main, ["ingest", str(stream)]).exit_code == 0


def test_export_onto_a_fifo_writes_through_it(tmp_path: Path, db: Path) -> None:
    _stored_run(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = CliRunner().invoke(main, ["export", "latest", "-o", str(fifo)])
    reader.join(timeout=60)
    assert r.exit_code == 0, r.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO
    assert b'"schema": "rtbench-export"' in got[0]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pipe.")]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_export_onto_a_device_node_writes_through_it(tmp_path: Path, db: Path) -> None:
    _stored_run(tmp_path)
    null = tmp_path / "null"  # a copy of /dev/null (character device 1, 3)
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    r = CliRunner().invoke(main, ["export", "latest", "-o", str(null)])
    assert r.exit_code == 0, r.output
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


def test_export_onto_a_symlink_replaces_its_target_and_keeps_the_link(
    tmp_path: Path, db: Path
) -> None:
    _stored_run(tmp_path)
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = CliRunner().invoke(main, ["export", "latest", "-o", str(link)])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert '"schema": "rtbench-export"' in real.read_text()
    # A dangling link: the file is made where it points.
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    assert CliRunner().invoke(main, ["export", "latest", "-o", str(dangling)]).exit_code == 0
    assert dangling.is_symlink() and (tmp_path / "made.json").is_file()


def test_a_socket_and_a_directory_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(OutputError, match="a socket"):
            write_text(sock_path, "x")
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    with pytest.raises(OutputError, match="a directory"):
        write_text(tmp_path, "x")


def test_save_stream_onto_a_fifo_and_a_symlink(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    sink = AtomicSink(fifo)
    sink.write(b"line\n")
    sink.commit()
    reader.join(timeout=60)
    assert got == [b"line\n"] and sink.error is None
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    real = tmp_path / "real.rtb"
    real.write_bytes(b"old")
    link = tmp_path / "link.rtb"
    link.symlink_to(real)
    sink = AtomicSink(link)
    sink.write(b"new\n")
    sink.commit()
    assert link.is_symlink() and real.read_bytes() == b"new\n"
