"""JIT-AB: the same experiment under two configurations, A and B.

A configuration is a list of settings, each KEY=VALUE:

    load=SPEC          background load (agent --load; docs/loads.md)
    load_cpus=LIST     its CPUs;  load_threads=N  its threads per kind
    pin=on|off         case threads pinned to the measurement CPU (agent --no-pin)
    trace=off|on       kernel-trace recording (`rtbench run --trace`)
    preempt=MODE       PREEMPT_DYNAMIC mode (none, voluntary, full, lazy),
                       switched through debugfs for the run and restored after
    priority=P, cpu=N  the agent's --priority / --cpu
    set:CASE.PARAM=V   a case parameter for this side only (like --set)

The runs interleave (A, B, A, B, ...) so that drifting machine noise hits
both alike. Each run is stored with labels ab=A|B, ab_id, ab_round and
ab_config. The rounds of each side are pooled per series for the figures
A and B and their ratio; the test is over runs (rtbench.analysis.compare:
Welch's t-test on the per-run indicator, on logarithms where it is positive,
each round one observation), and
each row says whether B/A exceeds the spread between the rounds of a side.
With one round per side nothing is significant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtbench.analysis.compare import compare_runs
from rtbench.analysis.pooling import pool
from rtbench.model import Run
from rtbench.run.request import AgentRequest
from rtbench.run.suites import Planned

KEYS = ("load", "load_cpus", "load_threads", "pin", "trace", "preempt", "priority", "cpu")
PREEMPT_MODES = ("none", "voluntary", "full", "lazy")
DEFAULT_INDICATORS = ("p50", "p99", "max")
_ONOFF = ("on", "off")


class ConfigError(ValueError):
    pass


@dataclass
class Config:
    name: str
    settings: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)  # CASE.PARAM=VALUE

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.settings.items()]
        parts += [f"set:{o}" for o in self.overrides]
        return " ".join(parts) or "defaults"

    @property
    def trace(self) -> bool:
        return self.settings.get("trace") == "on"

    @property
    def preempt(self) -> str | None:
        return self.settings.get("preempt")

    def request(
        self, plan: list[Planned], cpu: int | None, priority: int | None
    ) -> AgentRequest:
        """The agent's request of this side: its settings over the command's."""
        s = self.settings
        threads = s.get("load_threads")
        c = s.get("cpu")
        p = s.get("priority")
        return AgentRequest(
            plan,
            priority=int(p) if p is not None else priority,
            cpu=int(c) if c is not None else cpu,
            load=s.get("load"),
            load_cpus=s.get("load_cpus"),
            load_threads=int(threads) if threads is not None else None,
            pin=s.get("pin") != "off",
        )

    def labels(self) -> dict[str, str]:
        out = {"ab": self.name, "ab_config": self.describe()}
        if "load" in self.settings:
            out["load"] = self.settings["load"]
        return out


def _int(key: str, value: str, lo: int, hi: int) -> None:
    try:
        v = int(value)
    except ValueError:
        raise ConfigError(f"{key}={value!r}: an integer is expected") from None
    if not lo <= v <= hi:
        raise ConfigError(f"{key}={v} is out of range {lo}..{hi}")


def parse_config(name: str, items: tuple[str, ...] | list[str]) -> Config:
    """`items` as given to --a / --b; ConfigError names what is allowed."""
    cfg = Config(name)
    for item in items:
        key, sep, value = item.partition("=")
        if key.startswith("set:"):
            target = item[4:]
            if "=" not in target or not target.split("=", 1)[1]:
                raise ConfigError(f"--{name.lower()} {item!r}: write set:CASE.PARAM=VALUE")
            cfg.overrides.append(target)
            continue
        if not sep or not value:
            raise ConfigError(f"--{name.lower()} {item!r}: write KEY=VALUE or set:CASE.PARAM=VALUE")
        if key not in KEYS:
            raise ConfigError(
                f"--{name.lower()} {item!r}: unknown setting {key!r}; settings: "
                f"{', '.join(KEYS)}, set:CASE.PARAM"
            )
        if key in ("pin", "trace") and value not in _ONOFF:
            raise ConfigError(f"{key}={value!r}: write {key}=on or {key}=off")
        if key == "preempt" and value not in PREEMPT_MODES:
            raise ConfigError(f"preempt={value!r}: modes are {', '.join(PREEMPT_MODES)}")
        if key == "priority":
            _int(key, value, 1, 97)
        if key in ("cpu", "load_threads"):
            _int(key, value, 0 if key == "cpu" else 1, 4095 if key == "cpu" else 64)
        cfg.settings[key] = value
    return cfg


# --- comparing ---------------------------------------------------------------


@dataclass
class ABRow:
    case: str
    series: str
    indicator: str
    a: float | None
    b: float | None
    ratio: float | None
    pvalue: float | None
    test: str
    significant: bool
    unstable: list[str]
    # The change exceeds the spread between the rounds of a side (None:
    # one round per side, the spread is unknown).
    beyond_noise: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def compare(a_runs: list[Run], b_runs: list[Run], indicators: tuple[str, ...]) -> list[ABRow]:
    """Per series and indicator: A, B, B/A and the test of the two pools."""
    a, b = pool(a_runs), pool(b_runs)
    rows: list[ABRow] = []
    for ind in indicators:
        for r in compare_runs([a, b], ind, members=[a_runs, b_runs]).rows:
            rows.append(
                ABRow(
                    case=r.case,
                    series=r.label,
                    indicator=ind,
                    a=r.values[0],
                    b=r.values[1] if len(r.values) > 1 else None,
                    ratio=r.ratios[1] if len(r.ratios) > 1 else None,
                    pvalue=r.pvalue,
                    test=r.test,
                    significant=r.significant,
                    beyond_noise=r.beyond_noise,
                    unstable=[
                        f"{side}: {w}" for side, w in zip("AB", r.why_unstable, strict=False) if w
                    ],
                )
            )
    order = {ind: i for i, ind in enumerate(indicators)}
    rows.sort(key=lambda x: (x.case, x.series, order[x.indicator]))
    return rows
