"""The one Jinja environment setting of every report page and chart: the
package's templates, a typo failing loudly instead of rendering blank, and
block tags leaving no stray lines. What differs between outputs (escaping,
finalize) is passed by the caller."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


def environment(**options: Any) -> Environment:
    return Environment(
        loader=PackageLoader("rtbench.reports", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        **options,
    )
