"""The `rtbench` executable (and `python -m rtbench`).

Only the light error boundary is imported before the command line, so a
Ctrl-C while click, rich and the commands load exits 130 without a
traceback (`rtbench.errors`).
"""

from __future__ import annotations

import sys

from rtbench import errors


def main() -> None:
    errors.interrupt_on_sigint()
    try:
        from rtbench.cli import main as cli
    except (Exception, KeyboardInterrupt) as e:
        sys.exit(errors.exit_for(e))
    cli(prog_name="rtbench")


if __name__ == "__main__":
    main()
