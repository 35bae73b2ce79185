"""`rtbench kernel`: the kernels QEMU targets boot."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from rtbench.commands.common import busy, fail, out
from rtbench.targets import kernels


@click.group()
def kernel() -> None:
    """Kernels for QEMU targets (qemu:debian-rt, qemu:debian-generic-6.12,
    qemu:debian-rt-arm64...)."""


@kernel.command()
@click.argument("names", nargs=-1, required=True, type=click.Choice(sorted(kernels.KNOWN)))
def fetch(names: tuple[str, ...]) -> None:
    """Download Debian's kernel package NAME (apt-get download) into the cache.

    debian-rt and debian-generic are Debian 12's 6.1 kernels; NAME-6.12 the
    newest 6.12 package apt offers; NAME-arm64 the arm64 ones (apt knows them
    after `dpkg --add-architecture arm64 && apt-get update`). Any other
    x86_64 or arm64 kernel boots too: give its image as qemu:PATH.
    """
    for name in names:
        try:
            with busy(f"fetching {name}"):
                k = kernels.fetch(name)
        except kernels.KernelError as e:
            fail(str(e))
        except OSError as e:
            fail(f"cannot write the kernel cache {kernels.cache_root()}: {e.strerror}")
        model = f"{k.preempt or '?'}, HZ={k.hz or '?'}" + (", timerlat" if k.timerlat else "")
        out.print(f"{name}: {k.package} {k.version} (kernel {k.release}, {model}) at {k.image}")


@kernel.command(name="list")
def list_kernels() -> None:
    """The kernels already fetched, with their preemption model and HZ (from
    their config) and whether they have the timerlat tracer."""
    t = Table(header_style="bold")
    for col in ("name", "arch", "release", "preempt", "HZ", "timerlat", "package", "version"):
        t.add_column(col)
    for name, spec in kernels.KNOWN.items():
        k = kernels.cached(name)
        if k is None:
            arch = spec.qemu_arch
            missing = Text("not fetched", style="dim")
            t.add_row(name, arch, missing, "", "", "", "", "")
        else:
            hz = str(k.hz) if k.hz else "?"
            lat = "yes" if k.timerlat else "no"
            t.add_row(name, k.arch, k.release, k.preempt or "?", hz, lat, k.package, k.version)
    out.print(t)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(kernel)
