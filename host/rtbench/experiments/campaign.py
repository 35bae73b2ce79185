"""Campaigns: the same cases on several targets and loads, repeated, in one
matrix that can be interrupted and resumed.

A campaign file (TOML) names its targets, loads, cases and repetitions:

    [campaign]
    name = "rt-vs-generic"
    cases = ["SEM-SHF", "THR-SW"]     # or suite = "quick"
    set = ["THR-SW.n=2"]              # parameter overrides, as `run --set`
    loads = ["none", "kernel"]
    repetitions = 3

    [[target]]
    name = "rt"                       # the axis value in labels and the report
    spec = "qemu:debian-rt"           # anything `--target` takes
    smp = 2                           # any other key: a setting of the target

A cell is one (repetition, target, load); each cell is one run of all the
cases. Cells run in interleaved order (every target and load once, then the
next repetition) so a slow drift of the host does not fall on one target.
Every run is labelled with its axes and the campaign's name, which is how a
resumed campaign knows what is stored already.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtbench.model import Run

LABEL_CAMPAIGN = "campaign"
LABEL_CELL = "campaign_cell"


class CampaignError(ValueError):
    """A campaign file that cannot be run as written."""


@dataclass(frozen=True)
class CampaignTarget:
    name: str
    spec: str
    # The target's settings besides its spec (e.g. cmdline, smp for qemu:),
    # as `--target` takes them in a targets file.
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Cell:
    repetition: int
    target: CampaignTarget
    load: str

    @property
    def key(self) -> str:
        return f"{self.target.name}/{self.load}/{self.repetition}"

    @property
    def group(self) -> str:
        """The column of the report: every repetition of one target and load."""
        return f"{self.target.name} · load={self.load}"

    def labels(self, campaign: str) -> dict[str, str]:
        return {
            LABEL_CAMPAIGN: campaign,
            LABEL_CELL: self.key,
            "target": self.target.name,
            "load": self.load,
            "repetition": str(self.repetition),
        }


@dataclass
class Campaign:
    name: str
    targets: list[CampaignTarget]
    loads: list[str]
    cases: list[str]
    suite: str = "quick"
    overrides: list[str] = field(default_factory=list)
    repetitions: int = 1
    no_samples: bool = False

    def cells(self) -> list[Cell]:
        """Interleaved: each repetition visits every target and load once."""
        return [
            Cell(rep, t, load)
            for rep in range(1, self.repetitions + 1)
            for t in self.targets
            for load in self.loads
        ]

    def groups(self) -> list[str]:
        return list(dict.fromkeys(c.group for c in self.cells()))


def _strings(table: dict[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CampaignError(f"{where}: `{key}` must be a list of non-empty strings")
    return list(value)


_KNOWN_KEYS = {"name", "cases", "suite", "set", "loads", "repetitions", "no_samples"}


def parse_campaign(doc: dict[str, Any], default_name: str) -> Campaign:
    head = doc.get("campaign", {})
    if not isinstance(head, dict):
        raise CampaignError("[campaign] must be a table")
    unknown = sorted(set(head) - _KNOWN_KEYS)
    if unknown:
        raise CampaignError(
            f"[campaign]: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_KNOWN_KEYS))}"
        )
    name = head.get("name", default_name)
    if not isinstance(name, str) or not name or "/" in name:
        raise CampaignError("[campaign] name must be a non-empty string without '/'")
    reps = head.get("repetitions", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 1000:
        raise CampaignError("[campaign] repetitions must be an integer from 1 to 1000")
    suite = head.get("suite", "quick")
    if not isinstance(suite, str):
        raise CampaignError("[campaign] suite must be a string")
    no_samples = head.get("no_samples", False)
    if not isinstance(no_samples, bool):
        raise CampaignError("[campaign] no_samples must be true or false")
    raw_targets = doc.get("target", [])
    if not isinstance(raw_targets, list) or not raw_targets:
        raise CampaignError("a campaign needs at least one [[target]] with a name and a spec")
    targets: list[CampaignTarget] = []
    for i, t in enumerate(raw_targets, 1):
        if not isinstance(t, dict):
            raise CampaignError(f"[[target]] {i} must be a table")
        spec = t.get("spec")
        tname = t.get("name", spec)
        if not isinstance(spec, str) or not spec:
            raise CampaignError(f"[[target]] {i}: `spec` is required (e.g. qemu:debian-rt)")
        if not isinstance(tname, str) or not tname or "/" in tname:
            raise CampaignError(f"[[target]] {i}: `name` must be a string without '/'")
        options = tuple(
            (str(k), str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in t.items()
            if k not in ("name", "spec")
        )
        targets.append(CampaignTarget(tname, spec, options))
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise CampaignError(f"target names must differ: {', '.join(names)}")
    loads = _strings(head, "loads", "[campaign]") or ["none"]
    if any("/" in ld for ld in loads):
        raise CampaignError("[campaign] loads must not contain '/'")
    return Campaign(
        name=name,
        targets=targets,
        loads=list(dict.fromkeys(loads)),
        cases=_strings(head, "cases", "[campaign]"),
        suite=suite,
        overrides=_strings(head, "set", "[campaign]"),
        repetitions=reps,
        no_samples=no_samples,
    )


def load_campaign(path: Path) -> Campaign:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CampaignError(f"cannot read {path}: {e.strerror or e}") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CampaignError(f"{path}: not valid TOML: {e}") from e
    return parse_campaign(doc, path.stem)


def pending(campaign: Campaign, stored: dict[str, str]) -> list[Cell]:
    """The cells still to run; `stored` maps a cell key to the outcome of its
    newest stored run. A cell whose run was cut short (error) runs again: a
    finding (passed or failed) is kept, an error is not a result."""
    return [c for c in campaign.cells() if stored.get(c.key) in (None, "error")]


def group_runs(campaign: Campaign, runs: list[Run]) -> dict[str, list[Run]]:
    """The stored runs of the campaign by report column, in campaign order;
    for a cell stored more than once (an error, then a retry), the newest."""
    newest: dict[str, Run] = {}
    for run in runs:
        key = run.labels.get(LABEL_CELL)
        if key is not None and (key not in newest or (run.id or 0) > (newest[key].id or 0)):
            newest[key] = run
    out: dict[str, list[Run]] = {g: [] for g in campaign.groups()}
    for cell in campaign.cells():
        found = newest.get(cell.key)
        if found is not None:
            out[cell.group].append(found)
    return out
