"""JUnit XML of `rtbench check`: one testcase per criterion, for CI systems
(GitLab, Jenkins, GitHub test reporters all read this shape)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from rtbench.analysis.criteria import Outcome


def junit_tree(outcomes: list[Outcome], suite: str) -> ET.ElementTree[ET.Element]:
    failures = sum(o.verdict == "failed" for o in outcomes)
    errors = sum(o.verdict == "error" for o in outcomes)
    skipped = sum(o.verdict == "skipped" for o in outcomes)
    root = ET.Element(
        "testsuites", tests=str(len(outcomes)), failures=str(failures), errors=str(errors)
    )
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(outcomes)),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
    )
    for o in outcomes:
        c = o.criterion
        tc = ET.SubElement(ts, "testcase", classname=f"rtbench.{c.case}", name=c.key, time="0")
        if o.verdict == "failed":
            ET.SubElement(tc, "failure", message=o.message, type="threshold").text = o.message
        elif o.verdict == "error":
            ET.SubElement(tc, "error", message=o.message, type="indicator").text = o.message
        elif o.verdict == "skipped":
            ET.SubElement(tc, "skipped", message=o.message)
        out = "; ".join([o.message, *o.notes])
        ET.SubElement(tc, "system-out").text = out
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(outcomes: list[Outcome], path: Path, suite: str = "rtbench check") -> None:
    junit_tree(outcomes, suite).write(path, encoding="utf-8", xml_declaration=True)
