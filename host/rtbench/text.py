"""Text from outside (a stream, an export, a file) shown as text.

A stream string may hold anything: terminal escape sequences (ANSI colours,
OSC titles and links, a screen clear), carriage returns that overwrite a
line, Unicode direction overrides that reorder what is read. `printable`
makes each of them visible as an escape (`\\x1b`, `\\u202e`) before it
reaches a terminal; newlines and tabs stay. Markup (rich's `[bold]`) is a
separate matter: the consoles of `rtbench.commands.common` read no markup
in strings at all.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (a lone 0x9b is a CSI
# on some terminals), and the bidirectional overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """`text` with every control character written as an escape."""
    return _UNSAFE.sub(_escape, text)
