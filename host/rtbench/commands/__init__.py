"""CLI commands beyond the core ones in rtbench.cli, each group in its own module."""
