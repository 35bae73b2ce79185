"""Report commands: HTML and Markdown reports."""

from __future__ import annotations

import click


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    del main
