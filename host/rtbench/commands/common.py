"""What every command shares: the consoles, errors and exit codes, the store."""

from __future__ import annotations

import sys
from typing import NoReturn

import click
from rich.console import Console

from rtbench.store import Store, StoreError

EXIT = {"passed": 0, "failed": 1, "error": 2}

# Piped output (CI logs, files) gets a width a figures table fits in.
out = Console(width=None if sys.stdout.isatty() else 132)
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    err.print("[bold red]rtbench:[/bold red] ", end="")
    err.print(message, highlight=False, markup=False, soft_wrap=True)
    sys.exit(code)


def parse_labels(pairs: tuple[str, ...]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--label {pair!r}: write KEY=VALUE")
        labels[key] = value
    return labels


def open_store(ctx: click.Context) -> Store:
    try:
        return Store(ctx.obj["db"])
    except StoreError as e:
        fail(str(e))
