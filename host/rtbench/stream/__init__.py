"""The agent's result stream: parse lines, check them, build a Run.

    result = parse_file("run.rtb")          # or parse_lines(lines) / StreamParser
    run = assemble(result.records, result.issues, result.log)

The grammar is docs/wire-format.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from rtbench.model import Run
from rtbench.stream.assemble import Assembler, assemble
from rtbench.stream.codec import CodecError, crc32, decode_chunks, decode_zzd, encode_zzd
from rtbench.stream.parser import (
    ParseResult,
    Record,
    StreamError,
    StreamParser,
    UnsupportedStreamVersion,
    parse_file,
    parse_lines,
)
from rtbench.stream.writer import StreamWriter, default_hello, record_line


def assemble_lines(lines: Iterable[bytes | str]) -> Run:
    """A stream's lines parsed and assembled into a Run, the samples a
    chunk at a time as they come (bounded memory)."""
    parser, assembler = StreamParser(keep=False), Assembler()
    for line in lines:
        record = parser.feed(line)
        if record is not None:
            assembler.add(record)
    result = parser.finish()
    return assembler.result(result.issues, result.log)


def load_run(path: str | os.PathLike[str]) -> Run:
    """Parse a saved stream file and assemble it into a Run."""
    with open(path, "rb", buffering=1 << 20) as f:
        return assemble_lines(f)


__all__ = [
    "Assembler",
    "CodecError",
    "ParseResult",
    "Record",
    "StreamError",
    "StreamParser",
    "StreamWriter",
    "UnsupportedStreamVersion",
    "assemble",
    "assemble_lines",
    "crc32",
    "decode_chunks",
    "decode_zzd",
    "default_hello",
    "encode_zzd",
    "load_run",
    "parse_file",
    "parse_lines",
    "record_line",
]
