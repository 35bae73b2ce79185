"""`rtbench list` reads the POSIX port's case table from a shipped snapshot
(no agent needs building for it); the snapshot must be what the agent says."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rtbench.catalogue import parse_list, posix_cases


def test_shipped_case_table_is_the_agents(agent: Path) -> None:
    listed = subprocess.run(
        [str(agent), "--list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert parse_list(listed) == posix_cases(), (
        "host/rtbench/data/posix-cases.jsonl differs from `rtbench-agent --list`: "
        "run `make catalogue` and commit the file"
    )
